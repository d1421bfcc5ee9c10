"""histogram, histogram2d and histogram_bin_edges: bin indices by searchsorted on the edges
and counts by a length-static bincount, so they stage under jit (values outside the range
are dropped) and the weighted counts are differentiable in the weights.

Example:
    >>> import ember.numpy as enp
    >>> counts, edges = enp.histogram(enp.asarray([0.0, 1.0, 1.0, 3.0]), bins=3)
    >>> counts.tolist(), edges.tolist()
    ([1, 2, 1], [0.0, 1.0, 2.0, 3.0])
"""
from __future__ import annotations

import operator

from .. import dtypes as _dt
from .. import lax
from ..fx.core import get_aval
from ._core import ensure_array, promote_args, promote_dtypes

__all__ = ["histogram", "histogram2d", "histogramdd", "histogram_bin_edges"]


def _edges(a, bins, range, op, what="bins"):  # noqa: A002 - numpy's keyword
    from ._creation import linspace
    from ._reductions import max as amax, min as amin
    from ._searching import where
    if isinstance(bins, str):
        raise TypeError(f"{op}: bin-estimator names ({bins!r}) need the data's values to choose "
                        "the number of bins; pass an integer or an array of edges")
    if hasattr(bins, "shape") or isinstance(bins, (list, tuple)):
        e = ensure_array(bins)
        if get_aval(e).ndim != 1 or get_aval(e).shape[0] < 2:
            raise ValueError(f"{op}: {what} as edges must be a 1-D array of at least 2 "
                             f"increasing values, got {get_aval(e).str_user()}")
        (e,) = promote_args(op, e, to_inexact=True)
        return e
    try:
        n = operator.index(bins)
    except TypeError:
        raise TypeError(f"{op}: {what} must be an integer or a 1-D array of edges, got "
                        f"{type(bins).__name__}") from None
    if n < 1:
        raise ValueError(f"{op}: {what} must be a positive integer, got {n}")
    d = get_aval(a).dtype
    if range is None:
        if get_aval(a).size == 0:
            lo, hi = ensure_array(0.0).astype(d), ensure_array(1.0).astype(d)
        else:
            lo, hi = amin(a), amax(a)
    else:
        lo, hi = range
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and not lo <= hi:
            raise ValueError(f"{op}: range must be (min, max) with min <= max, got {range}")
        lo, hi = ensure_array(lo).astype(d), ensure_array(hi).astype(d)
    # numpy widens an empty range by 0.5 each side
    same = lo == hi
    lo, hi = where(same, lo - 0.5, lo), where(same, hi + 0.5, hi)
    return linspace(lo, hi, n + 1)


def _bin_index(a, edges):
    """Index of the bin holding each value; len(edges) - 1 for values outside."""
    from ._searching import searchsorted, where
    nb = get_aval(edges).shape[0] - 1
    i = searchsorted(edges, a, side="right") - 1
    last = edges[nb]
    i = where(a == last, nb - 1, i)  # the last bin is closed on the right
    inside = (a >= edges[0]) & (a <= last)
    return where(inside, i, nb).astype(_dt.int32)


def _count(idx, weights, length):
    from ._searching import bincount
    return bincount(idx, weights, length=length)


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
    """The edges `histogram` would use (`bins + 1` evenly spaced over `range`, by default the
    data's min and max).

    Example:
        >>> import ember.numpy as enp
        >>> enp.histogram_bin_edges(enp.asarray([0.0, 4.0]), bins=2).tolist()
        [0.0, 2.0, 4.0]
    """
    a = ensure_array(a)
    (a,) = promote_args("histogram_bin_edges", a, to_inexact=True)
    return _edges(lax.reshape(a, (get_aval(a).size,)), bins, range, "histogram_bin_edges")


def histogram(a, bins=10, range=None, density=None, weights=None):  # noqa: A002
    """Counts of `a` (flattened) in each bin, and the bin edges (numpy's histogram): bins are
    half-open `[e_i, e_i+1)` except the last, which includes its right edge; values outside
    the edges are not counted. `density=True` normalises to unit integral. With an integer
    `bins` the output shape is static, so it works under jit and vmap.

    Example:
        >>> import ember.numpy as enp
        >>> h, e = enp.histogram(enp.asarray([1.0, 2.0, 2.5]), bins=[0.0, 2.0, 3.0])
        >>> h.tolist()
        [1, 2]
    """
    from ._utility import diff
    a = ensure_array(a)
    (af,) = promote_args("histogram", a, to_inexact=True)
    af = lax.reshape(af, (get_aval(af).size,))
    edges = _edges(af, bins, range, "histogram")
    if get_aval(edges).dtype != get_aval(af).dtype:
        af, edges = (ensure_array(v) for v in promote_dtypes("histogram", af, edges))
    nb = get_aval(edges).shape[0] - 1
    if weights is not None:
        weights = ensure_array(weights)
        if get_aval(weights).shape != get_aval(a).shape:
            raise ValueError(f"histogram: weights must have the shape of a, got "
                             f"{get_aval(weights).str_user()} for a {get_aval(a).str_user()}")
        weights = lax.reshape(weights, (get_aval(weights).size,))
    counts = _count(_bin_index(af, edges), weights, nb + 1)[:nb]
    if density:
        c = counts.astype(get_aval(edges).dtype) if _dt.kind(counts.dtype) in "biu" else counts
        counts = c / diff(edges) / c.sum()
    return counts, edges


