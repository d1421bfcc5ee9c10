"""Tests of the reduction primitives: values vs numpy, abstract eval, errors,
derivatives, transposes and batching."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import lax
from ember.fx.core import get_aval
from ember.fx.ir import typecheck
from ember.fx.prims import reduce as R
from ember.testing import check_grads, check_vmap

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
INTS = [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32, np.uint64]
FLOATS = [F16, BF16, np.float32, np.float64]
ALL = [np.bool_] + INTS + FLOATS

SHAPES_AXES = [((), ()), ((0,), (0,)), ((5,), (0,)), ((3, 4), (0, 1)), ((3, 4), (1,)),
               ((2, 3, 4), (0, 2)), ((2, 0, 3), (1,)), ((2, 0, 3), (0, 2)), ((2, 3, 4), ())]


def rand(rng, shape, dtype):
    d = np.dtype(dtype)
    if d == np.bool_:
        return rng.random(shape) < 0.5
    if d.kind in "iu":
        info = np.iinfo(d)
        return rng.integers(max(info.min, -20), min(info.max, 20) + 1, shape).astype(d)
    if d.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(d)
    return rng.standard_normal(shape).astype(d)


def wide(x):
    """A numpy reference type: int64 for integers (wraps mod 2**64), float64 for floats."""
    d = x.dtype
    if d.kind in "iu":
        return x.astype(np.int64)
    if d.kind == "c":
        return x.astype(np.complex128)
    if d == np.bool_:
        return x
    return x.astype(np.float64)


def tol(d):
    d = np.dtype(d)
    return {F16: 3e-3, BF16: 2e-2, np.dtype(np.float32): 1e-5,
            np.dtype(np.complex64): 1e-5}.get(d, 1e-12)


def run(prim, *args, **params):
    """Bind eagerly and check the impl's result against abstract_eval."""
    out = prim.bind(*args, **params)
    want = prim.abstract_eval(*[get_aval(a) for a in args], **params)
    raw = prim.impl(*args, **params)
    assert raw.shape == want.shape and raw.dtype == want.dtype, (prim, raw.shape, raw.dtype, want)
    assert out.shape == want.shape and out.dtype == want.dtype
    return np.asarray(out)


def expected(name, x, axes):
    d = x.dtype
    w = wide(x)
    if name == "reduce_sum":
        return np.sum(w, axis=axes).astype(d)
    if name == "reduce_prod":
        return np.prod(w, axis=axes).astype(d)
    if name in ("reduce_max", "reduce_min"):
        ident = R.reduction_identity("max" if name == "reduce_max" else "min", d)
        f = np.max if name == "reduce_max" else np.min
        v = x.astype(np.float64) if d.kind == "f" or d == BF16 else x
        return f(v, axis=axes, initial=np.array(ident, v.dtype)[()]).astype(d)
    if d == np.bool_:
        f = {"reduce_and": np.all, "reduce_or": np.any,
             "reduce_xor": lambda v, axis: np.sum(v, axis=axis) % 2 == 1}[name]
        return np.asarray(f(x, axis=axes))
    u = {"reduce_and": np.bitwise_and, "reduce_or": np.bitwise_or,
         "reduce_xor": np.bitwise_xor}[name]
    return np.asarray(u.reduce(w, axis=axes)).astype(d)


NUMBER = ["reduce_sum", "reduce_prod"]
ORDER = ["reduce_max", "reduce_min"]
BITS = ["reduce_and", "reduce_or", "reduce_xor"]


def _allowed(name, d):
    d = np.dtype(d)
    if name in NUMBER:
        return d != np.bool_
    if name in BITS:
        return d == np.bool_ or d.kind in "iu"
    return d.kind != "c"


@pytest.mark.parametrize("name", NUMBER + ORDER + BITS)
@pytest.mark.parametrize("dtype", ALL + [np.complex64])
def test_values_vs_numpy(name, dtype):
    if not _allowed(name, dtype):
        with pytest.raises(TypeError, match=f"{name} does not accept dtype"):
            getattr(lax, name)(np.zeros(3, dtype), (0,))
        return
    rng = np.random.default_rng(0)
    prim = getattr(R, name + "_p")
    for shape, axes in SHAPES_AXES:
        x = rand(rng, shape, dtype)
        if name == "reduce_prod" and np.dtype(dtype).kind in "fc":
            x = (x / 2 + np.sign(x.real) * 0.75).astype(dtype)  # products stay O(1)
        got = run(prim, x, axes=axes)
        want = expected(name, x, axes)
        if np.dtype(dtype).kind in "fc" or np.dtype(dtype) == BF16:
            np.testing.assert_allclose(got.astype(np.complex128), want.astype(np.complex128),
                                       rtol=tol(dtype), atol=tol(dtype))
        else:
            np.testing.assert_array_equal(got, want)
        assert getattr(lax, name)(x, axes).dtype == np.dtype(dtype)


