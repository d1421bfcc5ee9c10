"""Tests of the cumulative primitives: values vs numpy, abstract eval, errors,
derivatives (with zeros and infinities), the cumsum transpose and batching."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import lax
from ember.fx.core import AbstractArray, get_aval
from ember.fx.ir import typecheck
from ember.fx.prims import cumulative as C
from ember.testing import check_grads, check_vmap

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
INTS = [np.int8, np.uint8, np.int32, np.int64, np.uint64]
FLOATS = [F16, BF16, np.float32, np.float64]
ALL = [np.bool_] + INTS + FLOATS + [np.complex64]
NAMES = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]
SHAPES_AXIS = [((1,), 0), ((0,), 0), ((6,), 0), ((3, 4), 0), ((3, 4), 1), ((2, 0, 3), 1),
               ((2, 0, 3), 2), ((2, 3, 5), 2)]


def rand(rng, shape, dtype):
    d = np.dtype(dtype)
    if d == np.bool_:
        return rng.random(shape) < 0.5
    if d.kind in "iu":
        info = np.iinfo(d)
        return rng.integers(max(info.min, -5), min(info.max, 5) + 1, shape).astype(d)
    if d.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(d)
    return rng.standard_normal(shape).astype(d)


def allowed(name, d):
    d = np.dtype(d)
    if name == "cumlogsumexp":
        return d.kind == "f" or d == BF16
    if name in ("cumsum", "cumprod"):
        return d != np.bool_
    return d.kind != "c"


def reference(name, x, axis, reverse):
    """numpy in a wide type (int64 wraps like the narrow type modulo its width)."""
    d = x.dtype
    if d.kind in "iu":
        w = x.astype(np.int64)
    elif d == np.bool_:
        w = x
    elif d.kind == "c":
        w = x.astype(np.complex128)
    else:
        w = x.astype(np.float64)
    if reverse:
        w = np.flip(w, axis)
    f = {"cumsum": np.cumsum, "cumprod": np.cumprod,
         "cummax": np.maximum.accumulate, "cummin": np.minimum.accumulate,
         "cumlogsumexp": np.logaddexp.accumulate}[name]
    out = f(w, axis=axis)
    if reverse:
        out = np.flip(out, axis)
    return out.astype(d)


def run(prim, x, **params):
    out = prim.bind(x, **params)
    want = prim.abstract_eval(get_aval(x), **params)
    raw = prim.impl(x, **params)
    assert raw.shape == want.shape and raw.dtype == want.dtype
    assert out.shape == want.shape and out.dtype == want.dtype
    return np.asarray(out)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", ALL)
def test_values_vs_numpy(name, dtype, reverse):
    if not allowed(name, dtype):
        with pytest.raises(TypeError, match=f"{name} does not accept dtype"):
            getattr(lax, name)(np.zeros(3, dtype), 0)
        return
    rng = np.random.default_rng(0)
    prim = getattr(C, name + "_p")
    d = np.dtype(dtype)
    for shape, axis in SHAPES_AXIS:
        x = rand(rng, shape, dtype)
        if name == "cumprod" and d.kind in "fc":
            x = (x / 2 + np.sign(x.real) * 0.75).astype(d)
        got = run(prim, x, axis=axis, reverse=reverse)
        want = reference(name, x, axis, reverse)
        if d.kind in "fc" or d == BF16:
            rtol = {F16: 3e-3, BF16: 2e-2}.get(d, 1e-5 if d.itemsize <= 8 else 1e-12)
            np.testing.assert_allclose(got.astype(np.complex128), want.astype(np.complex128),
                                       rtol=rtol, atol=rtol)
        else:
            np.testing.assert_array_equal(got, want)
        assert getattr(lax, name)(x, axis - len(shape), reverse).dtype == d


def test_integer_wraps_and_half_precision_accumulates_in_float32():
    x = np.full(4, 100, np.int8)
    np.testing.assert_array_equal(np.asarray(lax.cumsum(x, 0)),
                                  np.array([100, 200, 300, 400]).astype(np.int8))
    np.testing.assert_array_equal(np.asarray(lax.cumprod(x, 0)),
                                  np.array([100, 10 ** 4, 10 ** 6, 10 ** 8]).astype(np.int8))
    for d, n in [(F16, 4096), (BF16, 1024)]:
        out = np.asarray(lax.cumsum(np.ones(n, d), 0))
        assert out.dtype == d and float(out[-1]) == n  # half-precision adds would stall


def test_nan_and_infinities():
    x = np.array([1.0, np.nan, 5.0, 0.0])
    assert np.isnan(np.asarray(lax.cummax(x, 0))[1:]).all()
    assert np.isnan(np.asarray(lax.cummin(x, 0, reverse=True))[:2]).all()
    y = np.array([-np.inf, -np.inf, 0.0, np.inf, 1.0])
    np.testing.assert_array_equal(np.asarray(lax.cumlogsumexp(y, 0)),
                                  [-np.inf, -np.inf, 0.0, np.inf, np.inf])
    big = np.array([1000.0, 1000.0], np.float32)
    np.testing.assert_allclose(np.asarray(lax.cumlogsumexp(big, 0)), [1000, 1000 + np.log(2)])


def test_errors():
    with pytest.raises(TypeError, match="cumsum: axis 1 is out of range"):
        lax.cumsum(np.ones(3), 1)
    with pytest.raises(TypeError, match="cummax: axis 0 is out of range"):
        lax.cummax(np.float32(1.0), 0)
    with pytest.raises(TypeError, match="cumsum: axis 0 is out of range"):
        C.cumsum_p.abstract_eval(AbstractArray((), np.float32), axis=0, reverse=False)
    with pytest.raises(TypeError, match="cumlogsumexp does not accept dtype int32"):
        C.cumlogsumexp_p.abstract_eval(AbstractArray((3,), np.int32), axis=0, reverse=False)


# --- derivatives -----------------------------------------------------------------------

@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("name", NAMES)
def test_grads(name, axis, reverse):
    x = np.random.default_rng(1).permutation(15).reshape(3, 5) / 4.0 - 1.5  # no ties
    check_grads(lambda v: getattr(lax, name)(v, axis, reverse), (x,), order=2)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("zeros", [[(0, 0)], [(1, 2)], [(1, 1), (1, 3)], [(0, 4), (2, 4)]])
def test_cumprod_grads_with_zeros(zeros, reverse):
    rng = np.random.default_rng(2)
    x = rng.uniform(0.5, 1.5, (3, 5)) * rng.choice([-1.0, 1.0], (3, 5))
    for z in zeros:
        x[z] = 0.0
    check_grads(lambda v: lax.cumprod(v, 1, reverse), (x,), order=2)
    check_grads(lambda v: lax.cumprod(v, 0, reverse), (x,), order=2)


def test_cumprod_gradient_at_a_zero_exactly():
    x = np.array([2.0, 0.0, 3.0, 4.0])
    g = ember.grad(lambda v: lax.reduce_sum(lax.cumprod(v, 0), (0,)))(x)
    # d/dx_j sum_i prod_{k<=i} x_k: only prefixes through the zero with x_1 removed survive.
    np.testing.assert_array_equal(np.asarray(g), [1.0, 2 + 2 * 3 + 2 * 3 * 4, 0.0, 0.0])


def test_cumlogsumexp_grads_with_infinities_are_finite():
    x = np.array([-np.inf, -np.inf, 0.5, -1.0])
    g = np.asarray(ember.grad(lambda v: lax.reduce_sum(lax.cumlogsumexp(v, 0), (0,)))(x))
    assert np.isfinite(g).all()
    e = np.exp(x[2:] - np.logaddexp.reduce(x[2:]))
    # out_0 = x_0 whatever its value; equal -infs share out_1's derivative equally.
    np.testing.assert_allclose(g, [1.5, 0.5, 1 + e[0], e[1]])
    big = np.array([800.0, 801.0, 799.0])
    check_grads(lambda v: lax.cumlogsumexp(v, 0), (big,), order=2)


def test_cummax_ties_and_integer_tangents():
    x = np.array([1.0, 3.0, 2.0, 3.0, 0.0])
    _, t = ember.jvp(lambda v: lax.cummax(v, 0), (x,), (np.arange(5.0),))
    np.testing.assert_array_equal(np.asarray(t), [0, 1, 1, 3, 3])  # latest position of the max
    _, t = ember.jvp(lambda v: lax.cummin(v, 0, True), (x,), (np.arange(5.0),))
    np.testing.assert_array_equal(np.asarray(t), [4, 4, 4, 4, 4])
    _, t = ember.jvp(lambda v: lax.cumsum(v, 0), (np.arange(3, dtype=np.int32),),
                     (np.zeros(3, ember.dtypes.float0),))
    assert t.dtype == ember.dtypes.float0


@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_transpose_dot_product(reverse):
    rng = np.random.default_rng(3)
    x, ct = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    f = lambda v: lax.cumsum(v, 1, reverse)  # noqa: E731
    (xt,) = ember.linear_transpose(f, x)(ct)
    assert np.isclose(np.sum(np.asarray(f(x)) * ct), np.sum(np.asarray(xt) * x))


@pytest.mark.parametrize("name", NAMES)
def test_rule_graphs_typecheck(name):
    x = np.random.default_rng(4).standard_normal((3, 4))
    f = lambda v: getattr(lax, name)(v, 1)  # noqa: E731
    typecheck(ember.make_graph(f)(x))
    typecheck(ember.make_graph(lambda v, t: ember.jvp(f, (v,), (t,)))(x, x))
    typecheck(ember.make_graph(lambda v: ember.vjp(f, v)[1](v))(x))
    typecheck(ember.make_graph(ember.vmap(f, in_axes=1))(np.stack([x, x], 1)))


# --- batching ----------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=3), st.data())
def test_vmap_vs_loop(shape, data):
    name = data.draw(st.sampled_from(NAMES))
    axis = data.draw(st.integers(0, len(shape) - 1))
    bdim = data.draw(st.integers(0, len(shape)))
    reverse = data.draw(st.booleans())
    x = np.random.default_rng(5).standard_normal(tuple(shape[:bdim]) + (2,) + tuple(shape[bdim:]))
    check_vmap(lambda v: getattr(lax, name)(v, axis, reverse), (x,), in_axes=bdim,
               atol=1e-12, rtol=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=3), st.data())
def test_values_hypothesis(shape, data):
    name = data.draw(st.sampled_from(NAMES))
    axis = data.draw(st.integers(0, len(shape) - 1))
    reverse = data.draw(st.booleans())
    x = np.random.default_rng(6).standard_normal(shape)
    got = run(getattr(C, name + "_p"), x, axis=axis, reverse=reverse)
    np.testing.assert_allclose(got, reference(name, x, axis, reverse), rtol=1e-12)


@pytest.mark.parametrize("bdim", [0, 1, 2])
def test_grad_under_vmap_with_zeros(bdim):
    x = np.random.default_rng(7).uniform(0.5, 1.5, (3, 4, 2))
    x[1, 2, 0] = 0.0
    x = np.moveaxis(x, 2, bdim)
    f = lambda v: lax.reduce_sum(lax.cumprod(v, 1), (0, 1))  # noqa: E731
    check_vmap(ember.grad(f), (x,), in_axes=bdim, atol=1e-12, rtol=1e-12)
    h = lambda v: lax.reduce_sum(lax.cumlogsumexp(v, 0, True), (0, 1))  # noqa: E731
    check_vmap(ember.grad(h), (x,), in_axes=bdim, atol=1e-12, rtol=1e-12)
