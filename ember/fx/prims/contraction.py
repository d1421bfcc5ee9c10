"""The tensor contraction primitive `dot_general` and its wrappers `dot` and `batch_matmul`.

`dot_general(lhs, rhs, ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)))`
contracts the paired `*_contract` dimensions, keeps the paired `*_batch`
dimensions in lockstep, and lays the output out as XLA does: batch dims, then
the remaining (free) dims of lhs, then the free dims of rhs, each in order.

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.contraction import dot_general
    >>> a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    >>> dot_general(a, b, (((1,), (0,)), ((), ()))).shape
    (2, 4)
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ..core import AbstractArray, Primitive, get_aval, is_undefined, shape_error
from .rules import defbilinear
from ..spelling import user_str

_LOWP = (_dt.float16, _dt.bfloat16)


# --- dimension-number helpers ---------------------------------------------------------

def _free_dims(ndim, contract, batch):
    used = set(contract) | set(batch)
    return tuple(d for d in range(ndim) if d not in used)


def _normalize_dimension_numbers(dimension_numbers, lhs_ndim=None, rhs_ndim=None):
    """((lc, rc), (lb, rb)) as tuples of non-negative ints (negative dims wrap)."""
    try:
        (lc, rc), (lb, rb) = dimension_numbers
    except (TypeError, ValueError):
        raise TypeError("dot_general: dimension_numbers must be ((lhs_contract, rhs_contract), "
                        f"(lhs_batch, rhs_batch)), got {dimension_numbers!r}") from None

    def norm(ds, nd):
        ds = (ds,) if isinstance(ds, (int, np.integer)) else ds
        return tuple(int(d) % nd if nd and int(d) < 0 else int(d) for d in ds)
    return ((norm(lc, lhs_ndim), norm(rc, rhs_ndim)), (norm(lb, lhs_ndim), norm(rb, rhs_ndim)))


def _check_dims(name, x, dims, what):
    if len(set(dims)) != len(dims) or any(not 0 <= d < x.ndim for d in dims):
        raise shape_error("dot_general", f"{what} dimensions {dims} are out of range or repeated "
                          f"for {name} {user_str(x)}")


def _dot_general_abstract(lhs, rhs, *, dimension_numbers, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    _check_dims("lhs", lhs, lc + lb, "contracting/batch")
    _check_dims("rhs", rhs, rc + rb, "contracting/batch")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise shape_error("dot_general", f"lhs and rhs need as many contracting and batch dims, "
                          f"got {dimension_numbers} for {user_str(lhs)} and {user_str(rhs)}")
    for what, ld, rd in (("contracting", lc, rc), ("batch", lb, rb)):
        ls = tuple(lhs.shape[d] for d in ld)
        rs = tuple(rhs.shape[d] for d in rd)
        if ls != rs:
            raise shape_error("dot_general", f"{what} dimensions have different sizes: lhs {user_str(lhs)} "
                              f"dims {ld} are {ls}, rhs {user_str(rhs)} dims {rd} are {rs}")
    for x in (lhs, rhs):
        if x.dtype == _dt.float0:
            raise TypeError("dot_general does not accept float0 operands")
    if preferred_element_type is None:
        if lhs.dtype != rhs.dtype:
            raise TypeError(f"dot_general: operands must have the same dtype, got {user_str(lhs)} and {user_str(rhs)} "
                            f"(promote first, or pass preferred_element_type)")
        out_dtype = lhs.dtype
        weak = lhs.weak_type and rhs.weak_type
    else:
        out_dtype = preferred_element_type
        weak = False
    shape = (tuple(lhs.shape[d] for d in lb)
             + tuple(lhs.shape[d] for d in _free_dims(lhs.ndim, lc, lb))
             + tuple(rhs.shape[d] for d in _free_dims(rhs.ndim, rc, rb)))
    return AbstractArray(shape, out_dtype, weak)


def _compute_dtype(ld, rd, preferred):
    """The dtype numpy computes in: the operands' common dtype (and the preferred
    one), with half precision widened to float32 as the native backends do."""
    ds = [ld, rd] + ([preferred] if preferred is not None else [])
    if any(d == _dt.bfloat16 for d in ds):
        ds = [_dt.float32 if d in _LOWP else d for d in ds]
    d = np.result_type(*ds)
    if d == _dt.float16:
        d = np.dtype(np.float32)
    return d


def _dot_general_impl(lhs, rhs, *, dimension_numbers, preferred_element_type=None):
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    out_dtype = preferred_element_type if preferred_element_type is not None else lhs.dtype
    cd = _compute_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
    if lhs.dtype != cd:
        lhs = lhs.astype(cd)
    if rhs.dtype != cd:
        rhs = rhs.astype(cd)
    (lc, rc), (lb, rb) = dimension_numbers
    lf = _free_dims(lhs.ndim, lc, lb)
    rf = _free_dims(rhs.ndim, rc, rb)
    bshape = tuple(lhs.shape[d] for d in lb)
    mshape = tuple(lhs.shape[d] for d in lf)
    nshape = tuple(rhs.shape[d] for d in rf)
    b = int(np.prod(bshape, dtype=np.int64))
    m = int(np.prod(mshape, dtype=np.int64))
    n = int(np.prod(nshape, dtype=np.int64))
    k = int(np.prod([lhs.shape[d] for d in lc], dtype=np.int64))
    # Lay both operands out as [batch, rows, k] x [batch, k, cols] so that the
    # product is one (batched) BLAS matmul.  For the common layouts the
    # transposes are views and the reshapes copy nothing.
    a = np.transpose(lhs, lb + lf + lc).reshape(b, m, k)
    c = np.transpose(rhs, rb + rc + rf).reshape(b, k, n)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.matmul(a[0], c[0])[None] if not lb else np.matmul(a, c)
    if cd.kind == "f" and k:
        _recompute_nonfinite(a, c, out)
    out = np.asarray(out).reshape(bshape + mshape + nshape)
    if out.dtype != out_dtype:
        out = out.astype(out_dtype)
    return out


def overflow_exponent(dtype, k) -> int:
    """Elements of a k-term float product whose row's and column's largest finite
    magnitudes have frexp exponents (`m = f * 2**e`, `0.5 <= f < 1`, at least 0)
    summing to at least this may overflow in a partial sum: |sum| < k * 2**(ea + eb),
    kept a factor 2 below the largest finite value.

    Example:
        >>> overflow_exponent(np.float32, 1), overflow_exponent(np.float32, 1000)
        (127, 117)
    """
    emax = 128 if np.dtype(dtype) == np.float32 else 1024
    return emax - 1 - max(int(k) - 1, 0).bit_length()


def _max_exponents(x):
    """`overflow_exponent`'s exponent of the largest finite |x| along the last axis."""
    with np.errstate(invalid="ignore"):
        m = np.where(np.isfinite(x), np.abs(x), 0.0).astype(np.float64).max(axis=-1)
    return np.maximum(((m.view(np.uint64) >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64) - 1022, 0)


def _recompute_nonfinite(a, c, out):
    """Recompute in place the elements of `out = a @ c` (batched [b, m, k] x
    [b, k, n], float32/float64) that are not finite or whose partial sums could
    overflow (`overflow_exponent`), so an element is infinite or NaN only when the
    exact result overflows or the operands' infinities and NaNs make it so (inf*0,
    inf-inf), never because a partial sum overflowed (numpy's BLAS gives NaN, an FMA
    gemm -inf, for [-3.4e38]*3 @ [1.5, -2, 0] = 1.7e38).  The row and column are
    scaled by powers of two below 1 and summed in float64 in order of k; the LLVM
    backend's gemm runs the same arithmetic on the same elements (codegen
    `_fix_nonfinite`), so the two agree bit for bit on them.

    Example:
        >>> a = np.full((1, 1, 3), -3.4028235e38, np.float32)
        >>> c = np.array([1.5, -2.0, 0.0], np.float32).reshape(1, 3, 1)
        >>> out = np.full((1, 1, 1), np.nan, np.float32)
        >>> _recompute_nonfinite(a, c, out); float(out[0, 0, 0])
        1.7014117331926443e+38
    """
    limit = overflow_exponent(out.dtype, a.shape[2])
    # the common case in three passes: finite operands too small to overflow, finite result
    with np.errstate(invalid="ignore"):
        big = [max(abs(float(x.max())), abs(float(x.min()))) if x.size else 0.0 for x in (a, c)]
    if all(np.isfinite(big)):
        e = [max(int(np.frexp(m)[1]), 0) for m in big]
        if e[0] + e[1] < limit and np.isfinite(out).all():
            return
    ea_rows = _max_exponents(a)                      # [b, m]
    eb_cols = _max_exponents(np.swapaxes(c, 1, 2))   # [b, n]
    risky = ea_rows[:, :, None] + eb_cols[:, None, :] >= limit
    bi, i, j = np.nonzero(~np.isfinite(out) | risky)
    if not len(bi):
        return
    rows = a[bi, i, :].astype(np.float64)
    cols = c[bi, :, j].astype(np.float64)

    def pow2(e):
        return ((e + 1023).astype(np.uint64) << np.uint64(52)).view(np.float64)

    ea, eb = ea_rows[bi, i], eb_cols[bi, j]
    rows = rows * pow2(-(ea >> 1))[:, None] * pow2(-(ea - (ea >> 1)))[:, None]
    cols = cols * pow2(-(eb >> 1))[:, None] * pow2(-(eb - (eb >> 1)))[:, None]
    acc = np.zeros(len(bi))
    with np.errstate(invalid="ignore", over="ignore"):
        for t in range(rows.shape[1]):
            acc = acc + rows[:, t] * cols[:, t]
        e = ea + eb
        e1 = e // 3
        e2 = (e - e1) // 2
        acc = acc * pow2(e1) * pow2(e2) * pow2(e - e1 - e2)
        out[bi, i, j] = acc.astype(out.dtype)


dot_general_p = Primitive("dot_general")
dot_general_p.kind = "contraction"
dot_general_p.abstract_eval = _dot_general_abstract
dot_general_p.impl = _dot_general_impl


def dot_general(lhs, rhs, dimension_numbers, preferred_element_type=None, *, precision=None):
    """General tensor contraction (XLA DotGeneral).

    `dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))`.
    The output is batch dims, then lhs free dims, then rhs free dims.  Operand
    dtypes must match unless `preferred_element_type` (the output dtype) is
    given.  `precision` is accepted for JAX compatibility; the reference always
    computes at full precision (half precision accumulates in float32).

    Example:
        >>> import numpy as np
        >>> x = np.ones((5, 2, 3), np.float32); y = np.ones((5, 3, 4), np.float32)
        >>> dot_general(x, y, (((2,), (1,)), ((0,), (0,)))).shape
        (5, 2, 4)
    """
    la, ra = get_aval(lhs), get_aval(rhs)
    dn = _normalize_dimension_numbers(dimension_numbers, la.ndim, ra.ndim)
    pet = None if preferred_element_type is None else _dt.canonicalize(preferred_element_type)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, preferred_element_type=pet)


