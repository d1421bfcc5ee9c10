"""ember.pure_callback: host functions with declared results, eagerly, under jit (a
host step of the compiled program), under each vmap_method against a Python loop,
inside loop bodies, with custom derivatives, and its clear errors."""
import numpy as np
import pytest
import scipy.special as sp

import ember
import ember.numpy as enp


def _spec(x):
    return ember.ShapeDtypeStruct(x.shape, x.dtype)


def _erfcx(x, vmap_method=None):
    return ember.pure_callback(lambda v: sp.erfcx(v).astype(v.dtype), _spec(x), x,
                               vmap_method=vmap_method)


X = np.linspace(-1.0, 3.0, 7).astype(np.float32)


def test_eager_and_jit_values_and_dtypes():
    for f in (_erfcx, ember.jit(_erfcx)):
        y = f(X)
        assert y.dtype == np.float32 and y.shape == X.shape
        np.testing.assert_array_equal(y, sp.erfcx(X).astype(np.float32))


def test_pytrees_and_kwargs_reach_the_function():
    def host(a, pair, *, scale):
        return {"s": (a * scale + pair[0]).astype(a.dtype), "n": np.int32(pair[1].size)}
    spec = {"s": _spec(X), "n": ember.ShapeDtypeStruct((), np.int32)}
    f = ember.jit(lambda a, b: ember.pure_callback(host, spec, a, (b, b), scale=2.0))
    out = f(X, X)
    np.testing.assert_allclose(out["s"], 3 * X)
    assert int(out["n"]) == X.size and out["n"].dtype == np.int32


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_vmap_methods_match_a_loop(method):
    calls = []

    def host(a, b):  # b is 0-d, (1,) with expand_dims, (4,) with broadcast_all
        calls.append(a.shape)
        return (a * b.reshape(b.shape + (1,) * (a.ndim - b.ndim)) + 1).astype(a.dtype)

    def f(a, b):
        return ember.pure_callback(host, _spec(a), a, b, vmap_method=method)

    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    b = np.float32(2.0)
    got = ember.vmap(f, in_axes=(0, None))(a, b)
    np.testing.assert_array_equal(got, a * b + 1)
    if method == "sequential":
        assert calls == [(3,)] * 4
    else:
        assert calls == [(4, 3)]
    # under jit too, and with the batch on another axis
    np.testing.assert_array_equal(ember.jit(ember.vmap(f, in_axes=(1, None), out_axes=1))(a, b), a * b + 1)


def test_vmap_without_a_method_says_which_to_pass():
    with pytest.raises(ValueError, match="no vmap_method was given; pass vmap_method='sequential'"):
        ember.vmap(_erfcx)(X.reshape(7, 1))


def test_inside_scan_bodies():
    def body(c, x):
        y = _erfcx(x)
        return c + y, y
    total, ys = ember.jit(lambda xs: ember.lax.scan(body, np.float32(0), xs))(X)
    np.testing.assert_allclose(ys, sp.erfcx(X), rtol=1e-6)
    np.testing.assert_allclose(total, sp.erfcx(X).sum(), rtol=1e-5)


def test_no_derivative_but_custom_jvp_gives_one():
    with pytest.raises(TypeError, match="cannot differentiate the host function"):
        ember.grad(lambda x: _erfcx(x).sum())(X)

    @ember.custom_jvp
    def erfcx(x):
        return _erfcx(x, "expand_dims")

    @erfcx.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        y = erfcx(x)
        return y, (2 * x * y - float(2 / np.sqrt(np.pi))) * t

    x = X.astype(np.float64)
    g = ember.grad(lambda v: erfcx(v).sum())(x)
    h = 1e-6
    np.testing.assert_allclose(g, (sp.erfcx(x + h) - sp.erfcx(x - h)) / (2 * h), rtol=1e-6)
    np.testing.assert_allclose(ember.jit(ember.vmap(ember.grad(erfcx)))(x), g, rtol=1e-12)


def test_results_that_do_not_match_the_declaration_are_clear_errors():
    with pytest.raises(TypeError, match=r"result 0 of .* is float64\[7\], but result_shape_dtypes "
                                        r"declares float32\[7\]"):
        ember.pure_callback(lambda v: v.astype(np.float64), _spec(X), X)
    with pytest.raises(TypeError, match="returned 2 arrays, but result_shape_dtypes declares 1"):
        ember.jit(lambda x: ember.pure_callback(lambda v: (v, v), _spec(x), x))(X)
    with pytest.raises(TypeError, match="result_shape_dtypes must hold objects with .shape"):
        ember.pure_callback(lambda v: v, [3], X)
    with pytest.raises(ValueError, match="vmap_method must be one of"):
        ember.pure_callback(lambda v: v, _spec(X), X, vmap_method="loop")


def test_an_unused_call_may_be_dropped():
    calls = []
    f = ember.jit(lambda x: (ember.pure_callback(lambda v: calls.append(1) or v, _spec(x), x), x * 2)[1])
    np.testing.assert_array_equal(f(X), X * 2)
    assert calls == []
    assert enp is not None
