"""Matrix functions: `expm` (Higham's Padé scaling and squaring), `expm_frechet` and
`sqrtm` (the `sqrtm` primitive).

The Padé degree is fixed per dtype (13 for float64/complex128, 7 for
float32/complex64, the highest degree JAX picks for each) rather than chosen from
the norm: every matrix in a batch, traced or not, then runs the same program, and
the only value-dependent choice, the number of squarings, becomes a mask over a
fixed-length loop.  Differentiating the algorithm differentiates the Padé
approximant, whose derivative is as accurate as its value (Al-Mohy and Higham's
Fréchet-derivative algorithm is exactly this)."""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ... import numpy as enp
from ...fx.core import get_aval
from ...fx.prims import linalg as _la
from ...fx.prims.linalg_sqrtm import sqrtm as _sqrtm
from ...transforms.control_flow import fori_loop
from ...transforms.jvp import jvp
from ...transforms.misc import stop_gradient
from ...numpy import _core as _core
from ._util import back, check_square, inexact, shape_of

__all__ = ["expm", "expm_frechet", "sqrtm"]

_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
           129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
           40840800., 960960., 16380., 182., 1.)
_PADE7 = (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.)
# The largest 1-norm for which each approximant is accurate to the unit roundoff
# (Higham 2005, table 2.3; theta_7 is for float32's unit roundoff).
_THETA13 = 5.371920351148152
_THETA7 = 3.925724783138660


def _pade(A, eye, b):
    """(U, V) with r(A) = (V - U)^-1 (V + U): U the odd part, V the even part."""
    mm = _la._matmul
    A2 = mm(A, A)
    A4 = mm(A2, A2)
    A6 = mm(A4, A2)
    if len(b) == 8:
        u = b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * eye
        v = b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye
        return mm(A, u), v
    u = mm(A6, b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * eye
    v = mm(A6, b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye
    return mm(A, u), v


def expm(A, *, upper_triangular=False, max_squarings=16):
    """Matrix exponential of square matrices [..., N, N] (scipy.linalg.expm, JAX's
    signature): Padé approximation after scaling A by 2^-s so that its 1-norm is
    small, then s squarings.  A matrix that needs more than `max_squarings` squarings
    gives NaNs, as in JAX.  `upper_triangular` is accepted (a hint JAX uses for
    speed) and ignored.  Differentiable to any order.

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import expm
        >>> np.round(np.asarray(expm(np.array([[0.0, 1.0], [0.0, 0.0]]))), 6).tolist()
        [[1.0, 1.0], [0.0, 1.0]]
    """
    (A,), out = inexact("expm", A)
    check_square("expm", "A", A)
    A = _core.asarray(A)
    dtype = get_aval(A).dtype
    n = shape_of(A)[-1]
    if n == 0:
        return back(A, out)
    rdt = _dt.real_dtype(dtype)
    wide = rdt == _dt.float64
    theta, coeffs = (_THETA13, _PADE13) if wide else (_THETA7, _PADE7)
    norm = enp.max(enp.sum(enp.abs(stop_gradient(A)), axis=-2), axis=-1)
    # s = max(0, ceil(log2(norm / theta))); log2(0) = -inf clips to 0 squarings.
    with np.errstate(divide="ignore"):
        s = enp.maximum(enp.ceil(enp.log2(norm / np.asarray(theta, rdt))), np.asarray(0, rdt))
    scale = enp.exp2(-s).astype(dtype)[..., None, None]
    As = A * scale
    eye = _core.broadcast_to(_core.asarray(np.eye(n, dtype=dtype)), shape_of(A))
    u, v = _pade(As, eye, coeffs)
    f, _, perm = _la.lu(v - u)
    R = _la.lu_solve(f, perm, v + u)
    sq = s[..., None, None]

    def square(i, r):
        return enp.where(i < sq, _la._matmul(r, r), r)

    R = fori_loop(0, int(max_squarings), square, R)
    R = enp.where(sq > max_squarings, np.asarray(np.nan, dtype), R)
    return back(R, out)


def expm_frechet(A, E, *, method=None, compute_expm=True):
    """The Fréchet derivative of `expm` at A in the direction E
    (scipy.linalg.expm_frechet): returns (expm(A), L(A, E)), or L(A, E) when not
    `compute_expm`.  It is the jvp of `expm`; `method` is accepted ('SPS', 'blockEnlarge'
    or None) and ignored.

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import expm_frechet
        >>> _, d = expm_frechet(np.zeros((2, 2)), np.eye(2))
        >>> np.round(np.asarray(d), 6).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    if method not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"expm_frechet: method must be None, 'SPS' or 'blockEnlarge', got "
                         f"{method!r}")
    (A, E), out = inexact("expm_frechet", A, E)
    check_square("expm_frechet", "A", A)
    if shape_of(E) != shape_of(A):
        raise TypeError(f"expm_frechet: E must have the shape of A, {shape_of(A)}, got "
                        f"{shape_of(E)}")
    value, deriv = jvp(expm, (A,), (E,))
    if compute_expm:
        return back(value, out), back(deriv, out)
    return back(deriv, out)


def sqrtm(A, blocksize=1):
    """The principal matrix square root of square matrices [..., N, N]
    (scipy.linalg.sqrtm): X with X @ X = A whose eigenvalues have non-negative real
    parts.  The result is always complex, as in JAX (SciPy returns a real array when
    the root is real).  Differentiable for diagonalizable A; a singular A gives
    inf/NaN.  `blocksize` is accepted and ignored.

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import sqrtm
        >>> np.round(np.asarray(sqrtm(np.array([[4.0, 0.0], [0.0, -9.0]]))), 6).tolist()
        [[(2+0j), 0j], [0j, 3j]]
    """
    (A,), _ = inexact("sqrtm", A)
    check_square("sqrtm", "A", A)
    return _sqrtm(A)