def dot(lhs, rhs, preferred_element_type=None, *, precision=None):
    """Vector/matrix product of 1-D or 2-D operands: contracts the last dim of
    `lhs` with the first dim of `rhs`.

    Example:
        >>> import numpy as np
        >>> dot(np.ones((2, 3), np.float32), np.ones(3, np.float32)).shape
        (2,)
    """
    la, ra = get_aval(lhs), get_aval(rhs)
    if la.ndim not in (1, 2) or ra.ndim not in (1, 2):
        raise shape_error("dot", f"operands must be 1-D or 2-D, got {la} and {ra} "
                          f"(use dot_general or batch_matmul)")
    return dot_general(lhs, rhs, (((la.ndim - 1,), (0,)), ((), ())), preferred_element_type)


def batch_matmul(lhs, rhs, preferred_element_type=None, *, precision=None):
    """Batched matrix product: `[..., m, k] @ [..., k, n] -> [..., m, n]` with equal
    leading batch dims.

    Example:
        >>> import numpy as np
        >>> batch_matmul(np.ones((4, 2, 3), np.float32), np.ones((4, 3, 5), np.float32)).shape
        (4, 2, 5)
    """
    la, ra = get_aval(lhs), get_aval(rhs)
    if la.ndim < 2 or la.ndim != ra.ndim or la.shape[:-2] != ra.shape[:-2]:
        raise shape_error("batch_matmul", f"operands must be [..., m, k] and [..., k, n] with "
                          f"equal batch dims, got {la} and {ra}")
    nd = la.ndim
    batch = tuple(range(nd - 2))
    return dot_general(lhs, rhs, (((nd - 1,), (nd - 2,)), (batch, batch)), preferred_element_type)