def test_integer_sums_and_products_wrap():
    x = np.array([100, 100, 100], np.int8)
    assert int(lax.reduce_sum(x, (0,))) == np.int8(np.int64(300).astype(np.int8))
    assert int(lax.reduce_prod(x, (0,))) == int(np.int64(10 ** 6).astype(np.int8))
    u = np.array([250, 10], np.uint8)
    assert int(lax.reduce_sum(u, (0,))) == 4
    big = np.array([2 ** 62, 2 ** 62, 2 ** 62], np.int64)
    assert int(lax.reduce_sum(big, (0,))) == (3 * 2 ** 62 + 2 ** 63) % 2 ** 64 - 2 ** 63


@pytest.mark.parametrize("dtype", [F16, BF16])
def test_half_precision_sums_accumulate_in_float32(dtype):
    n = 4096 if dtype == F16 else 1024
    x = np.ones(n, dtype)
    # Accumulating in the half type itself would stall at 2048 (f16) / 256 (bf16).
    assert float(lax.reduce_sum(x, (0,))) == n
    assert lax.reduce_sum(x, (0,)).dtype == dtype


@pytest.mark.parametrize("dtype", ALL)
def test_empty_reductions_give_identities(dtype):
    d = np.dtype(dtype)
    x = np.zeros((2, 0), d)
    if d != np.bool_:
        assert run(R.reduce_sum_p, x, axes=(1,)).tolist() == [0, 0]
        assert run(R.reduce_prod_p, x, axes=(1,)).tolist() == [1, 1]
    hi = True if d == np.bool_ else (np.iinfo(d).max if d.kind in "iu" else np.inf)
    lo = False if d == np.bool_ else (np.iinfo(d).min if d.kind in "iu" else -np.inf)
    assert run(R.reduce_max_p, x, axes=(1,)).tolist() == [lo, lo]
    assert run(R.reduce_min_p, x, axes=(1,)).tolist() == [hi, hi]
    if d == np.bool_ or d.kind in "iu":
        ones = True if d == np.bool_ else np.array(-1).astype(d).item()
        assert run(R.reduce_and_p, x, axes=(1,)).tolist() == [ones, ones]
        assert run(R.reduce_or_p, x, axes=(1,)).tolist() == [0, 0]
        assert run(R.reduce_xor_p, x, axes=(1,)).tolist() == [0, 0]


def test_nan_propagates_through_max_and_min():
    x = np.array([1.0, np.nan, 3.0], np.float32)
    assert np.isnan(float(lax.reduce_max(x, (0,))))
    assert np.isnan(float(lax.reduce_min(x, (0,))))


def test_weak_type_is_kept_and_negative_axes_normalise():
    x = np.ones((2, 3), np.float32)
    assert lax.reduce_sum(x, (-1,)).shape == (2,)
    assert lax.reduce_max(x, (-2, -1)).shape == ()
    g = ember.make_graph(lambda v: lax.reduce_max(lax.broadcast_in_dim(v, (3,), ()), (0,)))(1.5)
    typecheck(g)
    assert g.out_avals[0].weak_type


@pytest.mark.parametrize("axes", [(2,), (0, 0), (-1,)])
def test_bad_axes_raise_shape_errors(axes):
    from ember.fx.core import AbstractArray
    with pytest.raises(TypeError, match=r"reduce_sum: axes .* out of range or repeated"):
        R.reduce_sum_p.abstract_eval(AbstractArray((2, 3), np.float32), axes=axes)


def test_dtype_errors_are_clear():
    with pytest.raises(TypeError, match="reduce_sum does not accept dtype bool"):
        lax.reduce_sum(np.ones(3, bool), (0,))
    with pytest.raises(TypeError, match="reduce_max does not accept dtype complex64"):
        lax.reduce_max(np.ones(3, np.complex64), (0,))
    with pytest.raises(TypeError, match="reduce_or does not accept dtype float32"):
        lax.reduce_or(np.ones(3, np.float32), (0,))


