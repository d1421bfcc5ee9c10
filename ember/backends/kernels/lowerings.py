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

import numpy as np

from ... import dtypes as _dt
from ...fx.core import PRIMITIVES, Primitive
from .kinds import is_elementwise


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


def renders(eq, native_dtypes, lowerings, products, elementwise=None) -> bool:
    """The checks every renderer's `supports(eq)` shares: every value of a native
    dtype; `products(eq)` for dot_general / convolution (the backend's gemm);
    scatters that are not half precision, bool or uint64-indexed (half precision
    accumulates in float32 in the reference, bool adds are ors); gathers with
    signed indices (int64 is the index type: uint64 starts beyond 2^63 would wrap);
    elementwise primitives with a lowering in `lowerings` (and `elementwise(prim)`,
    when given); and the movement, identity and reduction kinds the scheduler
    renders itself.

    Example:
        >>> import ember, numpy as np
        >>> from ember import lax
        >>> g = ember.make_graph(lambda x: lax.exp(x))(np.ones(3, np.float32))
        >>> table = LoweringTable("demo")
        >>> renders(g.equations[0], {np.dtype(np.float32)}, table, lambda eq: True)
        False
    """
    for v in list(eq.inputs) + list(eq.outputs):
        if v.aval.dtype not in native_dtypes:
            return False
    prim = eq.prim
    if prim.name in ("dot_general", "conv_general_dilated"):
        return products(eq)
    if prim.kind == "scatter":
        d = np.dtype(eq.outputs[0].aval.dtype)
        return (eq.inputs[1].aval.dtype != np.dtype(np.uint64) and d != _dt.bool_
                and d not in (_dt.float16, _dt.bfloat16))
    if prim.name == "gather":
        return eq.inputs[1].aval.dtype != np.dtype(np.uint64)
    if is_elementwise(prim):
        return prim in lowerings and (elementwise is None or elementwise(prim))
    return prim.kind in ("identity", "movement", "reduction")
