"""Differentiating integer/bool values: one check, the same answer from every entry point."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.dtypes
import ember.numpy as enp

_REVERSE = [ember.grad, ember.value_and_grad, ember.jacrev, ember.hessian]


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(["int32", "int8", "bool", "uint8"]), st.sampled_from(_REVERSE),
       st.integers(1, 4))
def test_reverse_mode_refuses_integer_outputs(dtype, api, n):
    f = lambda x: (x > 0).astype(dtype)[0]
    x = enp.asarray(np.linspace(-1, 1, n).astype(np.float32))
    with pytest.raises(TypeError, match=rf"{api.__name__} requires real-valued outputs .* but got "
                                        rf"{np.dtype(dtype).name}") as e:
        api(f)(x)
    assert "test_diff_dtypes.py" in str(e.value)


def test_jacrev_names_the_integer_output_leaf():
    f = lambda x: {"y": x * 2.0, "count": (x > 0).astype("int32")}
    with pytest.raises(TypeError, match=r"int32 for output\['count'\]"):
        ember.jacrev(f)(enp.ones(2))


def test_jacfwd_of_integer_output_is_float0_as_in_jax():
    f = lambda x: (x > 0).astype("int32").sum()
    j = ember.jacfwd(f)(enp.ones(3))
    assert np.asarray(j).dtype == ember.dtypes.float0 and np.asarray(j).shape == (3,)


def test_vjp_and_jvp_of_integer_output_stay_available():
    f = lambda x: (x > 0).astype("int32").sum()
    y, f_vjp = ember.vjp(f, enp.ones(3))
    assert int(y) == 3
    np.testing.assert_array_equal(np.asarray(f_vjp(np.zeros((), ember.dtypes.float0))[0]), np.zeros(3))
    _, t = ember.jvp(f, (enp.ones(3),), (enp.ones(3),))
    assert np.asarray(t).dtype == ember.dtypes.float0


@pytest.mark.parametrize("api", [ember.jacfwd, ember.jacrev, ember.hessian, ember.grad])
def test_integer_inputs_are_refused_with_the_argument_name(api):
    f = lambda scale, params: (params["w"] * scale).sum()
    with pytest.raises(TypeError, match=r"but got int32 for params\['w'\]") as e:
        api(f, argnums=1)(2.0, {"w": np.ones(2, np.int32)})
    assert "test_diff_dtypes.py" in str(e.value)


def test_float_hessian_still_works():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(ember.hessian(lambda v: (v ** 3).sum())(x), np.diag(6 * x))
