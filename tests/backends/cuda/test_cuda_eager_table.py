"""The CUDA backend's eager table run with `xp=numpy` against the reference impls:
every covered primitive, hypothesis shapes (0-d, size 0) and dtypes (half
precision, integers, bool, complex) with NaN, infinities and signed zeros.  The
same rules run with `xp=cupy` on a GPU, so this checks their semantics (result
dtypes, integer division, NaN and -0 handling) on a machine without one.
Results must match bit for bit."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ember.backends.cuda.eager import NOT_COVERED, covered, run_rule
from ember.fx.core import AbstractArray
from ember.fx.prims import contraction as K
from ember.fx.prims import convert as C
from ember.fx.prims import cumulative as CU
from ember.fx.prims import elementwise as E
from ember.fx.prims import fft as F
from ember.fx.prims import linalg as LA
from ember.fx.prims import sort as SO
from ember.fx.prims import indexing as I
from ember.fx.prims import random as RND
from ember.fx.prims import reduce as R
from ember.fx.prims import shape as S
from ember.transforms import misc as M

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(d) for d in ("float16", "float32", "float64")] + [BF16]
INTS = [np.dtype(d) for d in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")]
COMPLEX = [np.dtype("complex64"), np.dtype("complex128")]
BOOL = [np.dtype(bool)]
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, 1e-40, 3e38, -3e38, 65504.0, 7.5]

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def shapes(draw, max_rank=3):
    return tuple(draw(st.lists(st.integers(0, 4), max_size=max_rank)))


@st.composite
def values(draw, dtype, shape):
    """An array of `dtype` and `shape` with special values mixed in."""
    n = int(np.prod(shape, dtype=np.int64))
    if dtype.kind == "b":
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool).reshape(shape)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        edge = [0, 1, -1, info.min, info.max, 2, 7, -8, 63, 64]
        ints = st.one_of(st.integers(int(info.min), int(info.max)), st.sampled_from(edge))
        xs = [v for v in draw(st.lists(ints, min_size=n, max_size=n))]
        return np.array([v if info.min <= v <= info.max else 0 for v in xs], dtype).reshape(shape)
    fl = st.one_of(st.floats(-1e6, 1e6, width=32), st.sampled_from(SPECIAL))
    re = np.array(draw(st.lists(fl, min_size=n, max_size=n)), np.float64).reshape(shape)
    if dtype.kind == "c":
        im = np.array(draw(st.lists(fl, min_size=n, max_size=n)), np.float64).reshape(shape)
        with np.errstate(invalid="ignore"):
            return (re + 1j * im).astype(dtype)
    with np.errstate(over="ignore"):
        return re.astype(dtype)


def same(a, b):
    """Bitwise equality of two results (dtype, shape and every bit)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    if a.dtype.kind == "b":
        assert np.array_equal(a, b)
        return
    ua = np.ascontiguousarray(a).view(np.uint8)
    ub = np.ascontiguousarray(b).view(np.uint8)
    assert np.array_equal(ua, ub), (a, b)


def check(prim, operands, params, must_cover=True):
    """The rule against the reference impl: equal results, or the same error type."""
    avals = [AbstractArray(np.shape(x), np.asarray(x).dtype) for x in operands]
    try:
        prim.abstract_eval(*avals, **params)
    except (TypeError, ValueError, IndexError):
        assume(False)   # the eager trace rejects this call before any backend sees it
    try:
        with np.errstate(all="ignore"):
            want = prim.impl(*operands, **params)
    except (ValueError, TypeError, IndexError) as e:
        with pytest.raises(type(e)):
            run_rule(np, prim, list(operands), params)
        return
    got = run_rule(np, prim, list(operands), params)
    if got is NOT_COVERED:
        assert not must_cover, f"{prim.name} declined {[str(a) for a in avals]}"
        return
    same(got, want)


UNARY_FLOAT = [E.exp_p, E.exp2_p, E.log_p, E.log1p_p, E.expm1_p, E.tanh_p, E.sin_p, E.cos_p, E.tan_p,
               E.asin_p, E.acos_p, E.atan_p, E.sinh_p, E.cosh_p, E.asinh_p, E.acosh_p, E.atanh_p,
               E.sqrt_p, E.rsqrt_p, E.cbrt_p, E.logistic_p, E.erf_p, E.erfc_p, E.lgamma_p, E.erf_inv_p,
               E.sign_p, E.floor_p, E.ceil_p, E.round_p, E.is_finite_p, E.abs_p, E.neg_p, E.square_p,
               E.digamma_p]