# --- argmax / argmin ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("which", ["argmax", "argmin"])
def test_arg_values(dtype, which):
    rng = np.random.default_rng(1)
    npf = getattr(np, which)
    prim = getattr(R, which + "_p")
    for shape, axis in [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), 1)]:
        x = rand(rng, shape, dtype)
        got = run(prim, x, axis=axis, index_dtype=np.dtype(np.int32))
        np.testing.assert_array_equal(got, npf(wide(x), axis=axis))
        assert getattr(lax, which)(x, -1, np.int64).dtype == np.int64


def test_arg_first_occurrence_and_nan():
    x = np.array([1.0, 3.0, 3.0, 0.0, 0.0], np.float32)
    assert int(lax.argmax(x, 0, np.int32)) == 1
    assert int(lax.argmin(x, 0, np.int32)) == 3
    y = np.array([1.0, np.nan, 5.0, np.nan], np.float32)
    assert int(lax.argmax(y, 0, np.int32)) == 1
    assert int(lax.argmin(y, 0, np.int32)) == 1
    assert int(lax.argmax(y.astype(BF16), 0, np.int32)) == 1


def test_arg_errors():
    with pytest.raises(TypeError, match="argmax: cannot take the max of an empty axis"):
        lax.argmax(np.zeros((2, 0)), 1, np.int32)
    with pytest.raises(TypeError, match="index_dtype must be an integer"):
        lax.argmin(np.zeros(3), 0, np.float32)
    with pytest.raises(TypeError, match="argmax: axis 3 is out of range"):
        lax.argmax(np.zeros(3), 3, np.int32)


def test_arg_tangent_is_float0_zero():
    x = np.array([1.0, 2.0])
    _, t = ember.jvp(lambda v: lax.argmax(v, 0, np.int32), (x,), (np.ones(2),))
    assert t.dtype == ember.dtypes.float0


# --- derivatives ------------------------------------------------------------------------

def _with_zeros(rng, shape, where):
    x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    for w in where:
        x[w] = 0.0
    return x


@pytest.mark.parametrize("zeros", [[], [(1, 2)], [(0, 0), (1, 2)], [(0, 1), (0, 3)]])
@pytest.mark.parametrize("axes", [(1,), (0,), (0, 1)])
def test_prod_grads_with_zeros(zeros, axes):
    x = _with_zeros(np.random.default_rng(2), (2, 4), zeros)
    check_grads(lambda v: lax.reduce_prod(v, axes), (x,), order=2)


def test_prod_gradient_and_hessian_at_a_zero():
    x = np.array([2.0, 0.0, 3.0])
    g = ember.grad(lambda v: lax.reduce_prod(v, (0,)))(x)
    np.testing.assert_array_equal(np.asarray(g), [0.0, 6.0, 0.0])
    grad = ember.grad(lambda v: lax.reduce_prod(v, (0,)))
    h = [np.asarray(ember.jvp(grad, (x,), (e,))[1]) for e in np.eye(3)]
    np.testing.assert_array_equal(np.asarray(h), [[0, 3, 0], [3, 0, 2], [0, 2, 0]])
    g2 = ember.grad(lambda v: lax.reduce_prod(v, (0,)))(np.array([0.0, 2.0, 0.0]))
    np.testing.assert_array_equal(np.asarray(g2), [0.0, 0.0, 0.0])


def test_prod_complex_and_empty_jvp():
    x = np.array([1 + 1j, 0.5 - 2j, 0j])
    _, t = ember.jvp(lambda v: lax.reduce_prod(v, (0,)), (x,), (np.ones(3, complex),))
    want = x[1] * x[2] + x[0] * x[2] + x[0] * x[1]
    np.testing.assert_allclose(np.asarray(t), want)
    _, t0 = ember.jvp(lambda v: lax.reduce_prod(v, (1,)), (np.ones((2, 0)),), (np.ones((2, 0)),))
    np.testing.assert_array_equal(np.asarray(t0), [0.0, 0.0])


@pytest.mark.parametrize("name", ["reduce_max", "reduce_min", "reduce_sum"])
@pytest.mark.parametrize("axes", [(0,), (1,), (0, 2), (0, 1, 2)])
def test_grads(name, axes):
    x = np.random.default_rng(3).permutation(24).reshape(2, 3, 4) / 7.0  # no ties
    check_grads(lambda v: getattr(lax, name)(v, axes), (x,), order=2)


def test_max_min_ties_share_the_tangent():
    x = np.array([[1.0, 3.0, 3.0, 3.0], [2.0, 2.0, 0.0, 1.0]])
    g = ember.grad(lambda v: lax.reduce_sum(lax.reduce_max(v, (1,)), (0,)))(x)
    np.testing.assert_allclose(np.asarray(g), [[0, 1 / 3, 1 / 3, 1 / 3], [0.5, 0.5, 0, 0]])
    g = ember.grad(lambda v: lax.reduce_min(v, (0, 1)))(x)
    np.testing.assert_allclose(np.asarray(g), [[0, 0, 0, 0], [0, 0, 1, 0]])


