"""numpy's index tricks: `mgrid` / `ogrid` (dense and open grids from slices), `r_` / `c_`
(concatenation by index syntax), and `s_` / `index_exp` (index tuples). The slices' bounds
fix the output shape, so they must be concrete.

Example:
    >>> import ember.numpy as enp
    >>> enp.mgrid[0:2, 0:3].shape, enp.r_[1:3, 7].tolist()
    ((2, 2, 3), [1, 2, 7])
"""
from __future__ import annotations

import numpy as np

from ..fx.core import get_aval
from ._core import ensure_array
from ._util import concrete

__all__ = ["mgrid", "ogrid", "r_", "c_", "s_", "index_exp"]

# index expressions are plain Python tuples of slices: numpy's helpers are exactly right
s_ = np.s_
index_exp = np.index_exp


def _bound(v, op, what, default):
    if v is None:
        return default
    c = concrete(v, op, f"the slice {what} fixes the output shape, so it must be static")
    return c.item() if np.ndim(c) == 0 else c


def _grid_1d(s, op):
    """`arange(start, stop, step)`, or `linspace(start, stop, |step|)` for a complex step."""
    from ._creation import arange, linspace
    start = _bound(s.start, op, "start", 0)
    stop = _bound(s.stop, op, "stop", None)
    step = _bound(s.step, op, "step", 1)
    if stop is None:
        raise ValueError(f"{op}: every slice needs a stop, got {s!r}")
    if isinstance(step, complex) or np.iscomplexobj(step):
        return linspace(start, stop, int(abs(step)))
    return arange(start, stop, step)


class _Grid:
    def __init__(self, sparse, op):
        self.sparse, self.op = sparse, op

    def __getitem__(self, key):
        from ._creation import meshgrid
        from ._manipulation import stack
        if isinstance(key, slice):
            return _grid_1d(key, self.op)
        if not isinstance(key, tuple) or not all(isinstance(k, slice) for k in key):
            raise TypeError(f"{self.op}: index with slices, e.g. {self.op}[0:3, 0:4], got "
                            f"{key!r}")
        grids = [_grid_1d(k, self.op) for k in key]
        if not grids:
            return [] if self.sparse else ensure_array(np.zeros((0,), np.int32))
        from ._core import promote_dtypes
        grids = [ensure_array(g) for g in promote_dtypes(self.op, *grids)]
        out = meshgrid(*grids, indexing="ij", sparse=self.sparse)
        return list(out) if self.sparse else stack(out, axis=0)

    def __repr__(self):
        return f"ember.numpy.{self.op}"


mgrid = _Grid(False, "mgrid")
mgrid.__doc__ = """A dense multi-dimensional grid from slices (numpy's mgrid): one array per
slice, stacked on a new first axis; a complex step `5j` means 5 points, end included.

Example:
    >>> import ember.numpy as enp
    >>> enp.mgrid[0:2, 0:2].tolist()
    [[[0, 0], [1, 1]], [[0, 1], [0, 1]]]
"""

ogrid = _Grid(True, "ogrid")
ogrid.__doc__ = """An open grid from slices (numpy's ogrid): a list of arrays that broadcast
against each other.

Example:
    >>> import ember.numpy as enp
    >>> [g.shape for g in enp.ogrid[0:2, 0:3]]
    [(2, 1), (1, 3)]
"""


class _AxisConcat:
    def __init__(self, axis, ndmin, trans1d, op):
        self.axis, self.ndmin, self.trans1d, self.op = axis, ndmin, trans1d, op

    def __getitem__(self, key):
        from ._creation import asarray
        from ._manipulation import concatenate, expand_dims, transpose
        from ._core import promote_dtypes
        items = key if isinstance(key, tuple) else (key,)
        params = [self.axis, self.ndmin, self.trans1d, -1]
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive == "r":
                params[-1] = 0
            elif directive == "c":
                params[-1] = 1
            else:
                vec = directive.split(",")
                vec = vec + params[len(vec):] if len(vec) < 4 else vec[:3] + [params[-1]]
                try:
                    params = [int(v) for v in vec]
                except ValueError:
                    raise ValueError(f"{self.op}: could not understand the directive "
                                     f"{directive!r} (expected 'axis[,ndmin[,trans1d]]', "
                                     f"'r' or 'c')") from None
        axis, ndmin, trans1d, matrix = params
        out = []
        for item in items:
            if isinstance(item, slice):
                obj, item_ndim = _grid_1d(item, self.op), 0
            elif isinstance(item, str):
                raise ValueError(f"{self.op}: a string directive must come first, got {item!r}")
            else:
                obj = asarray(item)
                item_ndim = get_aval(obj).ndim
            nd = get_aval(obj).ndim
            if nd < ndmin:
                obj = obj.reshape((1,) * (ndmin - nd) + get_aval(obj).shape)
            if trans1d != -1 and ndmin - item_ndim > 0:
                # numpy moves the item's own axes to position trans1d (JAX's formula)
                order = tuple(range(ndmin))
                shift = ndmin - abs(ndmin + trans1d + 1) % ndmin
                obj = transpose(obj, order[shift:] + order[:shift])
            out.append(obj)
        if not out:
            return ensure_array(np.zeros((0,), np.float32))
        out = [ensure_array(o) for o in promote_dtypes(self.op, *out)]
        res = concatenate(out, axis=axis)
        if matrix != -1 and get_aval(res).ndim == 1:
            res = expand_dims(res, matrix)
        return res

    def __len__(self):
        return 0

    def __repr__(self):
        return f"ember.numpy.{self.op}"


r_ = _AxisConcat(0, 1, -1, "r_")
r_.__doc__ = """Concatenation along the first axis by index syntax (numpy's r_): slices
become aranges (a complex step: linspace), arrays and scalars are joined; a leading string
'axis,ndmin,trans1d' changes the axis, 'r' / 'c' give a row / column matrix.

Example:
    >>> import ember.numpy as enp
    >>> enp.r_[enp.asarray([1, 2]), 0, 0:2].tolist()
    [1, 2, 0, 0, 1]
"""

c_ = _AxisConcat(-1, 2, 0, "c_")
c_.__doc__ = """Concatenation along the last axis with 1-D items as columns (numpy's c_).

Example:
    >>> import ember.numpy as enp
    >>> enp.c_[enp.asarray([1, 2]), enp.asarray([3, 4])].tolist()
    [[1, 3], [2, 4]]
"""