UNARY_INT = [E.neg_p, E.abs_p, E.sign_p, E.square_p, E.not_p]
BINARY_ANY = [E.add_p, E.sub_p, E.mul_p, E.max_p, E.min_p, E.eq_p, E.ne_p, E.lt_p, E.le_p, E.gt_p,
              E.ge_p]
BINARY_FLOAT = [E.div_p, E.rem_p, E.pow_p, E.atan2_p, E.nextafter_p]
BINARY_INT = [E.div_p, E.rem_p, E.and_p, E.or_p, E.xor_p, E.shift_left_p,
              E.shift_right_arithmetic_p, E.shift_right_logical_p]


@pytest.mark.parametrize("prim", UNARY_FLOAT, ids=lambda p: p.name)
@SETTINGS
@given(data=st.data())
def test_unary_float(prim, data):
    d = data.draw(st.sampled_from(FLOATS))
    x = data.draw(values(d, data.draw(shapes())))
    check(prim, [x], {})


@pytest.mark.parametrize("prim", UNARY_INT, ids=lambda p: p.name)
@SETTINGS
@given(data=st.data())
def test_unary_int(prim, data):
    d = data.draw(st.sampled_from(INTS + BOOL))
    check(prim, [data.draw(values(d, data.draw(shapes())))], {})


def _pair(data, dtypes):
    d = data.draw(st.sampled_from(dtypes))
    shape = data.draw(shapes())
    sx, sy = data.draw(st.sampled_from([(shape, shape), ((), shape), (shape, ())]))
    return data.draw(values(d, sx)), data.draw(values(d, sy))


@pytest.mark.parametrize("prim", BINARY_ANY + BINARY_FLOAT, ids=lambda p: p.name)
@SETTINGS
@given(data=st.data())
def test_binary_float(prim, data):
    check(prim, list(_pair(data, FLOATS)), {})


@pytest.mark.parametrize("prim", BINARY_ANY + BINARY_INT, ids=lambda p: p.name)
@SETTINGS
@given(data=st.data())
def test_binary_int(prim, data):
    check(prim, list(_pair(data, INTS + BOOL)), {})


@pytest.mark.parametrize("prim", [E.add_p, E.mul_p, E.sub_p, E.eq_p, E.neg_p], ids=lambda p: p.name)
@SETTINGS
@given(data=st.data())
def test_complex_exact_ops(prim, data):
    x, y = _pair(data, COMPLEX)
    check(prim, [x] if prim is E.neg_p else [x, y], {})


@SETTINGS
@given(data=st.data())
def test_complex_math_is_left_to_the_compiled_path(data):
    x = data.draw(values(np.dtype("complex64"), data.draw(shapes())))
    assert run_rule(np, E.expm1_p, [x], {}) is NOT_COVERED


@SETTINGS
@given(data=st.data())
def test_python_scalars_pass_as_their_weak_dtype(data):
    x = data.draw(values(np.dtype("float16"), data.draw(shapes())))
    check(E.mul_p, [x, np.float16(2.5)], {})


@SETTINGS
@given(data=st.data())
def test_integer_pow(data):
    d = data.draw(st.sampled_from(FLOATS + INTS))
    x = data.draw(values(d, data.draw(shapes())))
    check(E.integer_pow_p, [x], dict(y=data.draw(st.integers(-3 if d.kind == "f" else 0, 5))))


def test_integer_pow_negative_exponent_of_ints_raises_like_the_reference():
    with pytest.raises(ValueError):
        run_rule(np, E.integer_pow_p, [np.arange(3)], dict(y=-1))


@SETTINGS
@given(data=st.data())
def test_select_n_and_clamp(data):
    d = data.draw(st.sampled_from(FLOATS + INTS))
    shape = data.draw(shapes())
    n = data.draw(st.integers(1, 3))
    cases = [data.draw(values(d, shape)) for _ in range(n)]
    if n <= 2 and data.draw(st.booleans()):
        which = data.draw(values(np.dtype(bool), shape))
    else:
        which = np.array(data.draw(st.lists(st.integers(-1, n), min_size=int(np.prod(shape)),
                                            max_size=int(np.prod(shape)))), np.int32).reshape(shape)
    check(E.select_n_p, [which, *cases], {})
    lo, x, hi = data.draw(values(d, ())), cases[0], data.draw(values(d, ()))
    check(E.clamp_p, [lo, x, hi], {})