def histogram2d(x, y, bins=10, range=None, density=None, weights=None):  # noqa: A002
    """The 2-D histogram of points (x[i], y[i]) (numpy's histogram2d): returns
    `(H, xedges, yedges)` with `H[i, j]` counting points in x-bin i and y-bin j. `bins` is an
    int, a pair of ints, an array of edges or a pair of edge arrays; `range` is
    `[[xmin, xmax], [ymin, ymax]]`.

    Example:
        >>> import ember.numpy as enp
        >>> H, xe, ye = enp.histogram2d(enp.asarray([0.0, 1.0]), enp.asarray([0.0, 1.0]), bins=2)
        >>> H.tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    from ._manipulation import reshape
    from ._utility import diff
    x, y = ensure_array(x), ensure_array(y)
    if get_aval(x).ndim != 1 or get_aval(x).shape != get_aval(y).shape:
        raise ValueError(f"histogram2d: x and y must be 1-D of equal length, got "
                         f"{get_aval(x).str_user()} and {get_aval(y).str_user()}")
    x, y = promote_args("histogram2d", x, y, to_inexact=True)
    # numpy's rule: a length-2 `bins` is one entry per axis, anything else is shared
    if isinstance(bins, (list, tuple)) and len(bins) == 2:
        bx, by = bins
    else:
        bx = by = bins
    rx, ry = (None, None) if range is None else range
    ex, ey = _edges(x, bx, rx, "histogram2d", "bins[0]"), _edges(y, by, ry, "histogram2d", "bins[1]")
    nx, ny = get_aval(ex).shape[0] - 1, get_aval(ey).shape[0] - 1
    ix, iy = _bin_index(x, ex), _bin_index(y, ey)
    from ._searching import where
    flat = where((ix < nx) & (iy < ny), ix * ny + iy, nx * ny).astype(_dt.int32)
    w = None if weights is None else ensure_array(weights)
    if w is not None and get_aval(w).shape != get_aval(x).shape:
        raise ValueError(f"histogram2d: weights must have the shape of x, got "
                         f"{get_aval(w).str_user()} for x {get_aval(x).str_user()}")
    counts = _count(flat, w, nx * ny + 1)[:nx * ny]
    d = get_aval(ex).dtype
    H = reshape(counts.astype(d) if w is None else counts, (nx, ny))
    if density:
        area = diff(ex)[:, None] * diff(ey)[None, :]
        H = H / area / H.sum()
    return H, ex, ey


def histogramdd(sample, bins=10, range=None, density=None, weights=None):  # noqa: A002
    """The D-dimensional histogram of the rows of `sample` (an (N, D) array; numpy's
    histogramdd): returns `(H, edges)` with `H` of shape (nbins_0, ..., nbins_{D-1}) and
    a list of D edge arrays. `bins` is an int, a sequence of D ints or edge arrays; `range`
    a sequence of D (min, max) pairs (or None entries). Bin counts and edges are static, so
    it jits when the ranges or edges are given.

    Example:
        >>> import ember.numpy as enp
        >>> H, edges = enp.histogramdd(enp.asarray([[0.0, 0.0], [1.0, 1.0]]), bins=2)
        >>> H.tolist(), len(edges)
        ([[1.0, 0.0], [0.0, 1.0]], 2)
    """
    import builtins
    import numpy as np
    from ._manipulation import reshape
    from ._searching import where
    from ._utility import diff
    builtins_range = builtins.range  # `range` is numpy's keyword here
    s = ensure_array(sample)
    if get_aval(s).ndim == 1:
        s = reshape(s, (get_aval(s).shape[0], 1))
    if get_aval(s).ndim != 2:
        raise ValueError(f"histogramdd: sample must be an (N, D) array, got "
                         f"{get_aval(s).str_user()}")
    (s,) = promote_args("histogramdd", s, to_inexact=True)
    n, D = get_aval(s).shape
    if isinstance(bins, (int, np.integer)):
        bins = [bins] * D
    elif len(bins) != D:
        raise ValueError(f"histogramdd: bins must be an int or have one entry per dimension "
                         f"(D = {D}), got {len(bins)} entries")
    if range is None:
        range = [None] * D  # noqa: A001
    elif len(range) != D:
        raise ValueError(f"histogramdd: range must have one (min, max) pair per dimension "
                         f"(D = {D}), got {len(range)}")
    edges = [_edges(s[:, i], bins[i], range[i], "histogramdd", f"bins[{i}]") for i in
             builtins_range(D)]
    nb = [get_aval(e).shape[0] - 1 for e in edges]
    total = int(np.prod(nb, dtype=np.int64))
    flat, inside = None, None
    for i in builtins_range(D):
        idx = _bin_index(s[:, i], edges[i])
        ok = idx < nb[i]
        flat = idx if flat is None else flat * nb[i] + idx
        inside = ok if inside is None else inside & ok
    w = None if weights is None else ensure_array(weights)
    if w is not None and get_aval(w).shape != (n,):
        raise ValueError(f"histogramdd: weights must have one entry per sample row ({n}), got "
                         f"{get_aval(w).str_user()}")
    if D == 0:
        raise ValueError("histogramdd: sample needs at least one dimension (D >= 1)")
    # out-of-range points go to one extra bin that is dropped
    flat = where(inside, flat, total).astype(_dt.int32)
    counts = _count(flat, w, total + 1)[:total]
    d = get_aval(edges[0]).dtype
    H = reshape(counts.astype(d) if w is None else counts, tuple(nb))
    if density:
        vol = None
        for i in builtins_range(D):
            widths = reshape(diff(edges[i]), tuple(nb[i] if j == i else 1 for j in
                                                   builtins_range(D)))
            vol = widths if vol is None else vol * widths
        H = H / vol / H.sum()
    return H, edges
