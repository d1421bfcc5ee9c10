"""gradient: numpy's second-order finite differences of sampled values (central inside,
first- or second-order one-sided at the edges; uniform spacings or coordinate arrays).

Example:
    >>> import ember.numpy as enp
    >>> enp.gradient(enp.asarray([1.0, 4.0, 9.0, 16.0])).tolist()
    [3.0, 4.0, 6.0, 7.0]
"""
from __future__ import annotations

import operator

from ..fx.core import get_aval
from ._core import ensure_array, promote_args
from ._util import canonicalize_axes

__all__ = ["gradient"]


def _along(f, spacing, edge_order, n):
    """The derivative along axis 0 of f (n samples), spacing a scalar or coordinates."""
    from ._manipulation import concatenate
    if get_aval(ensure_array(spacing)).ndim == 0:
        h = spacing
        mid = (f[2:] - f[:-2]) / (2.0 * h)
        if edge_order == 1:
            lo, hi = (f[1] - f[0]) / h, (f[-1] - f[-2]) / h
        else:
            lo = (-1.5 * f[0] + 2.0 * f[1] - 0.5 * f[2]) / h
            hi = (0.5 * f[-3] - 2.0 * f[-2] + 1.5 * f[-1]) / h
    else:
        x = ensure_array(spacing)
        dx = x[1:] - x[:-1]
        bshape = (-1,) + (1,) * (get_aval(f).ndim - 1)
        d1, d2 = dx[:-1].reshape(bshape), dx[1:].reshape(bshape)
        mid = (-d2 / (d1 * (d1 + d2)) * f[:-2] + (d2 - d1) / (d1 * d2) * f[1:-1]
               + d1 / (d2 * (d1 + d2)) * f[2:])
        if edge_order == 1:
            lo, hi = (f[1] - f[0]) / dx[0], (f[-1] - f[-2]) / dx[-1]
        else:
            a1, a2 = dx[0], dx[1]
            lo = (-(2.0 * a1 + a2) / (a1 * (a1 + a2)) * f[0] + (a1 + a2) / (a1 * a2) * f[1]
                  - a1 / (a2 * (a1 + a2)) * f[2])
            b1, b2 = dx[-2], dx[-1]
            hi = (b2 / (b1 * (b1 + b2)) * f[-3] - (b1 + b2) / (b1 * b2) * f[-2]
                  + (2.0 * b2 + b1) / (b2 * (b1 + b2)) * f[-1])
    return concatenate([lo[None], mid, hi[None]], axis=0)


def gradient(f, *varargs, axis=None, edge_order=1):
    """Derivatives of `f` sampled on a grid, one array per axis (numpy's gradient): a single
    array when there is one axis, else a tuple. `varargs` gives the spacing: nothing (1),
    one scalar for every axis, or one scalar or 1-D coordinate array per axis.

    Example:
        >>> import ember.numpy as enp
        >>> gy, gx = enp.gradient(enp.asarray([[1.0, 2.0, 4.0], [2.0, 5.0, 8.0]]))
        >>> gy.tolist(), gx.tolist()
        ([[1.0, 3.0, 4.0], [1.0, 3.0, 4.0]], [[1.0, 1.5, 2.0], [3.0, 3.0, 3.0]])
    """
    from ._manipulation import moveaxis
    f = ensure_array(f)
    (f,) = promote_args("gradient", f, to_inexact=True)
    a = get_aval(f)
    axes = tuple(range(a.ndim)) if axis is None else canonicalize_axes(
        axis if isinstance(axis, (tuple, list)) else (axis,), a.ndim, "gradient")
    edge_order = operator.index(edge_order)
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order}")
    if len(varargs) == 0:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1 and get_aval(ensure_array(varargs[0])).ndim == 0:
        spacings = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise TypeError(f"gradient: expected 0, 1 or {len(axes)} spacings (one per axis), got "
                        f"{len(varargs)}")
    out = []
    for ax, h in zip(axes, spacings):
        n = a.shape[ax]
        if n < edge_order + 1:
            raise ValueError(f"gradient: axis {ax} has {n} samples; edge_order={edge_order} "
                             f"needs at least {edge_order + 1}")
        ha = ensure_array(h)
        if get_aval(ha).ndim == 1:
            if get_aval(ha).shape[0] != n:
                raise ValueError(f"gradient: the coordinates for axis {ax} must have its length "
                                 f"{n}, got {get_aval(ha).str_user()}")
            (ha,) = promote_args("gradient", ha, to_inexact=True)
            h = ha
        elif get_aval(ha).ndim != 0:
            raise ValueError(f"gradient: a spacing must be a scalar or 1-D coordinates, got "
                             f"{get_aval(ha).str_user()}")
        g = _along(moveaxis(f, ax, 0), h, edge_order, n)
        out.append(moveaxis(g, 0, ax))
    return out[0] if len(out) == 1 else tuple(out)
