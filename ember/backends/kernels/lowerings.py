"""The table a native backend keeps of its lowerings, keyed by primitive object
(one mechanism for every renderer: `backends/llvm/ops.py`, `backends/cuda/ops.py`).

Example:
    >>> from ember.fx.core import Primitive
    >>> table = LoweringTable("demo")
    >>> p = Primitive("demo_twice")
    >>> @table.register(p)
    ... def _twice(em, vals, in_dt, dtype, params):
    ...     return vals[0] * 2
    >>> table.of("demo_twice") is _twice, p in table
    (True, True)
    >>> table.pop(p) is _twice
    True
"""
from __future__ import annotations

from typing import Callable

from ...fx.core import PRIMITIVES, Primitive


class LoweringTable(dict):
    """primitive -> lowering function of one backend (a dict, plus registration by
    decorator and lookup by the primitive name a kernel expression carries)."""

    def __init__(self, backend: str):
        super().__init__()
        self.backend = backend

    def register(self, *prims: Primitive):
        """Decorator: the decorated function lowers each of `prims`."""
        def register(fn):
            for p in prims:
                self[p] = fn
            return fn
        return register

    def of(self, name: str) -> Callable:
        """The lowering of the primitive named `name`; a KeyError if this backend has none
        (its `supports` should have sent the equation to a library step)."""
        fn = self.get(PRIMITIVES.get(name))
        if fn is None:
            raise KeyError(f"no {self.backend} lowering of the primitive {name!r}; supports() should "
                           "have sent it to a library step")
        return fn
