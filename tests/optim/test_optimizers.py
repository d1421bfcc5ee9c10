"""Trajectories of every optimiser (functional core and shim) against hand-written float64
numpy versions of PyTorch's formulas, on a fixed quadratic and a small MLP."""
from __future__ import annotations

import numpy as np
import pytest
from _optim_reference import REFERENCES, mlp_problem, quadratic_problem

import ember
import ember.numpy as enp
from ember import optim, tree

STEPS = 20

# (name, functional hyperparameters); each runs against the reference with the same values.
CONFIGS = [
    ("sgd", dict(lr=0.05)),
    ("sgd", dict(lr=0.05, momentum=0.9)),
    ("sgd", dict(lr=0.05, momentum=0.9, dampening=0.5, weight_decay=0.1)),
    ("sgd", dict(lr=0.05, momentum=0.8, nesterov=True)),
    ("sgd", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("adam", dict(lr=0.05)),
    ("adam", dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("adam", dict(lr=0.05, amsgrad=True)),
    ("adamw", dict(lr=0.05)),
    ("adamw", dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    ("nadam", dict(lr=0.05)),
    ("nadam", dict(lr=0.05, weight_decay=0.1, momentum_decay=0.01)),
    ("nadam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("radam", dict(lr=0.05)),
    ("radam", dict(lr=0.05, betas=(0.9, 0.9), weight_decay=0.1)),
    ("radam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("adamax", dict(lr=0.05)),
    ("adamax", dict(lr=0.05, weight_decay=0.1, betas=(0.5, 0.9))),
    ("rmsprop", dict(lr=0.01)),
    ("rmsprop", dict(lr=0.01, centered=True)),
    ("rmsprop", dict(lr=0.01, momentum=0.9, weight_decay=0.1)),
    ("rmsprop", dict(lr=0.005, alpha=0.9, momentum=0.5, centered=True)),
    ("adagrad", dict(lr=0.1)),
    ("adagrad", dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.3, weight_decay=0.1)),
    ("adadelta", dict()),
    ("adadelta", dict(lr=0.5, rho=0.5, weight_decay=0.1)),
    ("lion", dict(lr=0.01)),
    ("lion", dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.5)),
    ("lamb", dict(lr=0.05)),
    ("lamb", dict(lr=0.05, weight_decay=0.1)),
]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in hp.items()) or 'defaults'}" for n, hp in CONFIGS]

SHIM = {"sgd": optim.SGD, "adam": optim.Adam, "adamw": optim.AdamW, "nadam": optim.NAdam,
        "radam": optim.RAdam, "adamax": optim.Adamax, "rmsprop": optim.RMSprop,
        "adagrad": optim.Adagrad, "adadelta": optim.Adadelta, "lion": optim.Lion, "lamb": optim.LAMB}


def to_ember(t):
    return tree.map(lambda a: enp.asarray(np.asarray(a, dtype=np.float64)), t)


def to_numpy(t):
    return tree.map(lambda a: np.asarray(a), t)


def reference_trajectory(name, hp, params, grad_fn, steps=STEPS):
    ref = REFERENCES[name](**hp)
    leaves, td = tree.flatten(params)
    out = []
    for _ in range(steps):
        grads = tree.leaves(grad_fn(tree.unflatten(td, leaves)))
        leaves = ref.step(leaves, grads)
        out.append(tree.unflatten(td, leaves))
    return out


def functional_trajectory(name, hp, params, grad_fn, steps=STEPS, jit=False):
    tx = getattr(optim, name)(**hp)
    p = to_ember(params)
    state = tx.init(p)

    def step(p, g, state):
        u, state = tx.update(g, state, p)
        return optim.apply_updates(p, u), state
    if jit:
        step = ember.jit(step)
    out = []
    for _ in range(steps):
        g = to_ember(grad_fn(to_numpy(p)))
        p, state = step(p, g, state)
        out.append(to_numpy(p))
    return out


def assert_close_traj(got, want, rtol=1e-9, atol=1e-11):
    for i, (a, b) in enumerate(zip(got, want)):
        for (path, x), y in zip(tree.leaves_with_path(a), tree.leaves(b)):
            np.testing.assert_allclose(x, y, rtol=rtol, atol=atol,
                                       err_msg=f"step {i + 1}, param {path}")


@pytest.mark.parametrize("name,hp", CONFIGS, ids=IDS)
def test_functional_matches_reference_on_quadratic(name, hp):
    params, grad_fn = quadratic_problem()
    want = reference_trajectory(name, hp, params, grad_fn)
    got = functional_trajectory(name, hp, params, grad_fn)
    assert_close_traj(got, want)
    # it moves: a broken update that returns zeros would pass a weaker test
    assert not np.allclose(got[-1]["x"], params["x"])


def shim_run(name, hp, jit):
    params, grad_fn, _ = mlp_problem()
    want = reference_trajectory(name, hp, params, grad_fn)
    opt = SHIM[name](to_ember(params), jit=jit, **hp)
    got = []
    for _ in range(STEPS):
        g = to_ember(grad_fn(to_numpy(opt.params)))
        opt.step(g)
        got.append(to_numpy(opt.params))
    assert_close_traj(got, want)
    return opt


@pytest.mark.parametrize("name,hp", CONFIGS, ids=IDS)
def test_shim_matches_reference_on_mlp(name, hp):
    # eager here; the compiled path (one native compile each) runs once per class below
    shim_run(name, hp, jit=False)


FIRST_OF_EACH = [(n, hp) for i, (n, hp) in enumerate(CONFIGS) if n not in [c[0] for c in CONFIGS[:i]]]


@pytest.mark.parametrize("name,hp", FIRST_OF_EACH, ids=[n for n, _ in FIRST_OF_EACH])
def test_jitted_shim_matches_reference_on_mlp(name, hp):
    opt = shim_run(name, hp, jit=True)
    assert opt._compiled._cache_size() == 1


@pytest.mark.parametrize("name", ["adam", "rmsprop", "radam"])
def test_jitted_functional_step_matches_reference(name):
    hp = dict(lr=0.01, weight_decay=0.05)
    params, grad_fn = quadratic_problem()
    want = reference_trajectory(name, hp, params, grad_fn)
    got = functional_trajectory(name, hp, params, grad_fn, jit=True)
    assert_close_traj(got, want)


def test_float32_params_stay_float32_and_track_float64():
    params, grad_fn = quadratic_problem()
    tx = optim.adam(lr=0.05, weight_decay=0.1)
    p = tree.map(lambda a: enp.asarray(a.astype(np.float32)), params)
    state = tx.init(p)
    for _ in range(STEPS):
        g = tree.map(lambda a: enp.asarray(a.astype(np.float32)), grad_fn(to_numpy(p)))
        u, state = tx.update(g, state, p)
        p = optim.apply_updates(p, u)
        assert all(x.dtype == np.float32 for x in tree.leaves(p))
        assert all(x.dtype == np.float32 for x in tree.leaves(state.inner_state.exp_avg))
    want = reference_trajectory("adam", dict(lr=0.05, weight_decay=0.1), params, grad_fn)[-1]
    np.testing.assert_allclose(np.asarray(p["x"]), want["x"], rtol=1e-4, atol=1e-5)


def test_mlp_in_ember_numpy_with_ember_grad():
    for name in ("matmul", "tanh", "mean"):
        if not hasattr(enp, name):
            pytest.skip(f"ember.numpy.{name} has not landed yet")
    params, grad_fn, (x, y) = mlp_problem()
    xe, ye = enp.asarray(x), enp.asarray(y)

    def loss(p):
        h = enp.tanh(xe @ p["l1"]["w"] + p["l1"]["b"])
        out = h @ p["l2"]["w"] + p["l2"]["b"]
        return enp.mean((out - ye) * (out - ye))

    hp = dict(lr=0.05, weight_decay=0.01)
    want = reference_trajectory("adamw", hp, params, grad_fn)
    opt = optim.AdamW(to_ember(params), **hp)
    losses = []
    for _ in range(STEPS):
        value, g = ember.value_and_grad(loss)(opt.params)
        losses.append(float(value))
        opt.step(g)
    assert_close_traj([to_numpy(opt.params)], [want[-1]], rtol=1e-8, atol=1e-10)
    assert losses[-1] < losses[0]


def test_radam_takes_both_branches_within_twenty_steps():
    # rho_t > 5 first at step 6 for beta2 = 0.999: the test above covers both formulas
    b2 = 0.999
    rho_inf = 2 / (1 - b2) - 1
    rho = [rho_inf - 2 * t * b2 ** t / (1 - b2 ** t) for t in range(1, STEPS + 1)]
    assert rho[0] <= 5 < rho[-1]


def test_sgd_momentum_enabled_later_starts_buffer_from_the_gradient():
    # PyTorch creates the momentum buffer at the first step with momentum != 0
    p = [enp.asarray(np.array([1.0]))]
    tx = optim.sgd(lr=0.1, momentum=0.0, dampening=0.5)
    s = tx.init(p)
    u, s = tx.update([enp.asarray(np.array([1.0]))], s, p)
    assert np.asarray(u[0]).tolist() == [-0.1]
    s = optim.set_hyperparam(s, "momentum", 0.9)
    u, s = tx.update([enp.asarray(np.array([2.0]))], s, p)
    assert np.allclose(np.asarray(u[0]), [-0.2])           # buf = g on its first use
    u, s = tx.update([enp.asarray(np.array([2.0]))], s, p)
    assert np.allclose(np.asarray(u[0]), [-0.1 * (0.9 * 2.0 + 0.5 * 2.0)])


def test_differentiates_through_an_update_step():
    # d/d lr of the loss after one SGD step on f(w) = w^2 / 2: w1 = w - lr w, f' = -w1 w
    tx = optim.sgd(lr=0.1)

    def after_step(lr, w):
        state = optim.set_hyperparam(tx.init([w]), "lr", lr)
        u, _ = tx.update([w], state, [w])
        w1 = optim.apply_updates([w], u)[0]
        return w1 * w1 * 0.5

    w = enp.asarray(np.float64(3.0))
    g = ember.grad(after_step)(enp.asarray(np.float64(0.1)), w)
    assert np.isclose(float(g), -(3.0 - 0.1 * 3.0) * 3.0)
