"""`defbilinear`, the one JVP of the products (mul, dot_general, conv):
d(x*y) = dx*y + x*dy, checked against float64 finite differences to second
order and against the closed form."""
import numpy as np
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember import lax
from ember.fx.prims.contraction import dot_general_p
from ember.fx.prims.conv import conv_general_dilated_p
from ember.fx.prims.elementwise import mul_p
from ember.testing import check_grads


def test_the_products_share_one_jvp_factory():
    names = {p.jvp.__qualname__ for p in (mul_p, dot_general_p, conv_general_dilated_p)}
    assert names == {"defbilinear.<locals>.jvp"}


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 3), max_size=3), scalar_side=st.sampled_from([None, 0, 1]),
       seed=st.integers(0, 2 ** 16))
def test_mul_jvp_matches_closed_form_and_finite_differences(shape, scalar_side, seed):
    rng = np.random.default_rng(seed)
    xs = [rng.normal(size=shape), rng.normal(size=shape)]
    if scalar_side is not None:
        xs[scalar_side] = rng.normal(size=())   # the IR's rank-0 operand
    x, y = xs
    tx, ty = rng.normal(size=np.shape(x)), rng.normal(size=np.shape(y))
    out, t = ember.jvp(lax.mul, (enp.asarray(x), enp.asarray(y)), (enp.asarray(tx), enp.asarray(ty)))
    np.testing.assert_allclose(np.asarray(out), x * y, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(t), tx * y + x * ty, rtol=1e-12, atol=1e-12)
    check_grads(lax.mul, (enp.asarray(x), enp.asarray(y)), order=2)


def test_integer_products_have_zero_tangents():
    x = enp.asarray(np.array([1, 2, 3], np.int32))
    _, t = ember.jvp(lambda a: lax.mul(a, a), (x,), (np.zeros(3, ember.dtypes.float0),))
    assert t.dtype == ember.dtypes.float0 and t.shape == (3,)


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 3), k=st.integers(1, 3), n=st.integers(1, 3), seed=st.integers(0, 2 ** 16))
def test_dot_general_jvp(m, k, n, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(m, k)), rng.normal(size=(k, n))
    ta, tb = rng.normal(size=(m, k)), rng.normal(size=(k, n))
    dims = (((1,), (0,)), ((), ()))
    f = lambda u, v: lax.dot_general(u, v, dims)  # noqa: E731
    out, t = ember.jvp(f, (enp.asarray(a), enp.asarray(b)), (enp.asarray(ta), enp.asarray(tb)))
    np.testing.assert_allclose(np.asarray(out), a @ b, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(t), ta @ b + a @ tb, rtol=1e-12, atol=1e-12)
    check_grads(f, (enp.asarray(a), enp.asarray(b)), order=2)


def test_conv_jvp():
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(1, 2, 5)), rng.normal(size=(3, 2, 2))
    tx, tw = rng.normal(size=x.shape), rng.normal(size=w.shape)
    f = lambda u, v: lax.conv_general_dilated(u, v, (1,), "VALID")  # noqa: E731

    def ref(u, v):   # NCW x OIW, valid correlation
        return np.stack([[sum(u[0, c, i:i + 2] @ v[o, c] for c in range(2)) for i in range(4)]
                         for o in range(3)])[None]
    out, t = ember.jvp(f, (enp.asarray(x), enp.asarray(w)), (enp.asarray(tx), enp.asarray(tw)))
    np.testing.assert_allclose(np.asarray(out), ref(x, w), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(t), ref(tx, w) + ref(x, tw), rtol=1e-12, atol=1e-12)
    check_grads(f, (enp.asarray(x), enp.asarray(w)), order=2)
