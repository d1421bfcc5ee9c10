"""The composability matrix: every transform against closed forms, finite
differences and Python loops, nested to several levels."""
import numpy as np
import pytest

import ember
from ember import lax
from ember.fx.ir import typecheck
from ember.testing import check_grads, check_vmap
import ember.numpy as enp

F64 = np.float64

# (name, f, closed-form derivatives [f', f'', f''', f''''])
CLOSED = [
    ("sin", lambda x: lax.sin(x), [np.cos, lambda x: -np.sin(x), lambda x: -np.cos(x), np.sin]),
    ("exp", lambda x: lax.exp(x), [np.exp] * 4),
    ("tanh", lambda x: lax.tanh(x), [
        lambda x: 1 - np.tanh(x) ** 2,
        lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2),
        lambda x: (6 * np.tanh(x) ** 2 - 2) * (1 - np.tanh(x) ** 2),
        lambda x: (16 * np.tanh(x) - 24 * np.tanh(x) ** 3) * (1 - np.tanh(x) ** 2)]),
    ("x**5", lambda x: lax.integer_pow(x, 5), [
        lambda x: 5 * x ** 4, lambda x: 20 * x ** 3, lambda x: 60 * x ** 2, lambda x: 120 * x]),
    ("logistic", lambda x: lax.logistic(x), None),
]


def _nth(f, n):
    for _ in range(n):
        f = ember.grad(f)
    return f