# --- transpose ----------------------------------------------------------------------------

def _transpose_operand(ct, x_aval, y, x_dims, y_dims, x_is_lhs):
    """Cotangent of operand x of `dot_general`, given the other operand y.

    `x_dims = (contract, batch)` of x and `y_dims` of y.  The cotangent has dims
    [batch, lhs free, rhs free]: contract its y-free dims with y's free dims,
    batch over the batch dims, then permute the result back into x's layout.
    """
    (xc, xb), (yc, yb) = x_dims, y_dims
    y_aval = get_aval(y)
    nb = len(xb)
    xf = _free_dims(x_aval.ndim, xc, xb)
    yf = _free_dims(y_aval.ndim, yc, yb)
    if x_is_lhs:
        ct_yf = tuple(range(nb + len(xf), nb + len(xf) + len(yf)))
    else:
        ct_yf = tuple(range(nb, nb + len(yf)))
    ct_b = tuple(range(nb))
    res = dot_general_p.bind(ct, y, dimension_numbers=((ct_yf, yf), (ct_b, yb)),
                             preferred_element_type=x_aval.dtype)
    # res dims: batch, x's free dims (in order), then y's contracting dims in
    # increasing order, each standing for the x dim it was paired with.
    pair = dict(zip(yc, xc))
    order = list(xb) + list(xf) + [pair[d] for d in sorted(yc)]
    perm = tuple(order.index(i) for i in range(x_aval.ndim))
    from .shape import transpose
    return transpose(res, perm)


