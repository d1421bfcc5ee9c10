"""Bad input to the transforms gets a clear error naming the argument and the user's line."""
import numpy as np
import pytest

import ember
from ember import lax


def test_vmap_in_axes_length_mismatch():
    with pytest.raises(ValueError, match="in_axes has 1 entries but the function was called with 2") as e:
        ember.vmap(lambda a, b: a, in_axes=(0,))(np.ones(3), np.ones(3))
    assert "test_bad_input.py" in str(e.value)


def test_vmap_axis_out_of_range():
    with pytest.raises(ValueError, match="in_axes=2 is out of range") as e:
        ember.vmap(lambda a: a, in_axes=2)(np.ones((3, 4)))
    assert "test_bad_input.py" in str(e.value)


def test_vmap_mismatched_batch_sizes():
    with pytest.raises(ValueError, match="inconsistent sizes") as e:
        ember.vmap(lambda a, b: lax.add(a, b))(np.ones(3), np.ones(4))
    assert "size 3" in str(e.value) and "size 4" in str(e.value)


def test_grad_non_scalar_output():
    with pytest.raises(TypeError, match=r"scalar \(shape \(\)\) output, got shape \(3,\)") as e:
        ember.grad(lambda x: lax.sin(x))(np.ones(3))
    assert "test_bad_input.py" in str(e.value)


def test_non_array_in_differentiated_position():
    with pytest.raises(TypeError, match="grad: argument `x` of lambda .* is a str, which is not a "
                                        "valid ember value"):
        ember.grad(lambda x: x)("not an array")


def test_unhashable_static_argument():
    with pytest.raises(TypeError, match="static argument 1 of type list is not hashable"):
        ember.jit(lambda x, cfg: x, static_argnums=1)(np.ones(2), [1, 2])


def test_static_argnums_out_of_range():
    with pytest.raises(ValueError, match="static_argnums=3 is out of range"):
        ember.jit(lambda x: x, static_argnums=3)(np.ones(2))


def test_leaked_tracer_names_its_origin():
    leaked = []

    def f(x):
        leaked.append(x)
        return x
    ember.grad(lambda x: f(x) * 2.0)(1.0)
    with pytest.raises(ember.UnexpectedTracerError, match="escaped") as e:
        leaked[0] + 1.0
    assert "test_bad_input.py" in str(e.value)


def test_concretization_error_suggests_cond_and_static_argnums():
    with pytest.raises(ember.ConcretizationError) as e:
        ember.jit(lambda x: 1.0 if x > 0 else 2.0)(1.0)
    msg = str(e.value)
    assert "ember.cond" in msg and "static_argnums" in msg and "test_bad_input.py" in msg


def test_jvp_tangent_shape_mismatch():
    with pytest.raises(TypeError, match=r"tangent shape \(2,\) does not match primal shape \(3,\)"):
        ember.jvp(lax.sin, (np.ones(3),), (np.ones(2),))


def test_vjp_cotangent_structure_mismatch():
    _, f_vjp = ember.vjp(lambda x: (x, x), np.ones(2))
    with pytest.raises(TypeError, match="cotangent structure"):
        f_vjp(np.ones(2))
