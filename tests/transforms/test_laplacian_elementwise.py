"""The forward Laplacian's rule for elementwise primitives nonlinear in one operand
(J_out = f' J, L_out = f' L + f'' |J|^2, from one order-2 Taylor rule with unit
first-order input) against trace(hessian), in float64, for a table of primitives:
unary transcendentals, powers, piecewise ones and binary ones with a constant
operand; eagerly and under jit(vmap)."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax

R = np.random.default_rng(0)

# name -> elementwise function of an array with values in (0.2, 0.9) (every domain)
TABLE = {
    "tanh": enp.tanh, "exp": enp.exp, "log": enp.log, "sin": enp.sin, "cos": enp.cos,
    "logistic": lax.logistic, "sqrt": enp.sqrt, "rsqrt": lax.rsqrt, "cbrt": enp.cbrt,
    "square": enp.square, "integer_pow": lambda z: z ** 3, "pow": lambda z: z ** 2.5,
    "const_pow": lambda z: 1.7 ** z, "recip": lambda z: 1.0 / z, "erf": lax.erf, "atan": enp.arctan,
    "asinh": enp.arcsinh, "log1p": enp.log1p, "expm1": enp.expm1, "sinh": enp.sinh,
    "abs": lambda z: enp.abs(z - 0.5) ** 2, "relu_sq": lambda z: enp.maximum(z - 0.5, 0.0) ** 2,
    "where": lambda z: enp.where(z > 0.5, enp.sin(z), z * z), "clip": lambda z: enp.clip(z, 0.3, 0.8) ** 2,
}


def _field(g):
    # a scalar function of x in R^3 through the primitive, with mixing on both sides
    w = R.normal(size=(3, 5)) * 0.3
    v = R.normal(size=5)

    def u(x):
        z = 0.55 + 0.3 * enp.tanh(x @ w)
        return enp.sum(g(z) * v)
    return u


@pytest.mark.parametrize("name", sorted(TABLE))
def test_laplacian_of_each_elementwise_primitive(name):
    u = _field(TABLE[name])
    pts = R.normal(size=(6, 3))
    ref = np.array([float(enp.trace(ember.hessian(u)(p))) for p in pts])
    eager = np.array([float(ember.laplacian(u)(p)) for p in pts])
    np.testing.assert_allclose(eager, ref, rtol=1e-11, atol=1e-11)
    compiled = np.asarray(ember.jit(ember.vmap(ember.laplacian(u)))(pts))
    np.testing.assert_allclose(compiled, ref, rtol=1e-11, atol=1e-11)


def test_activation_rule_graph_has_one_transcendental_per_layer():
    # the rule applies f' and f'' once per element, not the recurrence per column
    w = R.normal(size=(4, 8))
    u = lambda x: enp.sum(enp.tanh(x @ w))  # noqa: E731
    g = ember.make_graph(ember.laplacian(u))(R.normal(size=4))
    from ember.fx.passes import optimize
    eqs = optimize(g).graph.equations
    assert sum(e.prim.name == "tanh" for e in eqs) == 1
    # one sum over the 4 Jacobian columns (of their squares), no per-column products by f''
    sums = [e for e in eqs if e.prim.name == "reduce_sum" and e.inputs[0].aval.shape == (4, 8)]
    assert len(sums) == 1 and sums[0].params["axes"] == (0,)
    assert sum(e.inputs[0].aval.shape == (4, 8) for e in eqs if e.prim.name == "mul") <= 2   # J' = f' J, J * J
    x = R.normal(size=4)
    np.testing.assert_allclose(float(ember.laplacian(u)(x)), float(enp.trace(ember.hessian(u)(x))), rtol=1e-12)


def test_float32_and_linear_elementwise_ops():
    # float32 follows the same rule; a linear elementwise op (x * 2, x + b) keeps J as it is
    w = R.normal(size=(3, 6)).astype(np.float32)
    u = lambda x: enp.sum(enp.tanh(x @ w * 2.0 + 1.0) ** 2)  # noqa: E731
    pts = R.normal(size=(5, 3)).astype(np.float32)
    got = np.asarray(ember.jit(ember.vmap(ember.laplacian(u)))(pts))
    ref = np.array([float(enp.trace(ember.hessian(u)(p.astype(np.float64)))) for p in pts])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4)


def test_a_widening_convert_inside_takes_the_general_path():
    # float32 input, float64 activations: the convert is linear (J converted as it is)
    w = R.normal(size=(3, 4))
    u = lambda x: enp.sum(enp.tanh(x.astype(np.float64) @ w) ** 2)  # noqa: E731
    x = R.normal(size=3).astype(np.float32)
    got = ember.laplacian(u)(x)
    ref = enp.trace(ember.hessian(lambda z: u(z))(x.astype(np.float64)))
    assert np.asarray(got).dtype == np.float64
    np.testing.assert_allclose(float(got), float(ref), rtol=1e-10)