@pytest.mark.parametrize("name,f,ds", [c for c in CLOSED if c[2] is not None], ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_higher_order_grad_closed_form(name, f, ds, order):
    x = np.float64(0.37)
    got = float(_nth(f, order)(x))
    np.testing.assert_allclose(got, ds[order - 1](x), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name,f,ds", CLOSED, ids=lambda v: v if isinstance(v, str) else "")
def test_check_grads_order3(name, f, ds):
    check_grads(f, (np.array([0.3, -0.8, 1.1]),), order=3)


def _mlp(w, x):
    h = lax.tanh(lax.add(lax.mul(x, w), np.float64(0.1)))
    return lax.reduce_sum(lax.mul(h, h), (0,))


def test_jit_equals_eager_and_grad_of_jit():
    w = np.array([0.5, -1.0, 2.0])
    x = np.array([1.0, 0.3, -0.2])
    np.testing.assert_allclose(ember.jit(_mlp)(w, x), _mlp(enp.asarray(w), enp.asarray(x)))
    g1 = ember.grad(_mlp)(w, x)
    g2 = ember.grad(ember.jit(_mlp))(w, x)
    g3 = ember.jit(ember.grad(ember.jit(_mlp)))(w, x)
    np.testing.assert_allclose(g1, g2, rtol=1e-12)
    np.testing.assert_allclose(g1, g3, rtol=1e-12)


def test_vmap_grad_and_grad_vmap():
    ws = np.random.default_rng(0).standard_normal((4, 3))
    x = np.array([1.0, 0.3, -0.2])
    per = ember.vmap(ember.grad(_mlp), in_axes=(0, None))(ws, x)
    loop = np.stack([np.asarray(ember.grad(_mlp)(w, x)) for w in ws])
    np.testing.assert_allclose(per, loop, rtol=1e-12)
    jper = ember.jit(ember.vmap(ember.grad(_mlp), in_axes=(0, None)))(ws, x)
    np.testing.assert_allclose(jper, loop, rtol=1e-12)
    g = ember.grad(lambda w: lax.reduce_sum(ember.vmap(_mlp, in_axes=(None, 0))(w, ws), (0,)))(x)
    g_loop = sum(np.asarray(ember.grad(_mlp)(x, w)) for w in ws)
    np.testing.assert_allclose(g, g_loop, rtol=1e-12)


def test_vmap_matches_loop_with_axes():
    x = np.random.default_rng(1).standard_normal((3, 5))
    check_vmap(lambda v: lax.mul(lax.sin(v), np.float64(2.0)), (x,), in_axes=1)
    check_vmap(lambda v: lax.reduce_sum(v, (0,)), (x,), in_axes=0)


def test_jacfwd_equals_jacrev_and_hessian_symmetric():
    def f(x):
        return lax.mul(lax.sin(x), lax.reduce_sum(lax.mul(x, x), (0,)))
    x = np.array([0.3, -0.7, 1.2])
    jf = np.asarray(ember.jacfwd(f)(x))
    jr = np.asarray(ember.jacrev(f)(x))
    np.testing.assert_allclose(jf, jr, rtol=1e-12)
    h = np.asarray(ember.hessian(lambda x: lax.reduce_sum(f(x), (0,)))(x))
    np.testing.assert_allclose(h, h.T, rtol=1e-10)
    # Hessian-vector product by forward-over-reverse equals the explicit Hessian
    v = np.array([1.0, 2.0, -0.5])
    hvp = ember.jvp(ember.grad(lambda x: lax.reduce_sum(f(x), (0,))), (x,), (v,))[1]
    np.testing.assert_allclose(hvp, h @ v, rtol=1e-10)


def test_define_by_run_python_control_flow_under_grad():
    def f(x):
        y = x
        for _ in range(3):
            if y > 0.5:
                y = lax.sin(y)
            else:
                y = lax.mul(y, np.float64(3.0))
        return y
    check_grads(f, (np.float64(0.9),), order=2)


def test_python_branch_under_jit_raises_concretization_error():
    def f(x):
        return x if x > 0 else -x
    with pytest.raises(ember.ConcretizationError, match="ember.cond"):
        ember.jit(f)(1.0)


def test_grad_requires_scalar_output():
    with pytest.raises(TypeError, match="scalar"):
        ember.grad(lambda x: lax.sin(x))(np.ones(3))


def test_grad_of_integer_input_is_an_error_unless_allowed():
    with pytest.raises(TypeError, match="allow_int"):
        ember.grad(lambda x: x)(np.int32(1))


def test_leaked_tracer_is_reported():
    box = []

    def f(x):
        box.append(x)
        return x
    ember.jit(f)(1.0)
    with pytest.raises(ember.UnexpectedTracerError, match="escaped"):
        lax.sin(box[0])


def test_graphs_typecheck():
    w = np.array([0.5, -1.0, 2.0])
    x = np.array([1.0, 0.3, -0.2])
    for g in [ember.make_graph(_mlp)(w, x), ember.make_graph(ember.grad(_mlp))(w, x),
              ember.make_graph(ember.vmap(ember.grad(_mlp), in_axes=(None, 0)))(w, np.ones((2, 3)))]:
        typecheck(g)


def test_has_aux_returns_primal_values_everywhere():
    f = lambda x: (lax.mul(lax.sin(x), x), {"s": lax.reduce_sum(x, (0,)), "name": "tag"})
    x = np.array([0.3, -0.7, 1.2])
    jf, aux_f = ember.jacfwd(f, has_aux=True)(x)
    jr, aux_r = ember.jacrev(f, has_aux=True)(x)
    np.testing.assert_allclose(jf, jr, rtol=1e-12)
    for aux in (aux_f, aux_r):
        assert isinstance(aux["s"], ember.Array) and aux["name"] == "tag"
        np.testing.assert_allclose(aux["s"], x.sum())
    g, aux = ember.grad(lambda v: (lax.reduce_sum(lax.mul(v, v), (0,)), lax.mul(v, np.float64(2))), has_aux=True)(x)
    np.testing.assert_allclose(g, 2 * x)
    assert isinstance(aux, ember.Array)
    _, _, aux = ember.jvp(lambda v: (lax.mul(v, v), lax.sin(v)), (x,), (x,), has_aux=True)
    assert isinstance(aux, ember.Array)
    _, f_vjp, aux = ember.vjp(lambda v: (lax.mul(v, v), lax.sin(v)), x, has_aux=True)
    np.testing.assert_allclose(f_vjp(x)[0], 2 * x * x)
    assert isinstance(aux, ember.Array)


# A table of test functions over ember.numpy (matmul chains, indexing, reductions,
# control flow) run through the whole matrix of transforms.
MATRIX = {
    "matmul_chain": (lambda x: enp.sum(enp.tanh(x @ x.T) @ x), (3, 4)),
    "indexing": (lambda x: enp.sum(x[1:, ::2] ** 2) + x[0, -1] * x.at[0, 0].multiply(3.0)[0, 0], (3, 4)),
    "gather": (lambda x: enp.sum(x[enp.asarray([2, 0, 2])] * enp.sin(x[:, 1:2])), (3, 4)),
    "softmax_ce": (lambda x: -enp.sum(x[:, 0] - enp.log(enp.sum(enp.exp(x), axis=1))), (3, 4)),
    "sort_cumsum": (lambda x: enp.sum(enp.cumsum(enp.sort(x, axis=1), axis=1) * x), (3, 4)),
    "scan": (lambda x: ember.scan(lambda c, r: (enp.sin(c * r), c), x[0], x)[0].sum(), (3, 4)),
    "cond": (lambda x: ember.cond(x[0, 0] > 0, lambda v: enp.sum(v ** 3), lambda v: enp.sum(enp.cos(v)), x),
             (3, 4)),
}


@pytest.mark.parametrize("name", sorted(MATRIX))
def test_transform_matrix(name):
    f, shape = MATRIX[name]
    x = np.random.default_rng(len(name)).standard_normal(shape) * 0.5 + 0.2
    xe = enp.asarray(x)
    np.testing.assert_allclose(ember.jit(f)(xe), f(xe), rtol=1e-10)
    check_grads(f, (x,), order=2)
    g = ember.grad(f)(xe)
    np.testing.assert_allclose(ember.jit(ember.grad(f))(xe), g, rtol=1e-9, atol=1e-12)
    jf = np.asarray(ember.jacfwd(ember.grad(f))(xe))
    jr = np.asarray(ember.jacrev(ember.grad(f))(xe))
    np.testing.assert_allclose(jf, jr, rtol=1e-8, atol=1e-10)
    h = jf.reshape(x.size, x.size)
    np.testing.assert_allclose(h, h.T, rtol=1e-8, atol=1e-10)
    xs = np.stack([x, x * 0.7, -x])
    per = ember.vmap(ember.grad(f))(enp.asarray(xs))
    loop = np.stack([np.asarray(ember.grad(f)(enp.asarray(v))) for v in xs])
    np.testing.assert_allclose(per, loop, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ember.jit(ember.vmap(ember.grad(f)))(enp.asarray(xs)), loop, rtol=1e-9, atol=1e-12)
