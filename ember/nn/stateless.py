"""`functional_call`: run a module with other parameters and buffers swapped in
(restored in a `finally` block, so transforms never leave a tracer in a module).

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> m = nn.Linear(2, 1)
    >>> out, _ = functional_call(m, {"weight": enp.zeros((1, 2))}, enp.ones((1, 2)))
    >>> out.tolist() == [m.bias.tolist()]
    True
"""
from __future__ import annotations

import contextlib
from collections import OrderedDict

from .. import numpy as enp
from ._names import flatten_names
from ._rng_streams import _STREAM, _Stream
from ._snapshots import _SCOPE, _restore, _scope_ids, _snapshot, _state_items
from .hooks import call_forward as _call_forward
from .module import Module, _is_array


def _merge_state(model, state):
    """`state`: a dict (nested or dotted) or a tuple/list of dicts -> {dotted name: value},
    checked against the model's parameter and buffer names."""
    parts = state if isinstance(state, (tuple, list)) else (state,)
    flat = OrderedDict()
    for part in parts:
        if part is None:
            continue
        if not isinstance(part, dict):
            raise TypeError(f"functional_call: state must be a dict of arrays (nested or with "
                            f"dotted names) or a tuple of such dicts, got {type(part).__name__}")
        for k, v in flatten_names(part).items():
            if k in flat:
                raise ValueError(f"functional_call: {k!r} is given more than once")
            flat[k] = v
    known = {n for n, _ in _state_items(model)}
    unknown = [k for k in flat if k not in known]
    if unknown:
        raise KeyError(f"functional_call: {type(model).__name__} has no parameter or buffer named "
                       f"{', '.join(repr(k) for k in unknown)}")
    return flat


@contextlib.contextmanager
def _swapped(model, flat, rng=None):
    """Temporarily install `flat` values in the model (restored in finally)."""
    flat = model._expand_tied(flat, "functional_call")  # a tie holds in the swapped state
    snapshot = _snapshot(model)
    scope_token = _SCOPE.set(_scope_ids(model, _SCOPE.get()))
    stream_token = _STREAM.set(_Stream(rng, source=model) if rng is not None else _Stream(source=model))
    try:
        for k, v in flat.items():
            m, leaf = model._slot(k)
            reg = m._parameters if leaf in m._parameters else m._buffers
            if v is not None and not _is_array(v):
                v = enp.asarray(v)
            reg[leaf] = v
        yield
    finally:
        _STREAM.reset(stream_token)
        _SCOPE.reset(scope_token)
        _restore(snapshot)


def _refuse_uninitialized(model) -> None:
    # A lazy layer would create its parameters inside the swap, and the restore in
    # `finally` would drop them again, leaving a half-built layer behind.
    for name, m in model.named_modules():
        if getattr(m, "has_uninitialized_params", None) is not None and "_lazy_state" in m.__dict__:
            where = f" (at {name!r})" if name else ""
            raise RuntimeError(
                f"functional_call: {type(m).__name__}{where} has not created its parameters yet; "
                f"lazy layers take their sizes from the first input, so run one forward on a "
                f"concrete input first, e.g. model(x)")


def functional_call(model: Module, params_and_buffers, *args, rng=None, **kwargs):
    """Run `model(*args, **kwargs)` with the given parameters/buffers swapped in;
    returns `(outputs, buffers)` where `buffers` is the nested dict of the model's
    buffers after the call (BatchNorm statistics updated in training mode).

    `params_and_buffers` is a dict (nested like `parameters()`, or with dotted names)
    or a tuple of dicts, e.g. `(params, buffers)`; entries not given keep the module's
    values.  `rng` is the key for dropout.  The module is restored afterwards, so this
    is safe under `grad`, `vmap` and `jit`.  Values not passed are read from the module
    while tracing: under `ember.jit` they become constants of the compiled program, so
    pass everything that changes between calls (`nn.compile_forward` does).

    Example:
        >>> import ember, ember.numpy as enp
        >>> from ember import nn
        >>> m = nn.Linear(2, 1)
        >>> def loss(p, x):
        ...     out, _ = nn.functional_call(m, p, x)
        ...     return (out ** 2).sum()
        >>> g = ember.grad(loss)(m.parameters(), enp.ones((3, 2)))
        >>> sorted(g)
        ['bias', 'weight']
    """
    if not isinstance(model, Module):
        raise TypeError(f"functional_call needs an nn.Module, got {type(model).__name__}")
    _refuse_uninitialized(model)
    flat = _merge_state(model, params_and_buffers)
    with _swapped(model, flat, rng):
        out = _call_forward(model, args, kwargs)  # the model's own hooks run, as in torch.func
        new_buffers = model.buffers()
    return out, new_buffers
