"""The jax.numpy names ember.numpy gained to close the gap with JAX: polynomials and roots,
window functions and i0, insert / resize / trim_zeros / block, put / place / fill_diagonal,
packbits / unpackbits, matvec / vecmat, unwrap, spacing, histogramdd, the index tricks
(mgrid, ogrid, r_, c_, s_, index_exp), apply_over_axes, mask_indices, isscalar / iterable,
linalg.tensorinv / tensorsolve and the dtype aliases. Values against numpy, derivatives
against finite differences, jit and vmap against eager / a Python loop, and the errors."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember.testing import check_grads, check_vmap

RNG = np.random.default_rng(1234)


def _eq(got, want, rtol=1e-10, atol=1e-12):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# --- polynomials ------------------------------------------------------------------------

@settings(max_examples=20, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.sampled_from(["float64", "float32", "int32"]))
def test_poly_arithmetic_matches_numpy(n, m, dtype):
    r = np.random.default_rng(n * 10 + m)
    a = r.integers(-4, 5, size=n).astype(dtype)
    b = r.integers(-4, 5, size=m).astype(dtype)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else {}
    for ours, ref in ((enp.polyadd, np.polyadd), (enp.polysub, np.polysub)):
        got = ours(a, b)
        want = ref(a, b)
        # numpy strips the leading zeros of a sum; JAX (and ember) keep the static length
        _eq(got[got.shape[0] - want.shape[0]:], want, **tol)
        assert got.dtype == want.dtype
    _eq(enp.polymul(a, b), np.convolve(a, b), **tol)
    assert enp.polymul(a, b).dtype == np.dtype("float32" if dtype == "int32" else dtype)
    if b[0] != 0:
        q, rem = enp.polydiv(a.astype("float64"), b.astype("float64"))
        qn, rn = np.polydiv(a.astype("float64"), b.astype("float64"))
        _eq(q, qn, rtol=1e-9, atol=1e-9)
        rem = np.asarray(rem)
        assert rem.shape == (n,)
        _eq(rem[n - rn.shape[0]:], rn, rtol=1e-9, atol=1e-9)
        assert np.all(np.abs(rem[:n - rn.shape[0]]) < 1e-9)


def test_polymul_trim_and_empty():
    _eq(enp.polymul(np.array([0.0, 0.0, 1.0, 2.0]), np.array([1.0, 1.0]),
                    trim_leading_zeros=True), [1.0, 3.0, 2.0])
    _eq(enp.polymul(np.array([0.0, 1.0]), np.array([1.0])), [0.0, 1.0])
    _eq(enp.polymul(np.zeros(0), np.array([1.0, 2.0])), [0.0, 0.0])
    q, r = enp.polydiv(np.array([0.0, 1.0, -3.0, 2.0]), np.array([1.0, -1.0]),
                       trim_leading_zeros=True)
    _eq(q, [0.0, 1.0, -2.0])
    assert r.shape == (1,)
    with pytest.raises(ember.ConcretizationError, match="trim_leading_zeros"):
        ember.jit(lambda p: enp.polymul(p, p, trim_leading_zeros=True))(np.ones(2))


@pytest.mark.parametrize("m", [0, 1, 2, 5])
def test_polyder_polyint_match_numpy(m):
    p = np.array([3.0, -1.0, 2.0, 0.5, 4.0])
    _eq(enp.polyder(p, m), np.polyder(p, m) if m < 5 else np.zeros(0))
    _eq(enp.polyint(p, m), np.polyint(p, m))
    if m:
        _eq(enp.polyint(p, m, k=2.5), np.polyint(p, m, k=2.5))
        k = np.arange(1.0, m + 1)
        _eq(enp.polyint(p, m, k=k), np.polyint(p, m, k=k))
    assert enp.polyder(np.array([1, 2, 3], np.int32)).dtype == enp.float32   # ints: floats
    _eq(enp.polyint(enp.polyder(p), k=p[-1]), p)


def test_poly_from_roots_and_matrix():
    z = np.array([1.0, -2.0, 0.5])
    _eq(enp.poly(z), np.poly(z))
    _eq(enp.poly(np.float64(3.0)), [1.0, -3.0])     # JAX: a 0-d input is one root
    _eq(enp.poly(np.zeros(0)), np.poly(np.zeros(0)))
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    _eq(np.asarray(enp.poly(a)).real, np.poly(a), rtol=1e-9)
    assert enp.poly(np.array([1, 2], np.int32)).dtype == enp.float32
    with pytest.raises(ValueError, match="poly: input must be"):
        enp.poly(np.ones((2, 3)))


def _sorted_roots(r):
    r = np.asarray(r)
    return r[np.lexsort((r.imag.round(6), r.real.round(6)))]


@pytest.mark.parametrize("p", [[1.0, -3.0, 2.0], [0.0, 0.0, 2.0, -4.0], [1.0, 0.0, 1.0],
                               [2.0, 0.0, 0.0], [5.0], [0.0, 0.0], [1.0, -6.0, 11.0, -6.0]])
def test_roots_match_numpy(p):
    p = np.array(p)
    got, want = enp.roots(p), np.roots(p)
    assert got.shape == want.shape and np.iscomplexobj(np.asarray(got))
    np.testing.assert_allclose(_sorted_roots(got), _sorted_roots(want.astype(complex)),
                               atol=1e-7)


def test_roots_strip_zeros_false_under_jit():
    f = ember.jit(lambda p: enp.roots(p, strip_zeros=False))
    r = np.asarray(f(np.array([0.0, 0.0, 1.0, -3.0, 2.0])))
    assert r.shape == (4,)
    np.testing.assert_allclose(np.sort(r[:2].real), [1.0, 2.0], atol=1e-9)
    assert np.isnan(r[2:]).all()
    assert np.isnan(np.asarray(f(np.zeros(3)))).all()
    with pytest.raises(ember.ConcretizationError, match="strip_zeros=False"):
        ember.jit(enp.roots)(np.array([1.0, 2.0]))


def test_poly_family_derivatives():
    p = np.array([1.0, -2.0, 0.5])
    q = np.array([0.3, 2.0])
    check_grads(lambda a, b: enp.polymul(a, b), (p, q), order=2)
    check_grads(lambda a, b: enp.polyadd(a, b) * enp.polysub(b, a), (p, q), order=1)
    check_grads(lambda a, b: enp.polydiv(a, b)[0], (p, q), order=1)
    check_grads(lambda a, b: enp.polydiv(a, b)[1], (p, q), order=1)
    check_grads(lambda a: enp.polyder(a, 1), (p,), order=1)
    check_grads(lambda a, k: enp.polyint(a, 2, k), (p, np.array([1.0, 2.0])), order=1)
    check_grads(lambda z: enp.poly(z), (np.array([1.0, 2.0, -0.5]),), order=2)
    # distinct real roots: their derivative is -p'(r)^-1 dp(r)
    check_grads(lambda a: enp.roots(a).real, (np.array([1.0, -3.0, 2.0]),), order=1)
    check_vmap(lambda a: enp.roots(a, strip_zeros=False),
               (np.array([[1.0, -3.0, 2.0], [1.0, -5.0, 6.0]]),))


def test_polymul_vmap_and_jit():
    a = RNG.normal(size=(4, 3))
    b = RNG.normal(size=(4, 2))
    check_vmap(enp.polymul, (a, b))
    check_vmap(lambda x: enp.polyder(x, 2), (a,))
    _eq(ember.jit(enp.polyint)(a[0]), np.polyint(a[0]))


# --- windows and i0 ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["hamming", "hanning", "blackman", "bartlett"])
@pytest.mark.parametrize("M", [-1, 0, 1, 2, 7, 16])
def test_windows_match_numpy(name, M):
    got, want = getattr(enp, name)(M), getattr(np, name)(M)
    assert got.dtype == enp.float32
    _eq(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("M", [0, 1, 2, 9])
@pytest.mark.parametrize("beta", [0.0, 5.0, 14.0])
def test_kaiser_matches_numpy(M, beta):
    _eq(enp.kaiser(M, beta), np.kaiser(M, beta), rtol=1e-5, atol=1e-6)


def test_kaiser_traced_beta_and_grad():
    f = ember.jit(lambda b: enp.kaiser(6, b))
    _eq(f(np.float64(3.0)), np.kaiser(6, 3.0), rtol=1e-12)
    check_grads(lambda b: enp.kaiser(6, b), (np.float64(3.0),), order=1)
    with pytest.raises(ValueError, match="kaiser: beta must be a scalar"):
        enp.kaiser(4, np.ones(2))
    with pytest.raises(TypeError, match="hamming"):
        enp.hamming(2.5)


def test_i0_values_dtypes_and_grad():
    x = np.linspace(-40.0, 40.0, 81)
    _eq(enp.i0(x), np.i0(x), rtol=1e-12)
    _eq(enp.i0(np.float64(0.0)), 1.0)
    assert enp.i0(np.array([1, 2], np.int32)).dtype == enp.float32
    assert enp.i0(np.zeros(0, np.float32)).shape == (0,)
    check_grads(enp.i0, (np.array([-2.0, 0.3, 1.5]),), order=2)
    check_vmap(enp.i0, (RNG.normal(size=(3, 2)),))
    with pytest.raises(TypeError, match="i0: complex input"):
        enp.i0(np.array([1j]))


# --- insert / resize / trim_zeros / block -----------------------------------------------

A34 = np.arange(12.0).reshape(3, 4)


@pytest.mark.parametrize("obj,values,axis", [
    (1, 9.0, None), (5, [1.0, 2.0], None), (1, [7.0, 8.0, 9.0], 1), ([0, 2], [5.0, 6.0], 1),
    (slice(0, 3), 0.0, 0), ([3, -1, 0], [1.0, 2.0, 3.0], 1), (np.int64(2), np.ones((2, 3)), 1),
    ([], np.zeros((0, 4)), 0), (1, [[1.0, 2.0, 3.0, 4.0]], 0), ([1], [[1.0, 2.0, 3.0, 4.0]], 0),
    (-1, [1.0, 2.0, 3.0], 1), (4, 0.0, 1), ([1, 1], [[10.0], [20.0]], 0)])
def test_insert_matches_numpy(obj, values, axis):
    _eq(enp.insert(A34, obj, values, axis=axis), np.insert(A34, obj, values, axis=axis))


def test_insert_dtypes_traced_and_grad():
    got = enp.insert(np.arange(3, dtype=np.int32), 1, 2.7)
    assert got.dtype == enp.int32 and got.tolist() == [0, 2, 1, 2]
    assert enp.insert(np.float64(1.0), 0, 2.0).tolist() == [2.0, 1.0]    # 0-d: flattened
    f = ember.jit(lambda i, v: enp.insert(enp.arange(5.0), i, v))
    _eq(f(np.array([1, 3]), np.array([9.0, 8.0])), np.insert(np.arange(5.0), [1, 3], [9., 8.]))
    _eq(f(np.array([7, -9]), np.array([9.0, 8.0])), [8.0, 0.0, 1.0, 2.0, 3.0, 4.0, 9.0])  # clipped
    check_grads(lambda x, v: enp.insert(x, [0, 2], v), (np.array([1.0, 2.0, 3.0]),
                                                       np.array([4.0, 5.0])), order=2)
    check_vmap(lambda x, v: enp.insert(x, 1, v), (RNG.normal(size=(3, 4)), RNG.normal(size=3)))
    check_vmap(lambda i: enp.insert(np.arange(4.0), i, 9.0), (np.array([0, 2, 4]),))
    with pytest.raises(ValueError, match="insert: the indices obj must be integers"):
        enp.insert(A34, np.array([0.5]), 1.0)
    with pytest.raises(ValueError, match="insert: obj must be"):
        enp.insert(A34, np.ones((2, 2), int), 1.0)


@pytest.mark.parametrize("shape", [(7,), (2, 3), 5, (0,), (3, 0), (), (2, 2, 2)])
def test_resize_matches_numpy(shape):
    x = np.arange(4)
    _eq(enp.resize(x, shape), np.resize(x, shape))
    _eq(enp.resize(np.zeros(0), 3), np.zeros(3))
    with pytest.raises(ValueError, match="non-negative"):
        enp.resize(x, (-1, 2))


def test_trim_zeros():
    x = np.array([0, 0, 1, 0, 2, 0, 0])
    for trim in ("f", "b", "fb", "FB"):
        _eq(enp.trim_zeros(x, trim), np.trim_zeros(x, trim))
    _eq(enp.trim_zeros(np.zeros(3)), np.zeros(0))
    _eq(enp.trim_zeros(np.zeros(0)), np.zeros(0))
    m = np.zeros((4, 5))
    m[1:3, 1] = 1.0
    m[2, 3] = 2.0
    _eq(enp.trim_zeros(m), np.trim_zeros(m))
    _eq(enp.trim_zeros(m, axis=1), np.trim_zeros(m, axis=1))
    with pytest.raises(ember.ConcretizationError, match="trim_zeros"):
        ember.jit(enp.trim_zeros)(np.ones(3))


def test_block_matches_numpy():
    a, b, c = np.ones((2, 2)), 2 * np.ones((2, 1)), np.arange(3.0)
    for arg in ([[a, b], [c[None]]], [1, 2, 3], [[1, 2], [3, 4]], [c, c], 5.0, [[[a]]],
                [a, np.ones((2, 3))]):
        _eq(enp.block(arg), np.block(arg))
    with pytest.raises(ValueError, match="empty list"):
        enp.block([])
    with pytest.raises(ValueError, match="mismatched"):
        enp.block([[1], 2])
    with pytest.raises(TypeError, match="tuple"):
        enp.block((a, a))
    check_grads(lambda x, y: enp.block([[x, y], [y, x]]), (a, 2 * a), order=1)


# --- put / place / fill_diagonal / mask_indices -----------------------------------------

@pytest.mark.parametrize("ind,v,mode", [([0, 5, 11], [9.0, 8.0, 7.0], None),
                                        ([1, 2, 3], [-1.0], None), ([-1, 20], [5.0, 6.0], "clip"),
                                        ([-1, 20], [5.0, 6.0], "wrap"), ([-1, 2], [5.0, 6.0], None)])
def test_put_matches_numpy(ind, v, mode):
    # in-range indices: numpy's put, whose default mode is 'raise' for the rest
    want = A34.copy()
    np.put(want, ind, v, mode=mode or "raise")
    _eq(enp.put(A34, np.array(ind), np.array(v), mode=mode, inplace=False), want)


def test_put_out_of_range_and_errors():
    # JAX's default mode: negatives wrap once, the rest clamp (5 -> 2, -7 -> 0)
    _eq(enp.put(np.zeros(3), np.array([5, 1, -7]), np.array([1.0, 2.0, 3.0]), inplace=False),
        [3.0, 2.0, 1.0])
    _eq(enp.put(np.zeros(3), np.zeros(0, int), 1.0, inplace=False), np.zeros(3))
    with pytest.raises(ValueError, match="inplace=False"):
        enp.put(np.zeros(3), [0], 1.0)
    with pytest.raises(ValueError, match="mode"):
        enp.put(np.zeros(3), [0], 1.0, mode="nope", inplace=False)
    with pytest.raises(NotImplementedError, match="raise"):
        enp.put(np.zeros(3), [0], 1.0, mode="raise", inplace=False)
    f = ember.jit(lambda x, i, v: enp.put(x, i, v, inplace=False))
    _eq(f(np.zeros(4), np.array([3, 0]), np.array([1.0, 2.0])), [2.0, 0, 0, 1.0])
    check_grads(lambda x, v: enp.put(x, [0, 2], v, inplace=False),
                (np.arange(4.0), np.array([1.0, 3.0])), order=1)


def test_place():
    want = A34.copy()
    np.place(want, want % 3 == 0, [10.0, 20.0])
    _eq(enp.place(A34, A34 % 3 == 0, np.array([10.0, 20.0]), inplace=False), want)
    f = ember.jit(lambda x: enp.place(x, x > 4, enp.asarray([1.0, 2.0]), inplace=False))
    _eq(f(np.arange(8.0)), [0, 1, 2, 3, 4, 1, 2, 1])
    _eq(enp.place(np.ones(2), np.array([True, False]), np.zeros(0), inplace=False), np.ones(2))
    with pytest.raises(ValueError, match="inplace=False"):
        enp.place(np.ones(2), np.array([True, False]), 0.0)
    with pytest.raises(ValueError, match="place: mask must have the shape"):
        enp.place(np.ones(2), np.array([True]), 0.0, inplace=False)


@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((5, 2), True), ((5, 2), False),
                                        ((2, 5), False), ((3, 3, 3), False), ((7, 3), True),
                                        ((0, 0), False)])
def test_fill_diagonal_matches_numpy(shape, wrap):
    for val in (np.array([1.0, 2.0]), 5.0):
        want = np.zeros(shape)
        np.fill_diagonal(want, val, wrap=wrap)
        _eq(enp.fill_diagonal(np.zeros(shape), val, wrap=wrap, inplace=False), want)


def test_fill_diagonal_errors_and_grad():
    with pytest.raises(ValueError, match="inplace=False"):
        enp.fill_diagonal(np.zeros((2, 2)), 1.0)
    with pytest.raises(ValueError, match="at least 2-D"):
        enp.fill_diagonal(np.zeros(3), 1.0, inplace=False)
    with pytest.raises(ValueError, match="equal"):
        enp.fill_diagonal(np.zeros((2, 3, 2)), 1.0, inplace=False)
    check_grads(lambda x, v: enp.fill_diagonal(x, v, inplace=False),
                (RNG.normal(size=(3, 3)), np.array([1.0, 2.0, 3.0])), order=1)
    check_vmap(lambda x: enp.fill_diagonal(x, 0.0, inplace=False), (RNG.normal(size=(2, 3, 3)),))


def test_mask_indices():
    for k in (-1, 0, 1):
        for mf, nf in ((enp.triu, np.triu), (enp.tril, np.tril)):
            for g, w in zip(enp.mask_indices(4, mf, k), np.mask_indices(4, nf, k)):
                _eq(g, w)
    rows, cols = ember.jit(lambda: enp.mask_indices(3, enp.tril, size=6))()
    assert rows.tolist() == [0, 1, 1, 2, 2, 2] and cols.tolist() == [0, 0, 1, 0, 1, 2]


# --- bits -------------------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(st.sampled_from([(0,), (5,), (3, 10), (2, 3, 17), (), (8,)]), st.integers(0, 3),
       st.sampled_from(["big", "little"]), st.sampled_from([None, 0, 3, -2, 100]))
def test_packbits_unpackbits_match_numpy(shape, axis, bitorder, count):
    x = np.random.default_rng(len(shape) + axis).integers(0, 3, size=shape)
    ax = None if axis >= len(shape) else axis
    packed = enp.packbits(x, axis=ax, bitorder=bitorder)
    want = np.packbits(x, axis=ax, bitorder=bitorder)
    assert packed.dtype == enp.uint8
    _eq(packed, want)
    if want.size == 0 and count:
        return   # numpy fills these with uninitialised memory
    _eq(enp.unpackbits(want, axis=ax, count=count, bitorder=bitorder),
        np.unpackbits(want, axis=ax, count=count, bitorder=bitorder))


def test_bits_dtypes_jit_and_errors():
    assert enp.packbits(np.array([True, False, True])).tolist() == [160]
    assert enp.packbits(np.array([-1, 0, 300], np.int16)).tolist() == [160]
    _eq(ember.jit(enp.unpackbits)(enp.asarray([3, 255], dtype=enp.uint8)),
        np.unpackbits(np.array([3, 255], np.uint8)))
    with pytest.raises(TypeError, match="packbits: expected an integer or boolean array"):
        enp.packbits(np.ones(3))
    with pytest.raises(TypeError, match="unpackbits: expected a uint8 array, got int32"):
        enp.unpackbits(np.ones(3, np.int32))
    with pytest.raises(ValueError, match="bitorder"):
        enp.packbits(np.ones(3, int), bitorder="middle")


# --- products, unwrap, spacing ----------------------------------------------------------

@pytest.mark.parametrize("sa,sb", [((3, 4), (4,)), ((2, 3, 4), (4,)), ((3, 4), (2, 4)),
                                   ((1, 3, 4), (5, 1, 4)), ((0, 4), (4,))])
def test_matvec_vecmat_match_numpy(sa, sb):
    a, b = RNG.normal(size=sa), RNG.normal(size=sb)
    _eq(enp.matvec(a, b), np.matvec(a, b), rtol=1e-10)
    am = np.swapaxes(a, -1, -2)
    _eq(enp.vecmat(b, am), np.vecmat(b, am), rtol=1e-10)
    vc = b + 1j * RNG.normal(size=sb)
    _eq(enp.vecmat(vc, am), np.vecmat(vc, am), rtol=1e-10)     # conjugates the vector
    _eq(enp.matvec(am.swapaxes(-1, -2) + 0j, vc), np.matvec(a + 0j, vc), rtol=1e-10)


def test_matvec_vecmat_grad_vmap_errors():
    a, v = RNG.normal(size=(3, 4)), RNG.normal(size=4)
    check_grads(enp.matvec, (a, v), order=2)
    check_grads(enp.vecmat, (RNG.normal(size=3), a), order=2)
    check_vmap(enp.matvec, (RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 4))))
    with pytest.raises(TypeError, match="matvec: the contracted axis"):
        enp.matvec(a, np.ones(3))
    with pytest.raises(ValueError, match="matvec: x1 must be at least 2-D"):
        enp.matvec(v, v)
    with pytest.raises(ValueError, match="vecmat: x1 must be at least 1-D and x2 at least 2-D"):
        enp.vecmat(v, v)


def test_unwrap_matches_numpy():
    x = np.cumsum(RNG.normal(size=(3, 20)) * 2, axis=1)
    w = np.angle(np.exp(1j * x))
    _eq(enp.unwrap(w, axis=1), np.unwrap(w, axis=1))
    _eq(enp.unwrap(w.T, axis=0), np.unwrap(w.T, axis=0))
    _eq(enp.unwrap(w, discont=1.0, period=5.0), np.unwrap(w, discont=1.0, period=5.0))
    _eq(enp.unwrap(np.zeros((2, 0))), np.zeros((2, 0)))
    assert enp.unwrap(np.arange(4)).dtype == enp.float32   # the float period promotes
    # integer period: JAX's rule (numpy skips its +period/2 tie fix-up for integers)
    assert enp.unwrap(np.arange(5) * 3, period=5).tolist() == [0, 2, 4, 6, 8]
    check_grads(lambda p: enp.unwrap(p), (w[0, :8],), order=1)
    check_vmap(enp.unwrap, (w,))
    _eq(ember.jit(enp.unwrap)(w[0]), np.unwrap(w[0]))
    with pytest.raises(ValueError, match="unwrap: complex input"):
        enp.unwrap(np.array([1j, 2j]))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_spacing_matches_numpy(dtype):
    x = np.array([-0.0, 0.0, -1.0, 1e-40, 3.5, -3e4, 6e4, 1.0], dtype=dtype)
    _eq(enp.spacing(x), np.spacing(x), rtol=0, atol=0)
    with np.errstate(invalid="ignore", over="ignore"):
        got = np.asarray(enp.spacing(np.array([np.inf, -np.inf, np.nan], dtype=dtype)))
    assert np.isnan(got).all()
    assert enp.spacing(np.int32(3)).dtype == enp.float32
    assert float(ember.jit(enp.spacing)(np.float32(1.0))) == float(np.finfo(np.float32).eps)
    with pytest.raises(ValueError, match="spacing: complex"):
        enp.spacing(np.array([1j]))


# --- histogramdd ------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(bins=4), dict(bins=[2, 3, 4]),
                                dict(bins=3, range=[(-1, 1), None, (-2, 2)]),
                                dict(bins=[np.array([-2.0, 0, 2]), 3, np.array([-1.0, 0, 1, 5])]),
                                dict(bins=3, density=True)])
def test_histogramdd_matches_numpy(kw):
    x = RNG.normal(size=(60, 3))
    h, edges = enp.histogramdd(x, **kw)
    hn, en = np.histogramdd(x, **kw)
    _eq(h, hn)
    for g, w in zip(edges, en):
        _eq(g, w)
    w = RNG.random(60)
    _eq(enp.histogramdd(x, bins=3, weights=w)[0], np.histogramdd(x, bins=3, weights=w)[0])


def test_histogramdd_1d_jit_errors():
    x = RNG.normal(size=20)
    _eq(enp.histogramdd(x, bins=5)[0], np.histogramdd(x, bins=5)[0])
    f = ember.jit(lambda s: enp.histogramdd(s, bins=2, range=[(0, 1), (0, 1)])[0])
    _eq(f(np.array([[0.1, 0.2], [0.7, 0.9], [0.6, 0.1]])), [[1.0, 0.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="one entry per dimension"):
        enp.histogramdd(np.ones((3, 2)), bins=[2, 2, 2])


# --- index tricks -----------------------------------------------------------------------

def test_mgrid_ogrid_match_numpy():
    _eq(enp.mgrid[0:5, 1:3], np.mgrid[0:5, 1:3])
    _eq(enp.mgrid[0:1:5j, 2:3], np.mgrid[0:1:5j, 2:3], rtol=1e-6)
    _eq(enp.mgrid[-1:1:0.5], np.mgrid[-1:1:0.5])
    _eq(enp.mgrid[3:0:-1], np.mgrid[3:0:-1])
    for g, w in zip(enp.ogrid[0:5, 1:3:0.5], np.ogrid[0:5, 1:3:0.5]):
        _eq(g, w)
    assert enp.mgrid[0:3].dtype == enp.int32 and enp.mgrid[0:1:3j].dtype == enp.float32
    with pytest.raises(ValueError, match="mgrid: every slice needs a stop"):
        enp.mgrid[0:]
    with pytest.raises(ember.ConcretizationError, match="mgrid"):
        ember.jit(lambda n: enp.mgrid[0:n])(3)


@pytest.mark.parametrize("key", [
    (slice(1, 4), 0, np.array([7, 8])), ("-1", np.ones((2, 2)), np.zeros((2, 1))),
    ("0,2", [1, 2, 3], [4, 5, 6]), ("0,2,0", [1, 2, 3], [4, 5, 6]), ("1,2,0", [1, 2, 3], [4, 5, 6]),
    ("r", [1, 2, 3], [4, 5, 6]), ("c", [1, 2, 3], [4, 5, 6]), (slice(-1, 1, 6j), [0] * 3, 5, 6),
    (np.float64(2.5),)])
@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")   # numpy's np.matrix for 'r'/'c'
def test_r_matches_numpy(key):
    _eq(enp.r_[key], np.r_[key], rtol=1e-6)


def test_c_s_index_exp():
    a, b = np.array([1, 2, 3]), np.array([4, 5, 6])
    _eq(enp.c_[a, b], np.c_[a, b])
    _eq(enp.c_[a[None], 0, 0, b[None]], np.c_[a[None], 0, 0, b[None]])
    assert enp.s_[1:2, ::3] == (slice(1, 2), slice(None, None, 3)) and enp.index_exp[2] == (2,)
    x = enp.arange(10)
    assert x[enp.s_[2:8:2]].tolist() == [2, 4, 6]
    with pytest.raises(ValueError, match="directive"):
        enp.r_["nope", a]
    with pytest.raises(ValueError, match="must come first"):
        enp.r_[a, "0"]


# --- the rest ---------------------------------------------------------------------------

def test_apply_over_axes():
    x = np.arange(24.0).reshape(2, 3, 4)
    _eq(enp.apply_over_axes(enp.sum, x, [0, -1]), np.apply_over_axes(np.sum, x, [0, -1]))
    _eq(enp.apply_over_axes(lambda a, ax: enp.cumsum(a, axis=ax), x, (1,)),
        np.apply_over_axes(lambda a, ax: np.cumsum(a, axis=ax), x, (1,)))
    with pytest.raises(ValueError, match="apply_over_axes: func must return"):
        enp.apply_over_axes(lambda a, ax: enp.sum(a), x, [0])


def test_isscalar_iterable_like_jax():
    for v, want in ((1.0, True), (np.float32(1), True), (np.array(1.0), True),
                    (enp.asarray(2), True), ("a", True), (np.array([1]), False),
                    (enp.ones(2), False), ([1], False), (None, False)):
        assert enp.isscalar(v) is want, v
    assert enp.iterable([1]) and enp.iterable(enp.ones(2)) and not enp.iterable(2)
    assert not enp.iterable(enp.asarray(1.0))


def test_tensorinv_tensorsolve_match_numpy():
    a = RNG.normal(size=(4, 6, 8, 3))
    _eq(enp.linalg.tensorinv(a, ind=2), np.linalg.tensorinv(a, ind=2), rtol=1e-8, atol=1e-10)
    a = RNG.normal(size=(6, 4, 2, 3, 4))
    b = RNG.normal(size=(6, 4))
    _eq(enp.linalg.tensorsolve(a, b), np.linalg.tensorsolve(a, b), rtol=1e-8, atol=1e-10)
    a = RNG.normal(size=(2, 6, 3))
    b = RNG.normal(size=(6,))
    _eq(enp.linalg.tensorsolve(a, b, axes=(0, 2)), np.linalg.tensorsolve(a, b, axes=(0, 2)),
        rtol=1e-8, atol=1e-10)
    check_grads(lambda m: enp.linalg.tensorinv(m, ind=1), (RNG.normal(size=(4, 2, 2)) +
                                                          np.eye(4).reshape(4, 2, 2) * 3,),
                order=1)
    with pytest.raises(ValueError, match="tensorinv: the first 1 axes"):
        enp.linalg.tensorinv(np.ones((2, 3)), 1)
    with pytest.raises(ValueError, match="tensorinv: ind must be a positive"):
        enp.linalg.tensorinv(np.ones((2, 2)), 0)
    with pytest.raises(ValueError, match="tensorsolve"):
        enp.linalg.tensorsolve(np.ones((2, 3)), np.ones(3))


def test_dtype_aliases_are_jax_s():
    assert enp.single is enp.float32 and enp.double is enp.float64
    assert enp.csingle is enp.complex64 and enp.cdouble is enp.complex128
    assert enp.float_ is enp.float64 and enp.complex_ is enp.complex128
    assert enp.int_ is enp.int64 and enp.uint is enp.uint64
    assert enp.zeros(2, enp.cdouble).dtype == np.complex128 and enp.int_(3).dtype == np.int64
    for n in ("single", "double", "csingle", "cdouble", "float_", "complex_", "int_", "uint",
              "insert", "roots", "kaiser", "packbits", "mgrid", "r_", "histogramdd", "block"):
        assert n in enp.__all__, n
