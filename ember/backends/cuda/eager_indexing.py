"""Eager rule of `gather` over an array module `xp`: the reference impl's own
`gather_windows` (`fx/prims/indexing.py`: the index grid, starts clamped so
windows fit, batching dims as aranges, a validity mask for `mode="fill"`, one
fancy index into the operand) run with CuPy, so `x[idx]`, `take`, `take_along_axis` and embedding
lookups stay on the GPU.  Scatters run compiled (their duplicate-index order is
the executable's business).

Example:
    >>> import numpy as np, ember, ember.numpy as enp
    >>> from ember.fx.prims.indexing import gather_p
    >>> from .eager import run_rule
    >>> g = ember.make_graph(lambda x, i: x[i])(enp.arange(5.0), enp.array([4, 0]))
    >>> eq = [e for e in g.equations if e.prim is gather_p][0]
    >>> idx = np.array([[4], [0]], np.int32)
    >>> run_rule(np, gather_p, [np.arange(5.0, dtype=np.float32), idx], eq.params).tolist()
    [4.0, 0.0]
"""
from __future__ import annotations

from ...fx.prims import indexing as I
from .eager import eager_rule


@eager_rule(I.gather_p)
def _gather(xp, operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value,
            indices_are_sorted, unique_indices):
    out = I.gather_windows(xp, operand, indices, dimension_numbers, slice_sizes, mode, fill_value)
    return out.astype(operand.dtype, copy=False)
