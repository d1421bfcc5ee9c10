"""Audit of transforms composed with each other: custom rules, checkpoint, jacobians, vmap edge cases.

Expected values are analytic (numpy) or JAX 0.10 results written as literals."""
import functools

import numpy as np
import pytest

import ember
import ember.numpy as enp

X = np.linspace(0.1, 1.0, 4)
Y = np.linspace(1.0, 2.0, 4)
Z = X + 1j * Y


# ---- holomorphic: complex inputs/outputs of jacfwd/jacrev/grad (JAX's contract) ------------

def test_jacrev_of_real_to_complex_refuses_instead_of_dropping_the_imaginary_part():
    # it returned the identity (Re of d(x*(1+2j))/dx = 1+2j) without a word
    with pytest.raises(TypeError, match=r"jacrev requires real-valued outputs.*complex128.*holomorphic=True"):
        ember.jacrev(lambda x: x * (1 + 2j))(X)


def test_jacfwd_of_complex_input_refuses_without_holomorphic():
    # it returned only the derivative along the real axis
    with pytest.raises(TypeError, match=r"jacfwd requires real-valued inputs.*complex128 for z"):
        ember.jacfwd(lambda z: (z * z).real)(Z)


def test_grad_of_complex_output_refuses_without_holomorphic():
    with pytest.raises(TypeError, match=r"grad requires real-valued outputs.*holomorphic=True"):
        ember.grad(lambda z: z * z * z)(1 + 2j)


@pytest.mark.parametrize("jac", ["jacfwd", "jacrev"])
def test_holomorphic_jacobians_are_f_prime(jac):
    got = np.asarray(getattr(ember, jac)(lambda z: z * z, holomorphic=True)(Z))
    np.testing.assert_allclose(got, np.diag(2 * Z))


def test_holomorphic_grad_hessian_and_value_and_grad():
    z = 1 + 2j
    assert complex(ember.grad(lambda z: z * z * z, holomorphic=True)(z)) == pytest.approx(3 * z * z)
    v, g = ember.value_and_grad(lambda z: z * z * z, holomorphic=True)(z)
    assert complex(v) == pytest.approx(z ** 3) and complex(g) == pytest.approx(3 * z * z)
    h = np.asarray(ember.hessian(lambda z: (z * z * z).sum(), holomorphic=True)(Z))
    np.testing.assert_allclose(h, np.diag(6 * Z))


def test_holomorphic_true_needs_complex_inputs_and_outputs():
    with pytest.raises(TypeError, match=r"jacfwd with holomorphic=True requires inputs with complex dtype, "
                                        r"but got float64 for x"):
        ember.jacfwd(lambda x: x * 2, holomorphic=True)(X)
    with pytest.raises(TypeError, match=r"jacrev with holomorphic=True requires outputs with complex dtype"):
        ember.jacrev(lambda z: (z * z).real, holomorphic=True)(Z)
    with pytest.raises(TypeError, match=r"grad with holomorphic=True requires inputs with complex dtype"):
        ember.grad(lambda x: x * 2.0, holomorphic=True)(1.0)


def test_real_jacobians_and_complex_input_grad_unchanged():
    np.testing.assert_allclose(np.asarray(ember.jacrev(lambda x: x * 2, holomorphic=False)(X)), 2 * np.eye(4))
    # JAX: grad of a real function of a complex input is conj(df/dz)*2-style: here 2 * conj(z)
    g = complex(ember.grad(lambda z: (z * enp.conj(z)).real)(1 + 2j))
    assert g == pytest.approx(2 - 4j)


# ---- vmap edge cases -----------------------------------------------------------------------

def test_vmap_out_axes_out_of_range_is_an_error_not_a_wrap():
    # out_axes=2 on a rank-1 result was taken modulo the rank (axis 0)
    with pytest.raises(ValueError, match=r"out_axes=2 is out of range for output.*valid axes are -1\.\.0"):
        ember.vmap(lambda x: x * 2.0, out_axes=2)(X)
    got = ember.vmap(lambda x: x[:, None] * 2.0, out_axes=-2)(np.arange(6.0).reshape(2, 3))
    np.testing.assert_allclose(np.asarray(got), np.moveaxis(2.0 * np.arange(6.0).reshape(2, 3)[:, :, None], 0, -2))


