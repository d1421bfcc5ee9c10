"""Weak types audited against JAX 0.10.2 (expected flags and dtypes hard-coded here).

A value computed only from Python scalars (or weakly typed values) stays weak, so it
promotes like the Python scalar it stands for; a reduction or an explicit `astype` is
strong; `ember.lax` refuses a Python scalar it would have to truncate.
"""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax


def _weak_f():
    return lax.add(1.0, 2.0)


def _weak_i():
    return lax.add(1, 2)


def test_weak_value_and_python_scalar_stay_weak():
    x = _weak_f() + 1.0
    assert x.weak_type and x.dtype == np.float32
    assert (x + enp.ones(3, "float16")).dtype == np.float16
    y = ember.jit(lambda v: v * 2.0)(1.0)
    assert y.weak_type and float(y) == 2.0
    assert (y + enp.ones(3, "bfloat16")).dtype == enp.bfloat16
    assert lax.mul(_weak_f(), 2.0).weak_type
    # a strong operand makes the result strong, weak or not the scalar
    assert not (enp.asarray(1.0) + 1.0).weak_type
    assert not lax.mul(_weak_f(), np.float32(2.0)).weak_type


@pytest.mark.parametrize("fn", [enp.sign, enp.reciprocal, enp.sinc, enp.deg2rad, enp.radians,
                                enp.rad2deg, enp.degrees, enp.sin, enp.square, enp.abs])
def test_elementwise_composites_of_weak_input_are_weak(fn):
    assert fn(_weak_f()).weak_type


def test_floor_divide_and_weak_int():
    assert enp.floor_divide(_weak_f(), 2.0).weak_type
    q = enp.floor_divide(_weak_i(), 2)
    assert q.weak_type and q.dtype == np.int32 and int(q) == 1
    assert (q + enp.ones(2, "int8")).dtype == np.int8


@pytest.mark.parametrize("fn", [enp.sum, enp.prod, enp.max, enp.min, enp.amax, enp.amin, enp.ptp,
                                enp.mean, enp.var, enp.cumsum, enp.cumprod, enp.nansum,
                                enp.nancumsum, enp.nanmax])
def test_reductions_are_strong(fn):
    for x in (_weak_f(), enp.broadcast_to(_weak_f(), (3,))):
        r = fn(x)
        assert not r.weak_type, fn.__name__
        assert (r + enp.ones((), "float16")).dtype == np.float32


def test_astype_is_strong_and_like_constructors_keep_weak():
    w = _weak_f()
    assert not w.astype("float32").weak_type
    assert not enp.astype(w, enp.float32).weak_type
    for f in (enp.zeros_like, enp.ones_like, enp.empty_like):
        assert f(w).weak_type and not f(w, dtype="float32").weak_type
    assert enp.full_like(w, 3.0).weak_type
    assert not enp.zeros_like(enp.asarray(1.0)).weak_type


def test_grad_and_jvp_of_python_scalar_inputs_are_weak():
    g = ember.grad(lambda v: v * 2.0)(1.0)
    assert g.weak_type and float(g) == 2.0
    assert (g + enp.ones(2, "float16")).dtype == np.float16
    assert not ember.grad(lambda v: v * 2.0)(enp.asarray(1.0)).weak_type
    y, t = ember.jvp(lambda v: v * 2.0 + 1.0, (1.0,), (1.0,))
    assert y.weak_type and t.weak_type and float(t) == 2.0
    y, f = ember.vjp(lambda v: v * 3.0, 2.0)
    assert y.weak_type and f(1.0)[0].weak_type


def test_printed_ir_marks_weak_results_and_literals():
    s = str(ember.make_graph(lambda v: v * 2.0)(1.0))
    assert "b:f32[]~ = mul a 2.0:f32~" in s
    s = str(ember.make_graph(lambda v: v * 2.0)(enp.asarray(1.0)))
    assert "b:f32[] = mul a 2.0" in s and "~" not in s


def test_weak_literals_compile_natively():
    f = ember.jit(lambda v: enp.sin(v) * 2.0 + enp.floor_divide(v, 2.0) - 0.5)
    out = f(3.0)
    assert out.weak_type
    np.testing.assert_allclose(float(out), np.sin(np.float32(3.0)) * 2 + 1.0 - 0.5, rtol=1e-6)
    g = ember.jit(lambda v, a: a * (v + 1.0))(2.0, enp.ones(3, "float16"))
    assert g.dtype == np.float16 and g.tolist() == [3.0, 3.0, 3.0]


def test_lax_refuses_a_python_scalar_it_would_truncate():
    with pytest.raises(TypeError, match=r"lax.add: the Python float 1.5 .* int32\[2\]"):
        lax.add(enp.asarray([1, 2]), 1.5)      # was [2 3]: 1.5 silently became 1
    with pytest.raises(TypeError, match=r"lax.mul: the Python float"):
        lax.mul(1.5, enp.asarray([1, 2]))
    with pytest.raises(TypeError, match=r"lax.add: the Python int 1 .* bool\[2\]"):
        lax.add(enp.asarray([True, False]), 1)
    with pytest.raises(OverflowError, match=r"lax.add: the Python int 300 is out of range .* int8"):
        lax.add(enp.ones(2, "int8"), 300)
    # exact conversions still work, as documented for lax's weak Python scalars
    assert lax.add(enp.ones(2, "float16"), 2).dtype == np.float16
    assert lax.add(enp.ones(2, "int8"), 3).tolist() == [4, 4]
    assert lax.bitwise_and(enp.asarray([True, False]), True).tolist() == [True, False]


def test_rint_of_integers_is_float_and_rank0_shape():
    r = enp.rint(enp.asarray([1, 2]))
    assert r.dtype == np.float32 and r.tolist() == [1.0, 2.0]   # numpy: float, JAX: float32
    assert enp.ones(enp.asarray(3)).shape == (3,)               # numpy takes a 0-d int array
    assert enp.zeros(np.int64(2)).shape == (2,)
