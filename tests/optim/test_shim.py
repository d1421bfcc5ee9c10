"""The stateful shim: parameter groups, modules, state_dict round trips and bad input."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from _optim_reference import REFERENCES, mlp_problem

import ember.numpy as enp
from ember import optim, tree


def to_ember(t):
    return tree.map(lambda a: enp.asarray(np.asarray(a, dtype=np.float64)), t)


def to_numpy(t):
    return tree.map(np.asarray, t)


class TinyModule:
    """The duck-typed module protocol: parameters() and load_parameters(tree)."""

    def __init__(self, params):
        self.w = params["w"]
        self.b = params["b"]

    def parameters(self):
        return {"w": self.w, "b": self.b}

    def load_parameters(self, params):
        self.w, self.b = params["w"], params["b"]


def test_module_parameters_are_rebound_in_place():
    m = TinyModule(to_ember({"w": np.ones((2, 2)), "b": np.zeros(2)}))
    opt = optim.SGD(m, lr=0.5)
    old_w = m.w
    opt.step({"w": enp.asarray(np.ones((2, 2))), "b": enp.asarray(np.ones(2))})
    assert np.asarray(m.w).tolist() == [[0.5, 0.5], [0.5, 0.5]]
    assert np.asarray(m.b).tolist() == [-0.5, -0.5]
    assert np.asarray(old_w).tolist() == [[1.0, 1.0], [1.0, 1.0]]     # arrays are immutable
    assert opt.params["w"] is m.w


def test_module_without_a_setter_is_rejected():
    class NoSetter:
        def parameters(self):
            return {"w": enp.asarray(np.ones(2))}
    with pytest.raises(TypeError, match="load_parameters"):
        optim.SGD(NoSetter(), lr=0.1)


def test_param_groups_have_their_own_hyperparameters_and_match_references():
    params, grad_fn, _ = mlp_problem()
    opt = optim.Adam([{"params": to_ember(params["l1"])},
                      {"params": to_ember(params["l2"]), "lr": 0.01, "betas": (0.8, 0.9)}],
                     lr=0.05, weight_decay=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.05, 0.01]
    assert opt.param_groups[1]["weight_decay"] == 0.1 and opt.param_groups[0]["betas"] == (0.9, 0.999)
    r1 = REFERENCES["adam"](lr=0.05, weight_decay=0.1)
    r2 = REFERENCES["adam"](lr=0.01, betas=(0.8, 0.9), weight_decay=0.1)
    p_np = params
    for i in range(10):
        if i == 5:                         # changing lr mid-run reaches the next step
            opt.param_groups[0]["lr"] = 0.02
            r1.hp["lr"] = 0.02
        g = grad_fn(p_np)
        opt.step([to_ember(g["l1"]), to_ember(g["l2"])])
        l1 = tree.unflatten(tree.structure(p_np["l1"]), r1.step(tree.leaves(p_np["l1"]), tree.leaves(g["l1"])))
        l2 = tree.unflatten(tree.structure(p_np["l2"]), r2.step(tree.leaves(p_np["l2"]), tree.leaves(g["l2"])))
        p_np = {"l1": l1, "l2": l2}
    got = opt.params
    assert isinstance(got, list) and len(got) == 2
    for a, b in zip(tree.leaves(got), tree.leaves([p_np["l1"], p_np["l2"]])):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-10)


def test_groups_of_modules():
    m1 = TinyModule(to_ember({"w": np.ones(2), "b": np.ones(1)}))
    m2 = TinyModule(to_ember({"w": np.ones(2), "b": np.ones(1)}))
    opt = optim.SGD([{"params": m1}, {"params": m2, "lr": 1.0}], lr=0.5)
    g = {"w": enp.asarray(np.ones(2)), "b": enp.asarray(np.ones(1))}
    opt.step([g, g])
    assert np.asarray(m1.w).tolist() == [0.5, 0.5] and np.asarray(m2.w).tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": m1}, {"params": m1}], lr=0.5)


def test_add_param_group_makes_params_a_list():
    opt = optim.SGD({"a": enp.asarray(np.ones(2))}, lr=0.5)
    assert isinstance(opt.params, dict)
    opt.add_param_group({"params": {"b": enp.asarray(np.ones(1))}, "momentum": 0.9})
    assert isinstance(opt.params, list) and opt.param_groups[1]["lr"] == 0.5
    new = opt.step([{"a": enp.asarray(np.ones(2))}, {"b": enp.asarray(np.ones(1))}])
    assert np.asarray(new[0]["a"]).tolist() == [0.5, 0.5]
    assert np.asarray(new[1]["b"]).tolist() == [0.5]


def test_plain_pytree_params_are_kept_and_returned():
    opt = optim.SGD([enp.asarray(np.array([1.0, 2.0]))], lr=0.5)
    out = opt.step([enp.asarray(np.array([1.0, 1.0]))])
    assert np.asarray(out[0]).tolist() == [0.5, 1.5]
    assert opt.params[0] is out[0]
    assert opt.param_groups[0]["params"][0] is out[0]


def test_numpy_leaves_are_converted_and_keep_their_dtype():
    opt = optim.SGD({"w": np.ones(2, dtype=np.float32)}, lr=0.5)
    assert opt.params["w"].dtype == np.float32


def test_zero_grad_is_a_documented_no_op():
    opt = optim.SGD([enp.asarray(np.ones(1))], lr=0.1)
    assert opt.zero_grad() is None and opt.zero_grad(set_to_none=False) is None
    assert "nothing to clear" in optim.Optimizer.zero_grad.__doc__


def test_torch_performance_flags_are_accepted_and_unknown_kwargs_rejected():
    optim.Adam([enp.asarray(np.ones(1))], foreach=True, fused=False, capturable=False,
               differentiable=False)
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        optim.Adam([enp.asarray(np.ones(1))], betas1=0.9)


# --- state_dict ---------------------------------------------------------------------------

@pytest.mark.parametrize("cls,kw", [
    (optim.Adam, dict(lr=0.05, amsgrad=True)), (optim.SGD, dict(lr=0.05, momentum=0.9)),
    (optim.NAdam, dict(lr=0.05)), (optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True)),
    (optim.Adagrad, dict(lr=0.1)), (optim.Adadelta, dict()), (optim.Adamax, dict()),
    (optim.RAdam, dict()), (optim.AdamW, dict()), (optim.Lion, dict()), (optim.LAMB, dict())])
def test_state_dict_round_trip_continues_identically(cls, kw):
    params, grad_fn, _ = mlp_problem()
    a = cls(to_ember(params), jit=False, **kw)
    for _ in range(4):
        a.step(to_ember(grad_fn(to_numpy(a.params))))
    sd = a.state_dict()
    b = cls(copy.deepcopy(a.params), jit=False, **kw)
    b.load_state_dict(pickle.loads(pickle.dumps(sd)))
    for _ in range(4):
        a.step(to_ember(grad_fn(to_numpy(a.params))))
        b.step(to_ember(grad_fn(to_numpy(b.params))))
    for x, y in zip(tree.leaves(a.params), tree.leaves(b.params)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_state_dict_layout_is_pytorchs():
    params, grad_fn, _ = mlp_problem()
    opt = optim.Adam([{"params": to_ember(params["l1"])}, {"params": to_ember(params["l2"]), "lr": 0.1}])
    assert opt.state_dict()["state"] == {}                      # nothing before the first step
    opt.step([to_ember(grad_fn(params)["l1"]), to_ember(grad_fn(params)["l2"])])
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2, 3]]
    assert sd["param_groups"][1] == {"lr": 0.1, "betas": (0.9, 0.999), "eps": 1e-8,
                                     "weight_decay": 0.0, "amsgrad": False, "maximize": False,
                                     "decoupled_weight_decay": False, "params": [2, 3]}
    assert set(sd["state"]) == {0, 1, 2, 3}
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    assert float(sd["state"][3]["step"]) == 1.0
    # registration (insertion) order of {"b": ..., "w": ...}: index 0 is l1's bias
    # (tests/optim/test_state_dict_order.py covers an order that differs from sorted)
    assert sd["state"][0]["exp_avg"].shape == (8,) and sd["state"][1]["exp_avg"].shape == (4, 8)


def test_sgd_state_dict_has_momentum_buffer_only_with_momentum():
    p = [enp.asarray(np.ones(2))]
    opt = optim.SGD(p, lr=0.1)
    opt.step([enp.asarray(np.ones(2))])
    assert opt.state_dict()["state"] == {}
    opt = optim.SGD(p, lr=0.1, momentum=0.9)
    opt.step([enp.asarray(np.ones(2))])
    assert list(opt.state_dict()["state"][0]) == ["momentum_buffer"]


def test_load_state_dict_restores_hyperparameters_and_scheduler_keys():
    opt = optim.Adam([enp.asarray(np.ones(1))], lr=0.1)
    optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    sd = opt.state_dict()
    sd["param_groups"][0]["lr"] = 0.25
    other = optim.Adam([enp.asarray(np.ones(1))], lr=0.1)
    other.load_state_dict(sd)
    assert other.param_groups[0]["lr"] == 0.25 and other.param_groups[0]["initial_lr"] == 0.1


def test_load_state_dict_errors():
    opt = optim.Adam([enp.asarray(np.ones(2))], lr=0.1)
    opt.step([enp.asarray(np.ones(2))])
    sd = opt.state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.Adam([{"params": [enp.asarray(np.ones(2))]}, {"params": [enp.asarray(np.ones(2))]}]
                   ).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.Adam([enp.asarray(np.ones(2)), enp.asarray(np.ones(2))]).load_state_dict(sd)
    with pytest.raises(ValueError, match=r"'exp_avg' for the parameter at \[0\] has shape \(2,\), "
                                         r"expected \(3,\)"):
        optim.Adam([enp.asarray(np.ones(3))]).load_state_dict(sd)
    with pytest.raises(ValueError, match="amsgrad fixes the structure"):
        sd2 = opt.state_dict()
        sd2["param_groups"][0]["amsgrad"] = True
        optim.Adam([enp.asarray(np.ones(2))]).load_state_dict(sd2)


# --- bad input ----------------------------------------------------------------------------

@pytest.mark.parametrize("make,exc,msg", [
    (lambda p: optim.SGD(p, lr=-0.1), ValueError, "Invalid learning rate: -0.1"),
    (lambda p: optim.Adam(p, lr=float("nan")), ValueError, "Invalid learning rate: nan"),
    (lambda p: optim.Adam(p, betas=(0.9, 1.5)), ValueError, "Invalid beta parameter at index 1"),
    (lambda p: optim.AdamW(p, eps=-1.0), ValueError, "Invalid epsilon value"),
    (lambda p: optim.RMSprop(p, momentum=-1.0), ValueError, "Invalid momentum value"),
    (lambda p: optim.SGD(p, lr=0.1, nesterov=True), ValueError, "Nesterov momentum requires"),
    (lambda p: optim.SGD([{"params": p, "betas": (0.9, 0.99)}], lr=0.1), ValueError,
     "unknown parameter group key 'betas'"),
    (lambda p: optim.SGD([], lr=0.1), ValueError, "empty parameter list"),
    (lambda p: optim.SGD(p[0], lr=0.1), TypeError, "not a single array"),
    (lambda p: optim.SGD([enp.asarray(np.arange(3, dtype=np.int32))], lr=0.1), TypeError,
     "floating-point arrays, but the parameter at \\[0\\] has dtype int32"),
    (lambda p: optim.Adam(p, lr="0.1"), TypeError, "must be a number"),
])
def test_bad_constructor_input(make, exc, msg):
    with pytest.raises(exc, match=msg):
        make([enp.asarray(np.ones(2))])


def test_bad_param_group_writes():
    opt = optim.Adam([enp.asarray(np.ones(2))], lr=0.1)
    g = opt.param_groups[0]
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        g["lr"] = -1
    with pytest.raises(ValueError, match="unknown parameter group key 'momentum'"):
        g["momentum"] = 0.9
    with pytest.raises(ValueError, match="amsgrad fixes the structure"):
        g["amsgrad"] = True
    with pytest.raises(ValueError, match="cannot be replaced"):
        g["params"] = []
    with pytest.raises(ValueError, match="Invalid beta"):
        g.update(betas=(1.0, 0.9))
    assert g["lr"] == 0.1
    g["initial_lr"] = 0.1                                        # scheduler keys are allowed


def test_step_with_wrong_grads():
    opt = optim.Adam({"layer": {"w": enp.asarray(np.ones(2)), "b": enp.asarray(np.ones(1))}})
    with pytest.raises(ValueError, match=r"at \['layer'\]\['w'\], grads has nothing but params "
                                         r"has a leaf \(float64\[2\]\)"):
        opt.step({"layer": {"b": enp.asarray(np.ones(1))}})
    with pytest.raises(ValueError, match=r"at \['layer'\]\['v'\], grads has a leaf \(float64\[2\]\) "
                                         r"but params has nothing"):
        opt.step({"layer": {"b": enp.asarray(np.ones(1)), "v": enp.asarray(np.ones(2))}})
    with pytest.raises(TypeError, match="needs the gradients"):
        opt.step()


def test_repr_lists_groups():
    r = repr(optim.SGD([enp.asarray(np.ones(1))], lr=0.1))
    assert r.startswith("SGD (") and "Parameter Group 0" in r and "lr: 0.1" in r