def _dot_general_transpose(ct, lhs, rhs, *, dimension_numbers, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    if is_undefined(lhs) and is_undefined(rhs):
        raise TypeError("dot_general is not linear when both operands are linear inputs")
    if is_undefined(lhs):
        return [_transpose_operand(ct, lhs.aval, rhs, (lc, lb), (rc, rb), True), None]
    return [None, _transpose_operand(ct, rhs.aval, lhs, (rc, rb), (lc, lb), False)]


# --- batch ----------------------------------------------------------------------------------

def _shift(dims, d):
    """Renumber dims of an operand after inserting a new axis at position d."""
    return tuple(x + (x >= d) for x in dims)


def _dot_general_batch(axis_size, args, dims, *, dimension_numbers, preferred_element_type=None):
    lhs, rhs = args
    ld, rd = dims
    (lc, rc), (lb, rb) = dimension_numbers
    if ld is not None and rd is not None:
        # Both batched: the vmapped axis becomes the leading dot_general batch dim.
        dn = ((_shift(lc, ld), _shift(rc, rd)), ((ld,) + _shift(lb, ld), (rd,) + _shift(rb, rd)))
        out = dot_general_p.bind(lhs, rhs, dimension_numbers=dn,
                                 preferred_element_type=preferred_element_type)
        return out, 0
    if ld is not None:
        # The vmapped axis is a free dim of lhs; it stays where it falls in the output.
        lc2, lb2 = _shift(lc, ld), _shift(lb, ld)
        lf = _free_dims(get_aval(lhs).ndim, lc2, lb2)
        dn = ((lc2, rc), (lb2, rb))
        out = dot_general_p.bind(lhs, rhs, dimension_numbers=dn,
                                 preferred_element_type=preferred_element_type)
        return out, len(lb) + lf.index(ld)
    rc2, rb2 = _shift(rc, rd), _shift(rb, rd)
    rf = _free_dims(get_aval(rhs).ndim, rc2, rb2)
    la = get_aval(lhs)
    n_lf = len(_free_dims(la.ndim, lc, lb))
    dn = ((lc, rc2), (lb, rb2))
    out = dot_general_p.bind(lhs, rhs, dimension_numbers=dn,
                             preferred_element_type=preferred_element_type)
    return out, len(lb) + n_lf + rf.index(rd)


defbilinear(dot_general_p)
dot_general_p.transpose = _dot_general_transpose
dot_general_p.batch = _dot_general_batch
