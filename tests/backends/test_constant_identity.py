"""Constants are identified by dtype and bits everywhere they are interned or
cached (kernel expressions, CSE, program fingerprints, jit's static arguments):
-0.0 is not 0.0 and NaN payloads are kept (issue #12, item 1)."""
import ml_dtypes
import numpy as np
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember import jit, lax
from ember.backends.kernels import fingerprint, schedule
from ember.backends.llvm.ops import supports
from ember.fx.passes import cse

SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -1.5]
DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]


def _bits(x):
    x = np.asarray(x)
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def test_audit_examples():
    v = enp.asarray([1.0, -1.0])
    f = lambda v: enp.arctan2(enp.where(v > 0, 0.0, -0.0), -1.0)  # noqa: E731
    np.testing.assert_array_equal(np.asarray(jit(f)(v)), np.float32([np.pi, -np.pi]))
    assert np.asarray(jit(f)(v)).tolist() == np.asarray(f(v)).tolist()
    g = lambda v: 1 / enp.where(v > 0, 0.0, -0.0)  # noqa: E731
    assert np.asarray(jit(g)(v)).tolist() == [np.inf, -np.inf]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(SPECIAL), st.sampled_from(SPECIAL), st.sampled_from(DTYPES))
def test_selected_constants_keep_their_bits(a, b, dtype):
    x = np.array([1.0, -1.0, 2.0], dtype)
    ca, cb = np.array(a, dtype)[()], np.array(b, dtype)[()]

    def f(v):
        s = enp.where(v > 0, ca, cb)
        return s, lax.div(np.array(1, dtype)[()], s)

    got = jit(f)(x)
    want = f(x)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(_bits(g), _bits(w))


def test_cse_keeps_signed_zero_literals_apart():
    g = ember.make_graph(lambda x: (x * 0.0, x * -0.0))(np.float32(1.0))
    assert [e.prim.name for e in cse(g.graph).equations] == ["mul", "mul"]
    g = ember.make_graph(lambda x: (x * 2.0, x * 2.0))(np.float32(1.0))
    assert [e.prim.name for e in cse(g.graph).equations] == ["mul"]


def test_fingerprint_tells_zeros_and_nan_payloads_apart():
    def prog(c):
        g = ember.make_graph(lambda x: x + c)(np.ones(4, np.float32))
        return fingerprint(schedule(g, supports))
    q1 = np.array(0x7FC00001, np.uint32).view(np.float32)[()]
    q2 = np.array(0x7FC00002, np.uint32).view(np.float32)[()]
    assert prog(np.float32(0.0)) != prog(np.float32(-0.0))
    assert prog(q1) != prog(q2)
    assert prog(np.float32(3.0)) == prog(np.float32(3.0))


def test_static_float_arguments_are_keyed_by_bits():
    f = jit(lambda x, c: x / c, static_argnums=1)
    one = np.ones(2, np.float32)
    assert np.asarray(f(one, 0.0)).tolist() == [np.inf, np.inf]
    assert np.asarray(f(one, -0.0)).tolist() == [-np.inf, -np.inf]