@pytest.mark.parametrize("sel", [np.uint8, np.uint32, np.uint64])
def test_select_n_unsigned_selector_with_its_top_bit_set(sel):
    # a selector past 2**(bits-1) is a large index: the last case, not a negative one
    top = 1 << (np.dtype(sel).itemsize * 8 - 1)
    which = np.array([0, 1, 2, top, top + 1, np.iinfo(sel).max], sel)
    cases = [np.full(6, float(k)) for k in range(3)]
    got = run_rule(np, E.select_n_p, [which, *cases], {})
    np.testing.assert_array_equal(got, [0.0, 1.0, 2.0, 2.0, 2.0, 2.0])
    np.testing.assert_array_equal(E.select_n_p.impl(which, *cases), got)


@SETTINGS
@given(data=st.data())
def test_convert_element_type(data):
    src = data.draw(st.sampled_from(FLOATS + INTS + BOOL + COMPLEX))
    dst = data.draw(st.sampled_from(FLOATS + INTS + BOOL + COMPLEX))
    x = data.draw(values(src, data.draw(shapes())))
    declined = dst == BF16 and (src == np.float64 or (src.kind in "iu" and src.itemsize >= 4))
    check(C.convert_element_type_p, [x], dict(new_dtype=dst, weak_type=False), must_cover=not declined)


def _axes(data, ndim):
    return tuple(sorted(data.draw(st.sets(st.integers(0, max(ndim - 1, 0)), max_size=ndim)))) if ndim else ()


@pytest.mark.parametrize("prim", [R.reduce_sum_p, R.reduce_prod_p, R.reduce_max_p, R.reduce_min_p,
                                  R.reduce_and_p, R.reduce_or_p, R.reduce_xor_p], ids=lambda p: p.name)
@SETTINGS
@given(data=st.data())
def test_reductions(prim, data):
    d = data.draw(st.sampled_from(FLOATS + INTS + BOOL))
    x = data.draw(values(d, data.draw(shapes())))
    check(prim, [x], dict(axes=_axes(data, x.ndim)))


@pytest.mark.parametrize("prim", [CU.cumsum_p, CU.cumprod_p, CU.cummax_p, CU.cummin_p], ids=lambda p: p.name)
@SETTINGS
@given(data=st.data())
def test_cumulative(prim, data):
    d = data.draw(st.sampled_from(FLOATS + INTS))
    shape = data.draw(shapes())
    assume(len(shape) > 0)
    x = data.draw(values(d, shape))
    check(prim, [x], dict(axis=data.draw(st.integers(0, x.ndim - 1)), reverse=data.draw(st.booleans())))


@pytest.mark.parametrize("prim", [R.argmax_p, R.argmin_p], ids=lambda p: p.name)
@SETTINGS
@given(data=st.data())
def test_arg_reductions(prim, data):
    d = data.draw(st.sampled_from(FLOATS + INTS))
    shape = data.draw(shapes())
    assume(len(shape) > 0)
    x = data.draw(values(d, shape))
    axis = data.draw(st.integers(0, x.ndim - 1))
    check(prim, [x], dict(axis=axis, index_dtype=np.dtype("int32")))


@SETTINGS
@given(data=st.data())
def test_dot_general(data):
    d = data.draw(st.sampled_from([np.dtype("float32"), np.dtype("float64"), np.dtype("float16"), BF16,
                                   np.dtype("int32"), np.dtype("int8")]))
    b, m, k, n = (data.draw(st.integers(0 if i else 1, 3)) for i in range(4))
    batch = data.draw(st.booleans())
    ls = ((b,) if batch else ()) + (m, k)
    rs = ((b,) if batch else ()) + (k, n)
    x, y = data.draw(values(d, ls)), data.draw(values(d, rs))
    c = 1 if not batch else 2
    dn = (((c,), (c - 1,)), (((0,), (0,)) if batch else ((), ())))
    check(K.dot_general_p, [x, y], dict(dimension_numbers=dn, preferred_element_type=None))


def test_dot_general_partial_sums_never_overflow():
    # [-3.4e38]*3 @ [1.5, -2, 0] is 1.7e38 exactly: BLAS' sum order gives NaN
    a = np.full((1, 3), -3.4028235e38, np.float32)
    c = np.array([[1.5], [-2.0], [0.0]], np.float32)
    dn = (((1,), (0,)), ((), ()))
    out = run_rule(np, K.dot_general_p, [a, c], dict(dimension_numbers=dn, preferred_element_type=None))
    same(out, K.dot_general_p.impl(a, c, dimension_numbers=dn))
    assert np.isfinite(out).all()


