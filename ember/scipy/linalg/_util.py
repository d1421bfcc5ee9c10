"""Argument handling shared by `ember.scipy.linalg`: dtype promotion (integers go to the
default float, half precision computes in float32 and rounds back, as in
`ember.numpy.linalg`), shape checks that name the function and argument, SciPy's
`trans` spellings, and the vector/matrix right-hand-side rule."""
from __future__ import annotations

from ... import dtypes as _dt
from ...array import Array
from ...fx.core import Tracer, get_aval, shape_error
from ...fx.prims import convert as _cv
from ...fx.prims import shape as _sh
from ...numpy._core import asarray, broadcast_shapes, broadcast_to
from ...numpy.linalg import _back, _inexact_dtype

__all__ = ["back", "broadcast_batch", "check_matrix", "check_square", "inexact", "parse_trans",
           "shape_of", "unvector"]

_TRANS = {0: (False, False), "N": (False, False), "n": (False, False),
          1: (True, False), "T": (True, False), "t": (True, False),
          2: (True, True), "C": (True, True), "c": (True, True)}


def _arr(x):
    return x if isinstance(x, (Array, Tracer)) else asarray(x)


def shape_of(x):
    return tuple(get_aval(x).shape)


def inexact(name, *xs):
    """(the operands converted to one LAPACK dtype, the dtype results return in)."""
    xs = [_arr(x) for x in xs]
    avals = [get_aval(x) for x in xs]
    dtype, _ = _dt.promote([a.dtype for a in avals], [a.weak_type for a in avals])
    compute, out = _inexact_dtype(dtype)
    return [_cv.convert_element_type(x, compute) if get_aval(x).dtype != compute else x
            for x in xs], out


def back(x, out_dtype):
    return _back(x, out_dtype)


def check_matrix(name, arg, x):
    shape = shape_of(x)
    if len(shape) < 2:
        raise shape_error(name, f"{arg} must be a matrix (or a stack of them, [..., M, N]), "
                                f"got shape {shape}")


def check_square(name, arg, x):
    shape = shape_of(x)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise shape_error(name, f"{arg} must be square (or a stack of square matrices, "
                                f"[..., N, N]), got shape {shape}")


def parse_trans(name, trans):
    """SciPy's trans (0/'N', 1/'T', 2/'C') as (transpose_a, conjugate_a)."""
    key = trans if isinstance(trans, str) else getattr(trans, "__index__", lambda: trans)()
    if isinstance(key, bool) or key not in _TRANS:
        raise ValueError(f"{name}: trans must be 0, 1, 2 or 'N', 'T', 'C', got {trans!r}")
    return _TRANS[key]


def broadcast_batch(name, a, b, vector_rule):
    """Match the right-hand side `b` to square `a` [..., N, N]: returns (a, b as a stack of
    matrices [..., N, K] with a's batch dims broadcast against b's, whether b was a
    vector).  With `vector_rule="ndim"` b is a (stack of) vector(s) when it has one
    dim fewer than a (JAX's solve_triangular / cho_solve); with "1d" only when 1-D
    (numpy's solve)."""
    sa, sb = shape_of(a), shape_of(b)
    n = sa[-1]
    if len(sb) == 0:
        raise shape_error(name, f"b must be a vector or a matrix, got shape {sb}")
    vec = len(sb) == 1 or (vector_rule == "ndim" and len(sb) == len(sa) - 1)
    rows = sb[-1] if vec else sb[-2]
    if rows != n:
        raise shape_error(name, f"b must have {n} rows to match a of shape {sa}, got shape {sb}")
    if vec:
        b = _sh.reshape(b, sb + (1,))
        sb = sb + (1,)
    batch = broadcast_shapes(sa[:-2], sb[:-2], op=name)
    if sa[:-2] != batch:
        a = broadcast_to(a, batch + sa[-2:])
    if sb[:-2] != batch:
        b = broadcast_to(b, batch + sb[-2:])
    return a, b, vec


def unvector(x, vec):
    return _sh.reshape(x, shape_of(x)[:-1]) if vec else x
