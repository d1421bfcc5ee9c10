"""Module hooks (ember.nn.hooks): order, removal, replacing inputs/outputs and
gradients, against PyTorch on the same modules and weights."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn, optim

from _nn_helpers import copy_to_torch, np_, rnd, to_torch


def _mlp():
    nn.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


def test_forward_hooks_run_in_order_with_prepend_and_globals_first():
    m = nn.Linear(2, 2)
    log = []
    m.register_forward_pre_hook(lambda mod, a: log.append("pre1"))
    m.register_forward_pre_hook(lambda mod, a: log.append("pre0"), prepend=True)
    m.register_forward_hook(lambda mod, a, o: log.append("fwd1"))
    m.register_forward_hook(lambda mod, a, o: log.append("fwd0"), prepend=True)
    m.register_forward_hook(lambda mod, a, o: log.append("fwd2"))
    with nn.register_module_forward_pre_hook(lambda mod, a: log.append("gpre")), \
            nn.register_module_forward_hook(lambda mod, a, o: log.append("gfwd")):
        m(enp.ones((1, 2)))
    assert log == ["gpre", "pre0", "pre1", "gfwd", "fwd0", "fwd1", "fwd2"]
    log.clear()
    m(enp.ones((1, 2)))  # the global hooks are gone
    assert log == ["pre0", "pre1", "fwd0", "fwd1", "fwd2"]


def test_hooks_are_removable_and_nested_modules_fire_inside_out():
    model = _mlp()
    log = []
    handles = [sub.register_forward_hook(lambda mod, a, o, i=i: log.append(i))
               for i, sub in enumerate(model)]
    handles.append(model.register_forward_hook(lambda mod, a, o: log.append("seq")))
    model(enp.ones((1, 3)))
    assert log == [0, 1, 2, "seq"]
    handles[1].remove()
    handles[1].remove()  # twice is a no-op
    log.clear()
    model(enp.ones((1, 3)))
    assert log == [0, 2, "seq"]
    for h in handles:
        h.remove()
    log.clear()
    model(enp.ones((1, 3)))
    assert log == []
    assert len({h.id for h in handles}) == len(handles)


def test_pre_hook_and_forward_hook_replace_inputs_and_output():
    m = nn.Linear(2, 3)
    x = rnd((4, 2))
    want = np_(m(x))
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2.0,))
    np.testing.assert_allclose(np_(m(x)), (2 * np_(x)) @ np_(m.weight).T + np_(m.bias), rtol=1e-6)
    h1.remove()
    h2 = m.register_forward_hook(lambda mod, args, out: out - args[0].sum())
    np.testing.assert_allclose(np_(m(x)), want - np_(x).sum(), rtol=1e-5)
    h2.remove()
    # with_kwargs: the hook sees and replaces keyword arguments too
    seen = {}

    class Scale(nn.Module):
        def forward(self, x, *, k=1.0):
            return x * k

    s = Scale()
    s.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"k": kwargs["k"] + 1}), with_kwargs=True)
    s.register_forward_hook(lambda mod, args, kwargs, out: seen.update(kwargs), with_kwargs=True)
    assert s(enp.ones(2), k=2.0).tolist() == [3.0, 3.0]
    assert seen == {"k": 3.0}


def test_always_call_runs_on_error_and_bad_returns_are_clear():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    b, log = Boom(), []
    b.register_forward_hook(lambda mod, a, o: log.append(("always", o)), always_call=True)
    b.register_forward_hook(lambda mod, a, o: log.append("plain"))
    with pytest.raises(ValueError, match="boom"):
        b(enp.ones(1))
    assert log == [("always", None)]
    m = nn.Identity()
    m.register_forward_pre_hook(lambda mod, a, k: "nope", with_kwargs=True)
    with pytest.raises(TypeError, match=r"Identity: a forward pre-hook .*with_kwargs=True must return"):
        m(enp.ones(1))
    m2 = nn.Tanh()
    m2.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    with pytest.raises(TypeError, match=r"Tanh: a full backward hook .* tuple of 1 gradient"):
        ember.grad(lambda x: m2(x).sum())(enp.ones(2))
    with pytest.raises(TypeError, match="register_full_backward_hook"):
        m2.register_backward_hook(lambda *a: None)
    with pytest.raises(TypeError, match="must be callable"):
        m2.register_forward_hook(3)


def _torch_pair():
    torch = pytest.importorskip("torch")
    e = _mlp()
    t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()
    copy_to_torch(e, t)
    return torch, e, t


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
@pytest.mark.parametrize("input_grad", [True, False])
def test_full_backward_hooks_see_and_change_gradients_like_torch(input_grad):
    torch, e, t = _torch_pair()
    x = rnd((5, 3), seed=1)

    def record(log, scale):
        def hook(mod, gi, go):
            log.append(("bw", [None if g is None else np.asarray(g.detach() if hasattr(g, "detach") else g)
                               for g in gi], [np.asarray(g.detach() if hasattr(g, "detach") else g) for g in go]))
            return None if gi[0] is None else (gi[0] * scale,)
        return hook

    def pre(log):
        def hook(mod, go):
            log.append("pre")
            return (go[0] * 3.0,)
        return hook

    elog, tlog = [], []
    e[1].register_full_backward_pre_hook(pre(elog))
    e[1].register_full_backward_hook(record(elog, 2.0))
    e[0].register_full_backward_hook(record(elog, 1.0))
    t[1].register_full_backward_pre_hook(pre(tlog))
    t[1].register_full_backward_hook(record(tlog, 2.0))
    t[0].register_full_backward_hook(record(tlog, 1.0))

    def loss(p, x):
        return (nn.functional_call(e, p, x)[0] ** 2).sum()

    params = dict(e.parameters())
    if input_grad:
        gp, gx = ember.grad(loss, argnums=(0, 1))(params, x)
    else:
        gp = ember.grad(loss)(params, x)
    tx = to_torch(x).double().requires_grad_(input_grad)
    (t(tx) ** 2).sum().backward()
    for name, p in t.named_parameters():
        np.testing.assert_allclose(np_(nn.flatten_names(gp)[name]), p.grad.numpy(), rtol=1e-5, atol=1e-6)
    if input_grad:
        np.testing.assert_allclose(np_(gx), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert [x if isinstance(x, str) else x[0] for x in elog] == ["pre", "bw", "bw"]
    assert [x if isinstance(x, str) else x[0] for x in tlog] == ["pre", "bw", "bw"]
    for (_, egi, ego), (_, tgi, tgo) in zip(elog[1:], tlog[1:]):
        assert [g is None for g in egi] == [g is None for g in tgi]
        for a, b in zip(egi + ego, tgi + tgo):
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_backward_hooks_under_jit_and_train_step_run_at_trace_time():
    e = _mlp()
    x, y = rnd((6, 3), seed=2), rnd((6, 2), seed=3)
    traced = []

    def cut(mod, gi, go):
        traced.append(type(gi[0]).__name__)
        return (gi[0] * 0.0,)

    h = e[2].register_full_backward_hook(cut)
    before = {k: np_(v) for k, v in e.state_dict().items()}
    step = nn.TrainStep(e, optim.SGD(e.parameters(), lr=0.1),
                        lambda m, x, y: nn.functional.mse_loss(m(x), y))
    step(x, y)
    step(x, y)
    # the zeroed input gradient of the last layer stops every earlier layer's update
    after = {k: np_(v) for k, v in e.state_dict().items()}
    np.testing.assert_array_equal(after["0.weight"], before["0.weight"])
    np.testing.assert_array_equal(after["0.bias"], before["0.bias"])
    assert not np.array_equal(after["2.weight"], before["2.weight"])
    assert len(traced) == 1, "compiled once, so the hook ran once, while tracing"
    h.remove()
    g_jit = ember.jit(ember.grad(lambda p, x: (nn.functional_call(e, p, x)[0] ** 2).sum()))(
        dict(e.parameters()), x)
    g_eager = ember.grad(lambda p, x: (nn.functional_call(e, p, x)[0] ** 2).sum())(dict(e.parameters()), x)
    for k, v in nn.flatten_names(g_eager).items():
        np.testing.assert_allclose(np_(nn.flatten_names(g_jit)[k]), np_(v), rtol=1e-5, atol=1e-7)
        assert np.abs(np_(v)).sum() > 0


def test_backward_hook_in_vmap_of_grad_matches_a_loop():
    e = _mlp()
    e[1].register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0.5,))
    xs = rnd((4, 3), seed=5)
    f = ember.grad(lambda x: e(x).sum())
    ember.testing.check_vmap(f, (xs,))


def test_grad_hook_sees_and_replaces_the_gradient_like_torch_register_hook():
    torch = pytest.importorskip("torch")
    from ember.nn.hooks import grad_hook
    x = rnd((3,), seed=7)
    seen_e, seen_t = [], []

    def f(x):
        y = grad_hook(enp.sin(x), lambda g: seen_e.append(g) or g * 3.0)
        return (y ** 2).sum()
    tx = to_torch(x).requires_grad_(True)
    ty = torch.sin(tx)
    ty.register_hook(lambda g: seen_t.append(g.numpy().copy()) or g * 3.0)
    (ty ** 2).sum().backward()
    np.testing.assert_allclose(np_(ember.grad(f)(x)), tx.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(np_(seen_e[0]), seen_t[0], rtol=1e-6)
    np.testing.assert_allclose(np_(ember.jit(ember.grad(f))(x)), tx.grad.numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="floating-point array"):
        grad_hook(enp.arange(3), lambda g: g)