@SETTINGS
@given(data=st.data())
def test_movement(data):
    d = data.draw(st.sampled_from(FLOATS + INTS + BOOL))
    shape = data.draw(shapes())
    x = data.draw(values(d, shape))
    nd = x.ndim
    perm = tuple(data.draw(st.permutations(range(nd))))
    check(S.transpose_p, [x], dict(permutation=perm))
    check(S.reshape_p, [x], dict(new_sizes=(int(np.prod(shape, dtype=np.int64)),)))
    check(S.rev_p, [x], dict(dimensions=_axes(data, nd)))
    check(S.squeeze_p, [x], dict(dimensions=tuple(i for i, s in enumerate(shape) if s == 1)))
    check(S.expand_dims_p, [x], dict(dimensions=(0,)))
    check(M.stop_gradient_p, [x], {})
    out = (2,) + shape
    check(S.broadcast_in_dim_p, [x], dict(shape=out, broadcast_dimensions=tuple(range(1, nd + 1))))
    starts = tuple(data.draw(st.integers(0, s)) for s in shape)
    limits = tuple(data.draw(st.integers(a, s)) for a, s in zip(starts, shape))
    strides = tuple(data.draw(st.integers(1, 3)) for _ in shape)
    check(S.slice_p, [x], dict(start_indices=starts, limit_indices=limits, strides=strides))
    cfg = tuple((data.draw(st.integers(-1, 2)), data.draw(st.integers(-1, 2)), data.draw(st.integers(0, 2)))
                for _ in shape)
    check(S.pad_p, [x, data.draw(values(d, ()))], dict(padding_config=cfg))
    if nd:
        ax = data.draw(st.integers(0, nd - 1))
        other = data.draw(values(d, shape[:ax] + (data.draw(st.integers(0, 2)),) + shape[ax + 1:]))
        check(S.concatenate_p, [x, other], dict(dimension=ax))


@SETTINGS
@given(data=st.data())
def test_iota(data):
    shape = data.draw(shapes())
    assume(len(shape) > 0)
    d = data.draw(st.sampled_from(INTS + FLOATS))
    check(S.iota_p, [], dict(dtype=d, shape=shape, dimension=data.draw(st.integers(0, len(shape) - 1))))


@SETTINGS
@given(data=st.data())
def test_threefry2x32(data):
    from ember.fx.prims.random import threefry2x32_p
    shape = data.draw(shapes())
    ops = [data.draw(values(np.dtype("uint32"), data.draw(st.sampled_from([shape, ()])))) for _ in range(4)]
    got = run_rule(np, threefry2x32_p, ops, {})
    want = threefry2x32_p.impl(*ops)
    assert len(got) == 2
    for g, w in zip(got, want):
        same(g, w)


# --- the device library's functions (library.DEVICE_LIBRARY), rules of this table too ---------

DEVICE_LIBRARY_ROWS = [E.polygamma_p, CU.cummax_p, CU.cummin_p, CU.cumlogsumexp_p, SO.sort_p, SO.top_k_p,
                       E.real_p, E.imag_p, E.conj_p, E.complex_p, C.bitcast_convert_type_p, F.fft_p,
                       LA.cholesky_p, LA.qr_p, LA.eigh_p, LA.svd_p, LA.triangular_solve_p]


def check_results(prim, operands, params):
    """A multiple-result rule against the reference impl, bit for bit."""
    want = prim.impl(*operands, **params)
    got = run_rule(np, prim, list(operands), params)
    assert got is not NOT_COVERED and len(got) == len(want)
    for g, w in zip(got, want):
        same(g, w)


@SETTINGS
@given(data=st.data())
def test_polygamma(data):
    x = data.draw(values(data.draw(st.sampled_from(FLOATS)), data.draw(shapes())))
    check(E.polygamma_p, [x], dict(m=data.draw(st.integers(0, 3))))


@SETTINGS
@given(data=st.data())
def test_cumlogsumexp(data):
    # a log-step scan adds in another order than numpy's accumulate: equal to rounding
    d = data.draw(st.sampled_from([np.dtype("float32"), np.dtype("float64")]))
    shape = data.draw(shapes())
    assume(len(shape) > 0)
    x = data.draw(values(d, shape))
    params = dict(axis=data.draw(st.integers(0, x.ndim - 1)), reverse=data.draw(st.booleans()))
    with np.errstate(all="ignore"):
        want = CU.cumlogsumexp_p.impl(x, **params)
    got = run_rule(np, CU.cumlogsumexp_p, [x], params)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if d == np.float32 else 1e-12, atol=0)


