"""Snapshots of a module tree's parameters and buffers: what a call restores when
its forward pass fails (or leaks a tracer), the set of modules a call is running
(`_SCOPE`), and the guard a jit trace keeps to warn when captured state changes.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> m = nn.Linear(2, 1)
    >>> [n for n, _ in _state_items(m)]
    ['weight', 'bias']
"""
from __future__ import annotations

import contextvars
import weakref
from collections import OrderedDict

from ..fx.core import Tracer

_SCOPE: contextvars.ContextVar = contextvars.ContextVar("ember_nn_state_scope", default=None)


class _StateGuard:
    """The concrete parameters and buffers of a module as a jit trace read them (see
    `transforms.captured_state`): `changed()` once any has been rebound since."""
    __slots__ = ("ref", "values", "name")

    def __init__(self, module):
        self.ref = weakref.ref(module)
        # values held, not ids: a freed array's id can be reused by its replacement
        self.values = [(n, v) for n, v in _state_items(module) if not isinstance(v, Tracer)]
        self.name = type(module).__name__

    def _changed_names(self):
        m = self.ref()
        if m is None:
            return []
        cur = dict(_state_items(m))
        return [n for n, v in self.values if cur.get(n) is not v]

    def changed(self):
        return bool(self._changed_names())

    def describe(self):
        names = self._changed_names()
        more = f" and {len(names) - 3} more" if len(names) > 3 else ""
        return f"the state of {self.name} ({', '.join(names[:3])}{more})"



def _state_items(root):
    for mname, m in root.named_modules():
        for kind, reg in (("param", m._parameters), ("buffer", m._buffers)):
            for n, v in reg.items():
                yield (f"{mname}.{n}" if mname else n), v


def _scope_ids(root, outer):
    ids = frozenset(id(m) for _, m in root.named_modules())
    return ids if outer is None else ids | outer


def _snapshot(root):
    return [(m, OrderedDict(m._parameters), OrderedDict(m._buffers)) for _, m in root.named_modules()]


def _restore(snapshot):
    for m, params, buffers in snapshot:
        m._parameters.clear()
        m._parameters.update(params)
        m._buffers.clear()
        m._buffers.update(buffers)
