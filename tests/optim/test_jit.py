"""A jitted training step compiles once while hyperparameters change between steps."""
from __future__ import annotations

import numpy as np
from _optim_reference import REFERENCES, quadratic_problem

import ember
import ember.numpy as enp
from ember import optim, tree


def to_ember(t):
    return tree.map(lambda a: enp.asarray(np.asarray(a, dtype=np.float64)), t)


def test_functional_step_with_changing_lr_compiles_once():
    params, grad_fn = quadratic_problem()
    tx = optim.chain(optim.clip_by_global_norm(100.0), optim.adamw(lr=0.1, weight_decay=0.1))
    traced = []

    def step(p, g, s):
        traced.append(1)                      # runs only while tracing
        u, s = tx.update(g, s, p)
        return optim.apply_updates(p, u), s

    jstep = ember.jit(step)
    p = to_ember(params)
    s = tx.init(p)
    ref = REFERENCES["adamw"](lr=0.1, weight_decay=0.1)
    leaves, td = tree.flatten(params)
    for i in range(10):
        lr = 0.1 / (1 + i)
        s = optim.set_hyperparam(s, "lr", lr)
        ref.hp["lr"] = lr
        g = grad_fn(tree.map(np.asarray, p))
        p, s = jstep(p, to_ember(g), s)
        leaves = ref.step(leaves, tree.leaves(grad_fn(tree.unflatten(td, leaves))))
    assert len(traced) == 1
    assert jstep._cache_size() == 1 and jstep.compile_count == 1
    for x, y in zip(tree.leaves(p), leaves):
        np.testing.assert_allclose(np.asarray(x), y, rtol=1e-10)


def test_shim_step_with_changing_lr_and_betas_compiles_once():
    params, grad_fn = quadratic_problem()
    opt = optim.Adam(to_ember(params), lr=0.1)
    for i in range(6):
        opt.param_groups[0]["lr"] = 0.1 * 0.5 ** i
        opt.param_groups[0]["betas"] = (0.9 - 0.01 * i, 0.999)
        opt.step(to_ember(grad_fn(tree.map(np.asarray, opt.params))))
    assert opt._compiled is not None
    assert opt._compiled._cache_size() == 1 and opt._compiled.compile_count == 1


def test_update_fn_is_pure_and_jittable():
    params, grad_fn = quadratic_problem()
    opt = optim.SGD([{"params": to_ember(params), "lr": 0.01},
                     {"params": {"z": enp.asarray(np.ones(3))}, "lr": 0.5, "momentum": 0.9}],
                    lr=0.1)
    step = ember.jit(opt.update_fn)
    p, s = opt.params, opt.functional_state()
    for _ in range(3):
        g = [to_ember(grad_fn(tree.map(np.asarray, p[0]))), {"z": enp.asarray(np.ones(3))}]
        p, s = step(p, g, s)
    assert step._cache_size() == 1
    # z: momentum buffer 1, 1.9, 2.71 -> z = 1 - 0.5 * 5.61
    np.testing.assert_allclose(np.asarray(p[1]["z"]), 1 - 0.5 * (1 + 1.9 + 2.71))
    # the optimizer itself did not move: update_fn is pure
    assert np.asarray(opt.params[1]["z"]).tolist() == [1.0, 1.0, 1.0]
    opt.apply_functional_state(s)
    opt.params = p
    np.testing.assert_allclose(np.asarray(opt.params[1]["z"]), 1 - 0.5 * (1 + 1.9 + 2.71))
    np.testing.assert_allclose(np.asarray(opt.state_dict()["state"][2]["momentum_buffer"]), 2.71)


def test_schedule_inside_jit_compiles_once():
    sched = optim.schedules.warmup_cosine(0.0, 1.0, warmup_steps=3, decay_steps=10)
    tx = optim.sgd(lr=sched)
    p = [enp.asarray(np.float64(0.0))]
    s = tx.init(p)
    jupdate = ember.jit(lambda g, s, p: tx.update(g, s, p))
    got = []
    for _ in range(12):
        u, s = jupdate([enp.asarray(np.float64(1.0))], s, p)
        got.append(-float(u[0]))
    np.testing.assert_allclose(got, [sched(t) for t in range(12)], rtol=1e-12, atol=1e-15)
    assert jupdate._cache_size() == 1