@SETTINGS
@given(data=st.data())
def test_sort_by_several_keys(data):
    shape = data.draw(shapes())
    assume(len(shape) > 0)
    n_ops = data.draw(st.integers(1, 3))
    ops = []
    for _ in range(n_ops):
        d = data.draw(st.sampled_from(FLOATS + INTS[:3] + BOOL))
        # few distinct values, so that the later keys decide ties
        small = np.array(data.draw(st.lists(st.sampled_from([0.0, -0.0, 1.0, np.nan, -np.inf, 2.0]),
                                            min_size=int(np.prod(shape)), max_size=int(np.prod(shape)))))
        ops.append(small.reshape(shape).astype(d) if d.kind == "f" or d == BF16 else
                   np.nan_to_num(small, nan=3, neginf=-1).reshape(shape).astype(d))
    params = dict(dimension=data.draw(st.integers(0, len(shape) - 1)), is_stable=True,
                  num_keys=data.draw(st.integers(1, n_ops)))
    check_results(SO.sort_p, ops, params)


@SETTINGS
@given(data=st.data())
def test_top_k(data):
    shape = data.draw(shapes())
    assume(len(shape) > 0)
    x = data.draw(values(data.draw(st.sampled_from(FLOATS + INTS + BOOL)), shape))
    check_results(SO.top_k_p, [x], dict(k=data.draw(st.integers(0, shape[-1]))))


@SETTINGS
@given(data=st.data())
def test_complex_parts(data):
    x, y = _pair(data, COMPLEX)
    check(E.real_p, [x], {})
    check(E.imag_p, [x], {})
    check(E.conj_p, [x], {})
    a, b = _pair(data, [np.dtype("float32"), np.dtype("float64")])
    check(E.complex_p, [a, b], {})


@SETTINGS
@given(data=st.data())
def test_bitcast(data):
    d = data.draw(st.sampled_from(FLOATS + INTS))
    x = data.draw(values(d, data.draw(shapes())))
    new = data.draw(st.sampled_from([t for t in FLOATS + INTS if t.itemsize == d.itemsize]
                                    + ([np.dtype("uint8")] if x.ndim >= 0 else [])))
    check(C.bitcast_convert_type_p, [x], dict(new_dtype=new))


