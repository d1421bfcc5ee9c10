"""Mixed precision: policy dtypes in the staged IR, float32 master weights and
gradients, autocast in jit cache keys, loss scaling's skip/grow rules, and bf16
training reaching the float32 accuracy on the digits."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import amp, nn, optim
from ember.fx.prims.contraction import dot_general_p

F = nn.functional


def _eqns(graph, name):
    return [e for e in graph.equations if e.prim.name == name]


def test_autocast_lists_in_the_staged_ir():
    w = enp.ones((4, 3))
    y = enp.asarray([0, 1])

    def loss(x):
        with amp.autocast(dtype="bfloat16"):
            return F.cross_entropy(F.relu(F.linear(x, w)), y)

    g = ember.make_graph(loss)(enp.ones((2, 3))).graph
    dots = _eqns(g, "dot_general")
    assert dots and all(str(v.aval.dtype) == "bfloat16" for e in dots for v in e.inputs)
    sums = [e for e in g.equations if e.prim.name in ("reduce_sum", "reduce_max")]
    assert sums and all(str(e.inputs[0].aval.dtype) == "float32" for e in sums)   # softmax/loss in f32
    assert str(loss(enp.ones((2, 3))).dtype) == "float32"


def test_policy_casts_and_parsing():
    p = amp.get_policy("params=float32,compute=bfloat16,output=float16")
    assert (str(p.param_dtype), str(p.compute_dtype), str(p.output_dtype)) == ("float32", "bfloat16", "float16")
    tree = {"w": enp.ones(2), "i": enp.ones(2, dtype="int32")}
    out = p.cast_to_compute(tree)
    assert str(out["w"].dtype) == "bfloat16" and str(out["i"].dtype) == "int32"
    assert amp.get_policy("bf16") == amp.Policy("bfloat16", "bfloat16", "bfloat16")
    with pytest.raises(ValueError, match="unknown key 'compte'"):
        amp.get_policy("compte=bf16")
    with pytest.raises(TypeError, match="floating"):
        amp.Policy(compute_dtype="int32")
    with pytest.raises(TypeError, match="bfloat16 or float16"):
        with amp.autocast(dtype="float64"):
            pass


def test_trainstep_policy_keeps_float32_master_weights_and_gradients():
    nn.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.GELU(), nn.Linear(8, 2))
    seen = {}

    def loss_fn(m, x, y):
        out = m(x)
        seen["dtype"] = str(out.dtype)
        return F.cross_entropy(out, y)

    step = nn.TrainStep(model, optim.SGD(model, lr=0.1), loss_fn, policy=amp.Policy(compute_dtype="bfloat16"))
    x, y = enp.ones((4, 3)), enp.asarray([0, 1, 0, 1])
    losses = [float(step(x, y)) for _ in range(5)]
    assert seen["dtype"] == "bfloat16"                          # the model ran in bf16
    assert all(str(p.dtype) == "float32" for _, p in model.named_parameters())
    assert losses[-1] < losses[0] and step._fn.compile_count == 1
    grads = nn.value_and_grad(model, loss_fn)(x, y)[1]
    assert all(str(g.dtype) == "float32" for g in ember.tree.leaves(grads))


def test_jit_cache_separates_autocast_and_keeps_the_fast_path_clean():
    w = enp.ones((3, 3))
    f = ember.jit(lambda x: F.linear(x, w))
    x = enp.ones((2, 3))
    assert str(f(x).dtype) == "float32"
    with amp.autocast(dtype="bfloat16"):
        assert str(f(x).dtype) == "bfloat16"
        assert str(f(x).dtype) == "bfloat16"
    assert str(f(x).dtype) == "float32"                       # not served from the autocast entry
    assert f.compile_count == 2


def test_dynamic_loss_scale_halves_on_overflow_and_grows_after_period():
    ls = amp.DynamicLossScale(enp.asarray(8.0), period=2, min_loss_scale=2.0)
    scales = []
    for finite in [True, True, True, False, False, False, True]:
        ls = ls.adjust(enp.asarray(finite))
        scales.append(float(ls.loss_scale))
    assert scales == [8.0, 16.0, 16.0, 8.0, 4.0, 2.0, 2.0]
    assert float(ls.scale(enp.asarray(3.0))) == 6.0 and float(ls.unscale(enp.asarray(6.0))) == 3.0
    leaves, _ = ember.tree.flatten(ls)
    assert len(leaves) == 2                                    # a pytree: it passes through jit


def test_grad_scaler_eager_skips_non_finite_steps():
    opt = optim.SGD({"w": enp.ones(2)}, lr=0.5)
    s = amp.GradScaler(init_scale=4.0, growth_interval=2)
    g = s.unscale({"w": enp.asarray([4.0, 8.0])})
    np.testing.assert_allclose(np.asarray(g["w"]), [1.0, 2.0])
    p = s.step(opt, g)
    s.update()
    np.testing.assert_allclose(np.asarray(p["w"]), [0.5, 0.0])
    g = s.unscale({"w": enp.asarray([np.inf, 1.0])})
    before = np.asarray(opt.params["w"]).copy()
    s.step(opt, g)
    s.update()
    np.testing.assert_allclose(np.asarray(opt.params["w"]), before)
    assert s.get_scale() == 2.0
    assert s.state_dict()["scale"] == 2.0


def test_trainstep_scaler_skips_overflow_without_recompiling():
    nn.manual_seed(0)
    model = nn.Linear(3, 1)
    scaler = amp.GradScaler(init_scale=2.0 ** 126, growth_interval=1)
    step = nn.TrainStep(model, optim.SGD(model, lr=1e-5),
                        lambda m, x: (m(x) ** 2).mean() * 1e3, scaler=scaler)
    x = enp.ones((2, 3))
    w0 = np.asarray(model.weight).copy()
    step(x)                                            # 1e3 * 2^126 overflows float32
    np.testing.assert_array_equal(np.asarray(model.weight), w0)
    assert scaler.get_scale() == 2.0 ** 125
    for _ in range(130):
        step(x)
    assert not np.array_equal(np.asarray(model.weight), w0)
    assert step._fn.compile_count == 1
    assert np.isfinite(float(step(x)))


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_digits_reaches_float32_accuracy_in_low_precision(precision, tmp_path):
    import sys
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2] / "tests" / "examples"))
    from _examples import load
    digits = load("train_digits")
    ref = digits.main(["--epochs", "8", "--no-plot", "--out-dir", str(tmp_path / "f32")])
    low = digits.main(["--epochs", "8", "--no-plot", "--precision", precision,
                       "--out-dir", str(tmp_path / precision)])
    assert low["precision"] == precision
    assert low["test_accuracy"] >= ref["test_accuracy"] - 0.02, (low["test_accuracy"], ref["test_accuracy"])
