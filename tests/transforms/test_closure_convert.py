"""closure_convert: closed-over float arrays become explicit arguments (JAX's semantics),
which is what custom_vjp needs to differentiate with respect to them."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.testing import check_grads


def test_consts_are_the_closed_over_float_arrays():
    w = enp.asarray([1.0, 2.0])
    n = enp.asarray(3)
    f = lambda x: enp.sin(w * x) * n  # noqa: E731
    g, consts = ember.closure_convert(f, enp.ones(2))
    assert len(consts) == 1 and consts[0].tolist() == [1.0, 2.0]   # the int stays inside
    x = enp.asarray([0.3, 0.4])
    np.testing.assert_array_equal(np.asarray(g(x, *consts)), np.asarray(f(x)))
    np.testing.assert_allclose(np.asarray(g(x, enp.asarray([0.5, 0.5]))),
                               3 * np.sin(0.5 * np.asarray(x)), rtol=1e-6)


def test_with_custom_vjp_the_gradient_reaches_closed_over_tracers():
    """The use JAX documents: a custom_vjp over a function that closes over values being
    differentiated, made explicit first."""

    def apply(f, x):
        g, consts = ember.closure_convert(f, x)
        return _call(g, x, *consts)

    @ember.custom_vjp
    def _call_impl(x, *consts):
        return _G[0](x, *consts)

    def fwd(x, *consts):
        return _G[0](x, *consts), (x, consts)

    def bwd(res, ct):
        x, consts = res
        _, vjp = ember.vjp(_G[0], x, *consts)
        return vjp(ct)
    _call_impl.defvjp(fwd, bwd)
    _G = [None]

    def _call(g, x, *consts):
        _G[0] = g
        return _call_impl(x, *consts)

    def loss(w):
        return enp.sum(apply(lambda x: enp.sin(w * x), enp.asarray([0.3, 0.4], dtype="float64")))
    w = enp.asarray(1.5, dtype="float64")
    want = float(np.sum(np.array([0.3, 0.4]) * np.cos(1.5 * np.array([0.3, 0.4]))))
    assert abs(float(ember.grad(loss)(w)) - want) < 1e-12
    check_grads(lambda w: enp.sum(ember.closure_convert(lambda x: enp.exp(w * x), 1.0)[0](
        2.0, *ember.closure_convert(lambda x: enp.exp(w * x), 1.0)[1])), (w,), order=2)


def test_errors_and_pytrees():
    w = enp.ones(2)
    g, consts = ember.closure_convert(lambda p: {"y": p["a"] * w}, {"a": enp.ones(2)})
    assert g({"a": enp.asarray([2.0, 3.0])}, *consts)["y"].tolist() == [2.0, 3.0]
    with pytest.raises(TypeError, match="was traced for arguments of structure"):
        g(enp.ones(2), *consts)
    with pytest.raises(TypeError, match=r"was traced for float32\[2\], got float32\[3\]"):
        g({"a": enp.ones(3)}, *consts)
