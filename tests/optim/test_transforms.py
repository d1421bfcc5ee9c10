"""Building blocks: chain, injected hyperparameters, clipping, masked weight decay,
multi_transform and gradient accumulation."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import optim, tree


def arr(x):
    return enp.asarray(np.asarray(x, dtype=np.float64))


def run(tx, params, grads_seq):
    state = tx.init(params)
    for g in grads_seq:
        u, state = tx.update(g, state, params)
        params = optim.apply_updates(params, u)
    return params, state


# --- chain and hyperparameters --------------------------------------------------------

def test_chain_state_is_keyed_by_names_and_set_hyperparam_reaches_inside():
    tx = optim.chain(optim.clip_by_global_norm(1.0), optim.add_decayed_weights(0.1),
                     optim.scale_by_learning_rate(0.5))
    p = {"w": arr([1.0, 2.0])}
    s = tx.init(p)
    assert set(s) == {"clip_by_global_norm", "add_decayed_weights", "scale_by_learning_rate"}
    assert float(optim.get_hyperparam(s, "lr")) == 0.5
    s = optim.set_hyperparam(s, "lr", 0.25)
    s = optim.set_hyperparam(s, "max_norm", 10.0)
    u, _ = tx.update({"w": arr([3.0, 4.0])}, s, p)
    np.testing.assert_allclose(np.asarray(u["w"]), -0.25 * (np.array([3.0, 4.0]) + 0.1 * np.array([1.0, 2.0])))


def test_chain_names_repeats_and_keywords():
    tx = optim.chain(optim.scale(2.0), optim.scale(3.0), last=optim.scale(0.5))
    s = tx.init([])
    assert set(s) == {"scale", "scale_1", "last"}
    u, _ = tx.update([arr(1.0)], tx.init([arr(0.0)]))
    assert float(u[0]) == 3.0


def test_chain_equals_composed_adam_building_blocks_with_weight_decay_mask():
    # decoupled decay masked to matrices: AdamW on w, plain Adam on b
    p = {"w": arr([[1.0, -2.0]]), "b": arr([0.5])}
    grads = [{"w": arr([[0.1 * i, -0.3]]), "b": arr([0.2 * i])} for i in range(1, 6)]
    masked = optim.multi_transform({"decay": optim.adamw(lr=0.1, weight_decay=0.5),
                                    "plain": optim.adamw(lr=0.1, weight_decay=0.0)},
                                   lambda ps: tree.map(lambda x: "decay" if x.ndim >= 2 else "plain", ps))
    got, _ = run(masked, p, grads)
    w_only, _ = run(optim.adamw(lr=0.1, weight_decay=0.5), {"w": p["w"]}, [{"w": g["w"]} for g in grads])
    b_only, _ = run(optim.adam(lr=0.1), {"b": p["b"]}, [{"b": g["b"]} for g in grads])
    np.testing.assert_allclose(np.asarray(got["w"]), np.asarray(w_only["w"]), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got["b"]), np.asarray(b_only["b"]), rtol=1e-12)


def test_inject_hyperparams_with_a_schedule_evaluates_it_at_the_count():
    tx = optim.sgd(lr=optim.schedules.piecewise_constant(1.0, {2: 0.1}))
    p = [arr(0.0)]
    s = tx.init(p)
    seen = []
    for _ in range(4):
        u, s = tx.update([arr(1.0)], s, p)
        seen.append(-float(u[0]))
    np.testing.assert_allclose(seen, [1.0, 1.0, 0.1, 0.1])
    assert float(optim.get_hyperparam(s, "lr")) == pytest.approx(0.1)


def test_scale_by_schedule_uses_the_update_count():
    tx = optim.scale_by_schedule(lambda c: optim.schedules.exponential_decay(1.0, 1, 0.5)(c))
    s = tx.init([])
    out = []
    for _ in range(3):
        u, s = tx.update([arr(1.0)], s)
        out.append(float(u[0]))
    assert out == [1.0, 0.5, 0.25]


def test_hyperparameter_state_is_named_and_float64():
    s = optim.adam(lr=1e-3, betas=(0.8, 0.9)).init({"w": arr([1.0])})
    assert isinstance(s, optim.InjectState)
    assert s.inner_state._fields == ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq")
    assert s.hyperparams["lr"].dtype == np.float64 and s.hyperparams["lr"].shape == ()
    assert [float(b) for b in s.hyperparams["betas"]] == [0.8, 0.9]
    s2 = optim.set_hyperparam(s, "betas", (0.5, 0.6))
    assert [float(b) for b in optim.get_hyperparam(s2, "betas")] == [0.5, 0.6]
    assert sorted(optim.hyperparams(s)) == ["betas", "eps", "lr", "weight_decay"]


# --- clipping -------------------------------------------------------------------------

@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_by_global_norm_matches_torch_formula(max_norm):
    g = {"a": arr([3.0, 0.0]), "b": arr([[0.0, 4.0]])}
    tx = optim.clip_by_global_norm(max_norm)
    u, _ = tx.update(g, tx.init(g))
    coef = min(max_norm / (5.0 + 1e-6), 1.0)
    np.testing.assert_allclose(np.asarray(u["a"]), [3.0 * coef, 0.0])
    np.testing.assert_allclose(np.asarray(u["b"]), [[0.0, 4.0 * coef]])


def test_clip_by_value():
    tx = optim.clip_by_value(0.5)
    u, _ = tx.update([arr([-2.0, 0.25, 3.0])], tx.init([]))
    assert np.asarray(u[0]).tolist() == [-0.5, 0.25, 0.5]


# --- masked weight decay ----------------------------------------------------------------

def test_add_decayed_weights_with_mask_tree_and_callable():
    p = {"w": arr([[2.0]]), "b": arr([3.0]), "norm": {"scale": arr([4.0])}}
    g = tree.map(lambda x: enp.asarray(np.zeros(x.shape)), p)
    for mask in ({"w": True, "b": False, "norm": {"scale": False}}, optim.default_decay_mask):
        tx = optim.add_decayed_weights(0.5, mask=mask)
        u, _ = tx.update(g, tx.init(p), p)
        got = (np.asarray(u["w"]).tolist(), np.asarray(u["b"]).tolist(),
               np.asarray(u["norm"]["scale"]).tolist())
        assert got == ([[1.0]], [0.0], [0.0])
    tx = optim.add_decayed_weights(0.5)
    u, _ = tx.update(g, tx.init(p), p)
    assert np.asarray(u["b"]).tolist() == [1.5]


def test_add_decayed_weights_mask_with_wrong_structure_names_the_path():
    p = {"w": arr([1.0]), "b": arr([1.0])}
    tx = optim.add_decayed_weights(0.1, mask={"w": True})
    with pytest.raises(ValueError, match=r"at \['b'\]"):
        tx.update(p, tx.init(p), p)


def test_add_decayed_weights_with_array_mask_under_jit():
    p = {"w": arr([2.0]), "b": arr([3.0])}
    tx = optim.add_decayed_weights(1.0, mask={"w": enp.asarray(True), "b": enp.asarray(False)})
    u, _ = ember.jit(lambda g, s, p: tx.update(g, s, p))(p, tx.init(p), p)
    assert np.asarray(u["w"]).tolist() == [4.0] and np.asarray(u["b"]).tolist() == [3.0]


# --- multi_transform ----------------------------------------------------------------------

def test_multi_transform_routes_labels_and_keeps_separate_states():
    p = {"enc": {"w": arr([1.0, 1.0])}, "head": {"w": arr([1.0]), "b": arr([1.0])}}
    labels = {"enc": {"w": "frozen"}, "head": {"w": "sgd", "b": "adam"}}
    tx = optim.multi_transform({"sgd": optim.sgd(lr=0.5), "adam": optim.adam(lr=0.1),
                                "frozen": optim.scale(0.0)}, labels)
    s = tx.init(p)
    assert set(s.inner_states) == {"sgd", "adam", "frozen"}
    g = {"enc": {"w": arr([1.0, 2.0])}, "head": {"w": arr([2.0]), "b": arr([-1.0])}}
    u, s = tx.update(g, s, p)
    assert np.asarray(u["enc"]["w"]).tolist() == [0.0, 0.0]
    assert np.asarray(u["head"]["w"]).tolist() == [-1.0]
    assert np.isclose(np.asarray(u["head"]["b"])[0], 0.1)                # Adam's first step: lr * sign
    assert s.inner_states["adam"].inner_state.exp_avg["head"]["w"] is None
    # the sgd learning rate can change on its own
    s2 = optim.MultiTransformState({**s.inner_states,
                                    "sgd": optim.set_hyperparam(s.inner_states["sgd"], "lr", 1.0)})
    u, _ = tx.update(g, s2, p)
    assert np.asarray(u["head"]["w"]).tolist() == [-2.0]


def test_multi_transform_unknown_label():
    p = {"w": arr([1.0])}
    tx = optim.multi_transform({"a": optim.sgd(lr=0.1)}, {"w": "b"})
    with pytest.raises(ValueError, match=r"labels \['b'\] have no transformation"):
        tx.init(p)


# --- gradient accumulation ------------------------------------------------------------------

@pytest.mark.parametrize("jit", [False, True])
def test_accumulate_gradients_applies_inner_to_the_mean_every_k(jit):
    k = 3
    p = {"w": arr([1.0, -1.0])}
    micro = [{"w": arr([0.1 * i, -0.2 * i + 1.0])} for i in range(9)]
    acc = optim.accumulate_gradients(optim.adam(lr=0.1), every_k=k)
    step = (lambda g, s, p: acc.update(g, s, p))
    if jit:
        step = ember.jit(step)
    s = acc.init(p)
    params = p
    for i, g in enumerate(micro):
        u, s = step(g, s, params)
        if (i + 1) % k:
            assert np.all(np.asarray(u["w"]) == 0.0)
        params = optim.apply_updates(params, u)
    # the same as Adam on the mean of each group of k gradients
    ref = optim.adam(lr=0.1)
    rs, rp = ref.init(p), p
    for j in range(0, 9, k):
        mean = {"w": enp.asarray(np.mean([np.asarray(g["w"]) for g in micro[j:j + k]], axis=0))}
        u, rs = ref.update(mean, rs, rp)
        rp = optim.apply_updates(rp, u)
    np.testing.assert_allclose(np.asarray(params["w"]), np.asarray(rp["w"]), rtol=1e-12)
    assert int(s.gradient_step) == 3 and int(s.mini_step) == 0
    assert int(s.inner_state.inner_state.step) == 3
    if jit:
        assert step._cache_size() == 1


def test_accumulate_gradients_validates_every_k():
    with pytest.raises(ValueError, match="every_k must be a positive int"):
        optim.accumulate_gradients(optim.sgd(lr=0.1), every_k=0)


# --- structure errors ---------------------------------------------------------------------

def test_grads_structure_mismatch_reports_the_first_differing_path():
    p = {"layer": {"w": arr([1.0]), "b": arr([1.0])}}
    tx = optim.adam()
    s = tx.init(p)
    with pytest.raises(ValueError, match=r"at \['layer'\]\['w'\], grads has nothing"):
        tx.update({"layer": {"b": arr([1.0])}}, s, p)
    with pytest.raises(ValueError, match=r"at \['layer'\]\['b'\], grads has a list of length 1 "
                                         r"but params has a leaf"):
        tx.update({"layer": {"w": arr([1.0]), "b": [arr([1.0])]}}, s, p)
    with pytest.raises(ValueError, match=r"updates and params have different pytree structures"):
        optim.apply_updates(p, [arr(1.0)])


def test_update_without_params_is_a_clear_error():
    tx = optim.adam()
    with pytest.raises(ValueError, match="needs the current parameters"):
        tx.update([arr(1.0)], tx.init([arr(1.0)]))


@pytest.mark.parametrize("make,msg", [
    (lambda: optim.adam(lr=-1.0), "Invalid learning rate: -1.0"),
    (lambda: optim.sgd(lr=float("nan")), "Invalid learning rate: nan"),
    (lambda: optim.adam(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    (lambda: optim.adamw(betas=(-0.1, 0.9)), "Invalid beta parameter at index 0: -0.1"),
    (lambda: optim.adam(betas=(0.9,)), "Invalid betas"),
    (lambda: optim.adam(eps=-1e-8), "Invalid epsilon value: -1e-08"),
    (lambda: optim.sgd(weight_decay=-0.1), "Invalid weight_decay value"),
    (lambda: optim.sgd(momentum=-0.5), "Invalid momentum value"),
    (lambda: optim.adadelta(rho=1.5), "Invalid rho value"),
    (lambda: optim.sgd(lr=0.1, nesterov=True), "Nesterov momentum requires a momentum"),
    (lambda: optim.clip_by_global_norm(-1.0), "Invalid max_norm"),
])
def test_bad_hyperparameters_raise_value_errors(make, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(".", r"\.")):
        make()


def test_set_hyperparam_errors():
    s = optim.sgd(lr=0.1).init([arr(1.0)])
    with pytest.raises(ValueError, match="Invalid learning rate: -0.5"):
        optim.set_hyperparam(s, "lr", -0.5)
    with pytest.raises(ValueError, match=r"no hyperparameter 'betas'.*\['dampening', 'lr', 'momentum'"):
        optim.set_hyperparam(s, "betas", (0.9, 0.99))
    with pytest.raises(TypeError, match="must be a number"):
        optim.adam(lr="fast")


def test_schedule_valued_hyperparameters_are_not_validated_early():
    # a schedule's values are unknown at construction; it is accepted as is
    tx = optim.adam(lr=optim.schedules.constant(1e-3))
    assert math.isclose(float(optim.get_hyperparam(tx.init([arr(1.0)]), "lr")), 1e-3)