def test_fft():
    x = np.random.default_rng(0).standard_normal((3, 8))
    for fft_type, op, lengths in ((F.FftType.FFT, x.astype(np.complex64), (8,)),
                                  (F.FftType.RFFT, x, (8,)), (F.FftType.IRFFT, np.fft.rfft(x), (8,))):
        got = run_rule(np, F.fft_p, [op], dict(fft_type=fft_type, fft_lengths=lengths))
        want = F.fft_p.impl(op, fft_type=fft_type, fft_lengths=lengths)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _matrices(rng, batch, n, dtype):
    a = rng.standard_normal(batch + (n, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(batch + (n, n))
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_linalg_factorisations(dtype, batch):
    rng = np.random.default_rng(7)
    a = _matrices(rng, batch, 4, dtype)
    spd = (a @ np.conj(np.swapaxes(a, -1, -2)) + 4 * np.eye(4)).astype(dtype)
    if batch:
        spd[(0,) * len(batch)] = -np.eye(4)   # not positive definite: NaN for that matrix only
    same(run_rule(np, LA.cholesky_p, [spd], {}), LA.cholesky_p.impl(spd))
    for full in (True, False):
        check_results(LA.qr_p, [a[..., :, :3]], dict(full_matrices=full))
        check_results(LA.svd_p, [a[..., :3, :]], dict(full_matrices=full, compute_uv=True))
    check_results(LA.svd_p, [a], dict(full_matrices=False, compute_uv=False))
    if np.dtype(dtype).kind == "f":   # the device library's lu (not an eager rule: real matrices only)
        from ember.backends.cuda.library import DEVICE_LIBRARY
        singular = a.copy()
        singular[..., :, 1] = 0
        for m in (a, a[..., :3, :], a[..., :, :3], singular):
            for g, w in zip(DEVICE_LIBRARY[LA.lu_p](np, m), LA.lu_p.impl(m)):
                same(g, w)
    for lower in (True, False):
        check_results(LA.eigh_p, [spd], dict(lower=lower))


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("batch", [(), (3,)])
def test_triangular_solve(dtype, batch):
    rng = np.random.default_rng(8)
    a = _matrices(rng, batch, 4, dtype) + 3 * np.eye(4, dtype=dtype)
    b = _matrices(rng, batch, 4, dtype)[..., :, :2]
    singular = a.copy()
    singular[..., 1, 1] = 0   # a zero pivot: LAPACK refuses, the substitution gives inf/NaN
    one_singular = a.copy()
    one_singular[(0,) * len(batch) + (2, 2)] = 0   # the whole batch is substituted then
    for m in (a, singular, one_singular):
        for left_side, lower, transpose_a, conjugate_a, unit in (
                (True, True, False, False, False), (True, False, True, False, False),
                (False, True, False, True, False), (False, False, True, True, True)):
            rhs = b if left_side else np.swapaxes(b, -1, -2).copy()
            params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                          conjugate_a=conjugate_a, unit_diagonal=unit)
            with np.errstate(all="ignore"):
                want = LA.triangular_solve_p.impl(m, rhs, **params)
            same(run_rule(np, LA.triangular_solve_p, [m, rhs], params), want)


def test_every_rule_is_exercised_here():
    """A primitive gaining a rule must gain a row in this file's tables."""
    tested = set(UNARY_FLOAT + UNARY_INT + BINARY_ANY + BINARY_FLOAT + BINARY_INT) | {
        E.integer_pow_p, E.select_n_p, E.clamp_p, C.convert_element_type_p, R.reduce_sum_p,
        R.reduce_prod_p, R.reduce_max_p, R.reduce_min_p, R.reduce_and_p, R.reduce_or_p,
        R.reduce_xor_p, R.argmax_p, R.argmin_p, CU.cumsum_p, CU.cumprod_p, I.gather_p, *DEVICE_LIBRARY_ROWS, RND.threefry2x32_p, K.dot_general_p, S.transpose_p, S.reshape_p,
        S.rev_p, S.squeeze_p, S.expand_dims_p, M.stop_gradient_p, S.broadcast_in_dim_p, S.slice_p,
        S.pad_p, S.concatenate_p, S.iota_p}
    missing = sorted(p.name for p in covered() - tested)
    assert not missing, missing



def _gather_equations():
    """gather equations as ember.numpy emits them (advanced indexing, take,
    take_along_axis, fill mode, vmap's batching dims), with their operand avals."""
    import ember
    import ember.numpy as enp
    x = enp.zeros((4, 5, 3))
    i = enp.zeros((2, 3), dtype=enp.int32)
    j = enp.zeros((4, 5, 3), dtype=enp.int32)
    fns = [lambda x, i: x[i], lambda x, i: x[:, i], lambda x, i: x[i, 1:3], lambda x, i: x[i, i],
           lambda x, i: x[..., i % 3],
           lambda x, i: enp.take(x, i, axis=1, mode="fill", fill_value=-1.0),
           lambda x, i: enp.take(x, i, axis=2, mode="clip"),
           lambda x, i: ember.vmap(lambda r, k: r[k])(x, i[:, :4].reshape(-1)[:4] % 5)]
    out = []
    for f in fns:
        out += [e for e in ember.make_graph(f)(x, i).equations if e.prim.name == "gather"]
    out += [e for e in ember.make_graph(lambda x, j: enp.take_along_axis(x, j, axis=1))(x, j).equations
            if e.prim.name == "gather"]
    return out


GATHERS = _gather_equations()


@pytest.mark.parametrize("k", range(len(GATHERS)))
@SETTINGS
@given(data=st.data())
def test_gather_as_ember_numpy_emits_it(k, data):
    from ember.fx.prims.indexing import gather_p
    eq = GATHERS[k]
    op_aval, idx_aval = (v.aval for v in eq.inputs)
    d = data.draw(st.sampled_from([np.dtype("float32"), BF16, np.dtype("int8"), np.dtype(bool)]))
    x = data.draw(values(d, tuple(op_aval.shape)))
    n = int(np.prod(idx_aval.shape, dtype=np.int64))
    idx = np.array(data.draw(st.lists(st.integers(-7, 7), min_size=n, max_size=n)),
                   idx_aval.dtype).reshape(idx_aval.shape)
    check(gather_p, [x, idx], eq.params)