def test_vmap_passes_unmapped_python_scalars_through():
    # as in JAX: Python control flow on an unmapped scalar works inside vmap
    got = ember.vmap(lambda n, x: x ** 2 if n > 1 else x, in_axes=(None, 0))(3, X)
    np.testing.assert_allclose(np.asarray(got), X ** 2)


def test_checkpoint_static_argnums_under_vmap_and_second_order():
    f = ember.checkpoint(lambda n, x: enp.sin(x) ** n if n > 1 else x, static_argnums=(0,))
    g = np.asarray(ember.vmap(ember.grad(f, 1), in_axes=(None, 0))(3, X))
    np.testing.assert_allclose(g, 3 * np.sin(X) ** 2 * np.cos(X), rtol=1e-12)
    h = np.asarray(ember.vmap(ember.grad(ember.grad(f, 1), 1), in_axes=(None, 0))(3, X))
    np.testing.assert_allclose(h, 6 * np.sin(X) * np.cos(X) ** 2 - 3 * np.sin(X) ** 3, rtol=1e-12)


def test_vmap_axis_size_negative_axes_and_size_zero():
    np.testing.assert_allclose(np.asarray(ember.vmap(lambda x: x * 2, in_axes=None, axis_size=3)(X)),
                               np.tile(2 * X, (3, 1)))
    with pytest.raises(ValueError, match="inconsistent sizes"):
        ember.vmap(lambda x: x * 2, axis_size=3)(X)
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(np.asarray(ember.vmap(lambda x: x.sum(), in_axes=-1)(a)), a.sum(0))
    assert np.asarray(ember.vmap(ember.grad(lambda x: (x ** 2).sum()))(np.zeros((0, 3)))).shape == (0, 3)
    assert np.asarray(ember.vmap(lambda x: x * 2, out_axes=1)(np.zeros((0, 3)))).shape == (3, 0)
    u, v = ember.vmap(lambda x, y: (x * 2, y + 1), in_axes=(0, None), out_axes=(0, None))(X, Y)
    np.testing.assert_allclose(np.asarray(v), Y + 1)


# ---- custom_jvp / custom_vjp under other transforms -----------------------------------------

@ember.custom_jvp
def _sin_mul(x, y):
    return enp.sin(x) * y


@_sin_mul.defjvp
def _sin_mul_jvp(p, t):
    (x, y), (tx, ty) = p, t
    return _sin_mul(x, y), enp.cos(x) * y * tx + enp.sin(x) * ty


@ember.custom_vjp
def _sin_mul_v(x, y):
    return enp.sin(x) * y


_sin_mul_v.defvjp(lambda x, y: (_sin_mul_v(x, y), (enp.cos(x), enp.sin(x), y)),
                  lambda r, ct: (r[0] * r[2] * ct, r[1] * ct))


@functools.partial(ember.custom_vjp, nondiff_argnums=(0,))
def _power_v(n, x):
    return x ** n


_power_v.defvjp(lambda n, x: (_power_v(n, x), x), lambda n, x, ct: (n * x ** (n - 1) * ct,))


@pytest.mark.parametrize("f", [_sin_mul, _sin_mul_v], ids=["custom_jvp", "custom_vjp"])
def test_custom_rules_under_vmap_jit_and_second_order(f):
    gx, gy = ember.vmap(ember.grad(f, (0, 1)))(X, Y)
    np.testing.assert_allclose(np.asarray(gx), np.cos(X) * Y)
    np.testing.assert_allclose(np.asarray(gy), np.sin(X))
    gx, gy = ember.jit(ember.grad(f, (0, 1)))(0.3, 2.0)
    assert float(gx) == pytest.approx(np.cos(0.3) * 2.0, rel=1e-6)
    h = np.asarray(ember.vmap(ember.grad(ember.grad(f)))(X, Y))
    np.testing.assert_allclose(h, -np.sin(X) * Y, rtol=1e-12)
    outer = np.asarray(ember.vmap(ember.vmap(f, in_axes=(0, None)), in_axes=(None, 0))(X, Y))
    np.testing.assert_allclose(outer, np.sin(X)[None, :] * Y[:, None])


