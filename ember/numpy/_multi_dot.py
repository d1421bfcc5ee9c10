"""linalg.multi_dot: a chain of matrix products in the cheapest order (numpy's dynamic
programme over the static shapes).

Example:
    >>> import ember.numpy as enp
    >>> enp.linalg.multi_dot([enp.ones((2, 3)), enp.ones((3, 4)), enp.ones(4)]).tolist()
    [12.0, 12.0]
"""
from __future__ import annotations

from ..fx.core import get_aval
from ._core import ensure_array

__all__ = ["multi_dot"]


def _order(dims):
    """split[i][j]: where the cheapest bracketing of matrices i..j splits (i..k)(k+1..j)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            best = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if best is None or c < best:
                    best, split[i][j] = c, k
            cost[i][j] = best
    return split


def multi_dot(arrays, *, out=None):
    """`arrays[0] @ arrays[1] @ ...`, multiplied in the order with the fewest flops; the
    first may be 1-D (a row) and the last 1-D (a column), as in numpy.

    Example:
        >>> import ember.numpy as enp
        >>> a, b, c = enp.ones((10, 2)), enp.ones((2, 10)), enp.ones((10, 1))
        >>> enp.linalg.multi_dot([a, b, c]).shape
        (10, 1)
    """
    from ._linear import matmul
    if out is not None:
        raise TypeError("multi_dot: ember arrays are immutable, so out= is not supported; "
                        "use the returned array")
    arrays = [ensure_array(a) for a in arrays]
    if len(arrays) < 2:
        raise ValueError(f"multi_dot needs at least two arrays, got {len(arrays)}")
    if len(arrays) == 2:
        return matmul(arrays[0], arrays[1])
    first_vec = get_aval(arrays[0]).ndim == 1
    last_vec = get_aval(arrays[-1]).ndim == 1
    if first_vec:
        arrays[0] = arrays[0][None, :]
    if last_vec:
        arrays[-1] = arrays[-1][:, None]
    for i, a in enumerate(arrays):
        if get_aval(a).ndim != 2:
            raise ValueError(f"multi_dot: arrays[{i}] must be 2-D (the first and last may be "
                             f"1-D), got {get_aval(a).str_user()}")
    dims = [get_aval(arrays[0]).shape[0]] + [get_aval(a).shape[1] for a in arrays]
    for i in range(len(arrays) - 1):
        if get_aval(arrays[i]).shape[1] != get_aval(arrays[i + 1]).shape[0]:
            raise ValueError(f"multi_dot: arrays[{i}] {get_aval(arrays[i]).str_user()} and "
                             f"arrays[{i + 1}] {get_aval(arrays[i + 1]).str_user()} do not chain "
                             "(columns of one must equal rows of the next)")
    split = _order(dims)
    # Evaluate the bracketing bottom-up with an explicit stack: (i, j, visited).
    done = {}
    stack = [(0, len(arrays) - 1, False)]
    while stack:
        i, j, visited = stack.pop()
        if i == j:
            done[i, j] = arrays[i]
            continue
        k = split[i][j]
        if visited:
            done[i, j] = matmul(done.pop((i, k)), done.pop((k + 1, j)))
        else:
            stack.append((i, j, True))
            stack.append((i, k, False))
            stack.append((k + 1, j, False))
    r = done[0, len(arrays) - 1]
    if first_vec:
        r = r[0]
    if last_vec:
        r = r[..., 0]
    return r