def test_extremum_tangent_of_integers_and_empty_is_zero():
    _, t = ember.jvp(lambda v: lax.reduce_max(v, (0,)), (np.arange(3, dtype=np.int32),),
                     (np.zeros(3, ember.dtypes.float0),))
    assert t.dtype == ember.dtypes.float0
    _, t = ember.jvp(lambda v: lax.reduce_min(v, (0,)), (np.ones((0, 2)),), (np.ones((0, 2)),))
    np.testing.assert_array_equal(np.asarray(t), [0.0, 0.0])


def test_reduce_sum_transpose_dot_product():
    rng = np.random.default_rng(4)
    x, ct = rng.standard_normal((2, 3, 4)), rng.standard_normal((3,))
    f = lambda v: lax.reduce_sum(v, (0, 2))  # noqa: E731
    (xt,) = ember.linear_transpose(f, x)(ct)
    assert np.isclose(np.sum(np.asarray(f(x)) * ct), np.sum(np.asarray(xt) * x))


@pytest.mark.parametrize("name", ["reduce_prod", "reduce_max"])
def test_rule_graphs_typecheck(name):
    f = lambda v: getattr(lax, name)(v, (0, 2))  # noqa: E731
    x = np.random.default_rng(5).standard_normal((2, 3, 4))
    typecheck(ember.make_graph(f)(x))
    typecheck(ember.make_graph(lambda v, t: ember.jvp(f, (v,), (t,)))(x, x))
    typecheck(ember.make_graph(lambda v: ember.vjp(f, v)[1](np.ones(3)))(x))
    typecheck(ember.make_graph(ember.vmap(f, in_axes=1))(np.stack([x, x], 1)))
    typecheck(ember.make_graph(lambda v: lax.argmax(v, 1, np.int32))(x))


# --- batching ------------------------------------------------------------------------------

@st.composite
def shape_axes_bdim(draw):
    shape = tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=3)))
    axes = tuple(sorted(draw(st.sets(st.integers(0, max(len(shape) - 1, 0)), max_size=len(shape)))
                        if shape else ()))
    bdim = draw(st.integers(0, len(shape)))
    name = draw(st.sampled_from(NUMBER + ORDER + BITS))
    return shape, axes, bdim, name


@settings(max_examples=25, deadline=None)
@given(shape_axes_bdim())
def test_vmap_vs_loop(case):
    shape, axes, bdim, name = case
    rng = np.random.default_rng(6)
    dtype = np.int32 if name in BITS else np.float32
    x = rand(rng, shape[:bdim] + (3,) + shape[bdim:], dtype)
    check_vmap(lambda v: getattr(lax, name)(v, axes), (x,), in_axes=bdim)
    assert np.asarray(getattr(lax, name)(x, tuple(a + (a >= bdim) for a in axes))).shape == \
        tuple(s for i, s in enumerate(x.shape) if i not in tuple(a + (a >= bdim) for a in axes))


@settings(max_examples=25, deadline=None)
@given(shape_axes_bdim())
def test_values_hypothesis(case):
    shape, axes, _, name = case
    x = rand(np.random.default_rng(7), shape, np.int16 if name in BITS else np.float64)
    got = run(getattr(R, name + "_p"), x, axes=axes)
    np.testing.assert_allclose(got, expected(name, x, axes), rtol=1e-12)


@pytest.mark.parametrize("which", ["argmax", "argmin"])
@pytest.mark.parametrize("bdim", [0, 1, 2])
@pytest.mark.parametrize("axis", [0, 1])
def test_arg_vmap(which, bdim, axis):
    x = np.random.default_rng(8).integers(0, 3, (3, 4, 5)).astype(np.float32)  # ties
    check_vmap(lambda v: getattr(lax, which)(v, axis, np.int32), (x,), in_axes=bdim)


def test_grad_of_vmap_and_vmap_of_grad():
    x = np.random.default_rng(9).uniform(0.5, 2.0, (3, 4))
    x[1, 2] = 0.0
    f = lambda v: lax.reduce_prod(v, (0,))  # noqa: E731
    check_vmap(ember.grad(f), (x,), in_axes=1)
    check_grads(lambda v: ember.vmap(f, in_axes=1)(v), (x,), order=1)