def test_custom_jvp_forward_over_reverse():
    hess = ember.hessian(_sin_mul, (0, 1))(0.3, 2.0)
    assert float(hess[0][1]) == pytest.approx(np.cos(0.3), rel=1e-6)
    _, t = ember.jvp(lambda x: ember.vjp(_sin_mul, x, 2.0)[1](1.0)[0], (0.3,), (1.0,))
    assert float(t) == pytest.approx(-2.0 * np.sin(0.3), rel=1e-6)


def test_custom_vjp_forward_mode_raises_clearly():
    # JAX refuses too: a custom_vjp function has no forward rule
    with pytest.raises(TypeError, match=r"can't apply forward-mode autodiff \(jvp\) to a custom_vjp"):
        ember.hessian(_sin_mul_v, (0, 1))(0.3, 2.0)
    with pytest.raises(TypeError, match="custom_vjp"):
        ember.jvp(lambda x: ember.vjp(_sin_mul_v, x, 2.0)[1](1.0)[0], (0.3,), (1.0,))


def test_custom_vjp_nondiff_argnums_vmap_and_second_order():
    g = np.asarray(ember.vmap(ember.grad(_power_v, 1), in_axes=(None, 0))(3, X))
    np.testing.assert_allclose(g, 3 * X ** 2)
    assert float(ember.grad(ember.grad(_power_v, 1), 1)(3, 0.7)) == pytest.approx(6 * 0.7, rel=1e-6)


def test_custom_vjp_closure_over_batched_value():
    def make(scale):
        @ember.custom_vjp
        def c(x):
            return enp.sin(x) * scale
        c.defvjp(lambda x: (c(x), enp.cos(x)), lambda r, g: (r * g * scale,))
        return c
    got = np.asarray(ember.vmap(lambda s: ember.grad(make(s))(enp.asarray(0.5, "float64")))(Y))
    np.testing.assert_allclose(got, np.cos(0.5) * Y)


# ---- errors of the entry points --------------------------------------------------------------

def test_grad_entry_point_errors():
    with pytest.raises(TypeError, match=r"grad requires a scalar \(shape \(\)\) output, got shape \(4,\)"):
        ember.grad(lambda x: x * 2)(X)
    with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs.*int"):
        ember.grad(lambda x: x * 2.0)(3)
    with pytest.raises(TypeError, match="jacrev requires real- or complex-valued inputs"):
        ember.jacrev(lambda x: x * 2.0)(np.arange(3))


def test_linear_transpose_and_linearize():
    t = ember.linear_transpose(lambda x: 2.0 * x[::-1] + x, X)(Y)
    np.testing.assert_allclose(np.asarray(t[0]), 2.0 * Y[::-1] + Y)
    with pytest.raises(Exception):
        ember.linear_transpose(lambda x: x * x, X)(Y)
    y, f_jvp = ember.linearize(lambda x: enp.sin(x) * x ** 2, X)
    d = np.cos(X) * X ** 2 + 2 * X * np.sin(X)
    np.testing.assert_allclose(np.asarray(f_jvp(Y)), d * Y)
    np.testing.assert_allclose(np.asarray(ember.jit(f_jvp)(Y + 2 * Y)),
                               np.asarray(f_jvp(Y)) + np.asarray(f_jvp(2 * Y)))


def test_jvp_integer_primal_needs_a_float0_tangent():
    # as JAX: an int tangent for an int primal is a TypeError naming both dtypes
    x = enp.arange(3)
    with pytest.raises(TypeError, match=r"primals\[0\] has dtype int32.*float0"):
        ember.jvp(lambda v: v * 2, (x,), (enp.arange(3),))
    with pytest.raises(TypeError, match="float0"):
        ember.jvp(lambda v: v * 2, (x,), (enp.ones(3),))
    y, t = ember.jvp(lambda v, w: v * w, (x, 2.0),
                     (np.zeros((3,), ember.dtypes.float0), 1.0))
    assert y.tolist() == [0.0, 2.0, 4.0] and t.tolist() == [0.0, 1.0, 2.0]
