"""Run every example in examples/: shortened in the default suite, in full under -m slow."""
from __future__ import annotations

import math

import pytest

from _examples import check_figure, load


# --- shortened runs (default suite) ----------------------------------------------------

def test_pinn_poisson_short(capsys, tmp_path):
    out = load("pinn_poisson").main(["--out-dir", str(tmp_path), "--steps", "40", "--batch", "32", "--width", "16",
                                     "--grid", "21", "--log-every", "10", "--lr", "1e-2"])
    check_figure(out["figure"], tmp_path / "solution.png")
    losses = [l for _, l in out["history"]]
    assert all(math.isfinite(l) for l in losses)
    assert losses[-1] < losses[0]
    assert out["after"]["rel_l2"] < 0.8 * out["before"]["rel_l2"]
    assert "relative L2" in capsys.readouterr().out


def test_pinn_poisson_soft_bc_short(capsys, tmp_path):
    out = load("pinn_poisson").main(["--out-dir", str(tmp_path), "--bc", "soft", "--steps", "20", "--batch", "32",
                                     "--width", "8", "--depth", "1", "--grid", "11",
                                     "--log-every", "5", "--lr", "1e-2"])
    losses = [l for _, l in out["history"]]
    assert losses[-1] < losses[0]


def test_maml_sinusoid_short(capsys, tmp_path):
    out = load("maml_sinusoid").main(["--out-dir", str(tmp_path), "--meta-steps", "60", "--meta-batch", "5", "--hidden", "20",
                                      "--eval-tasks", "20", "--eval-steps", "0", "1",
                                      "--log-every", "20", "--outer-lr", "3e-3"])
    check_figure(out["figure"], tmp_path / "adaptation.png")
    hist = [l for _, l in out["maml_history"]]
    assert all(math.isfinite(l) for l in hist) and hist[-1] < hist[0]
    res = out["results"]["maml"]
    assert math.isfinite(res[0]) and math.isfinite(res[1])
    assert "MAML" in capsys.readouterr().out


def test_maml_first_order_short(capsys, tmp_path):
    out = load("maml_sinusoid").main(["--out-dir", str(tmp_path), "--first-order", "--meta-steps", "20", "--meta-batch", "4",
                                      "--hidden", "10", "--inner-steps", "2", "--eval-tasks", "10",
                                      "--eval-steps", "1", "--log-every", "10"])
    assert math.isfinite(out["results"]["maml"][1])


def test_per_example_dp_sgd_short(capsys, tmp_path):
    mod = load("per_example_dp_sgd")
    out = mod.main(["--out-dir", str(tmp_path), "--epochs", "4", "--hidden", "32"])
    check_figure(out["figure"], tmp_path / "accuracy_vs_epsilon.png")
    assert out["per_example_check"] < 1e-5
    assert out["test_accuracy"] > 0.6
    assert 0 < out["epsilon"] < 10
    text = capsys.readouterr().out
    assert "epsilon" in text and "sigma=2.0" in text


def test_dp_accountant_matches_known_values():
    mod = load("per_example_dp_sgd")
    # full batch: the Gaussian mechanism's RDP is alpha / (2 sigma^2)
    assert mod.rdp_subsampled_gaussian(1.0, 2.0, 5) == pytest.approx(5 / 8)
    # the classic MNIST setting (q = 256/60000, sigma = 1.1, 60 epochs) gives epsilon ~ 3
    eps, _ = mod.epsilon(256 / 60000, 1.1, int(60 * 60000 / 256), 1e-5)
    assert 2.8 < eps < 3.2
    # more noise, less privacy loss
    assert mod.epsilon(0.1, 2.0, 100, 1e-5)[0] < mod.epsilon(0.1, 1.0, 100, 1e-5)[0]


def test_newton_hvp_binary(capsys, tmp_path):
    out = load("newton_hvp").main(["--out-dir", str(tmp_path)])
    check_figure(out["figure"], tmp_path / "newton_convergence.png")
    hist = out["history"]
    assert out["hvp_check"] < 1e-10
    assert hist[-1]["grad_norm"] < 1e-10
    assert all(h["direction_rel_err"] < 1e-5 for h in hist)
    assert len(hist) <= 10 and out["test_accuracy"] > 0.9
    # quadratic convergence near the optimum: each step squares the (small) gradient norm
    g = [h["grad_norm"] for h in hist]
    assert g[-2] < 1e-2 * g[-3] and g[-1] < 1e-3 * g[-2]


def test_newton_hvp_one_vs_rest_short(capsys, tmp_path):
    out = load("newton_hvp").main(["--out-dir", str(tmp_path), "--one-vs-rest", "--iters", "3"])
    check_figure(out["figure"], tmp_path / "newton_convergence.png")
    hist = out["history"]
    assert len(hist[0]["cg_iters"]) == 10
    assert hist[-1]["grad_norm"] < hist[0]["grad_norm"]
    assert all(h["direction_rel_err"] < 1e-5 for h in hist)


def test_ode_fit_scan_short(capsys, tmp_path):
    out = load("ode_fit_scan").main(["--out-dir", str(tmp_path), "--n-obs", "20", "--n-init", "2", "--max-iters", "20",
                                     "--chunk", "10"])
    check_figure(out["figure"], tmp_path / "ode_fit.png")
    assert out["grad_check"] < 1e-10
    losses = [l for _, l, _ in out["history"]]
    assert losses[-1] <= losses[0]
    assert out["iterations"] <= 20
    assert "recovered" in capsys.readouterr().out


# --- full runs (python -m pytest -m slow tests/examples) -------------------------------

@pytest.mark.slow
def test_pinn_poisson_full(capsys, tmp_path):
    out = load("pinn_poisson").main(["--out-dir", str(tmp_path)])
    assert out["after"]["rel_l2"] < 1e-2


@pytest.mark.slow
def test_maml_sinusoid_full(capsys, tmp_path):
    res = load("maml_sinusoid").main(["--out-dir", str(tmp_path)])["results"]
    assert res["maml"][1] < 0.5 * res["maml"][0]
    assert res["maml"][10] < res["pretrained"][10]


@pytest.mark.slow
def test_per_example_dp_sgd_full(capsys, tmp_path):
    out = load("per_example_dp_sgd").main(["--out-dir", str(tmp_path)])
    assert out["test_accuracy"] > 0.85 and out["epsilon"] < 5


@pytest.mark.slow
def test_newton_hvp_one_vs_rest_full(capsys, tmp_path):
    out = load("newton_hvp").main(["--out-dir", str(tmp_path), "--one-vs-rest"])
    assert out["history"][-1]["grad_norm"] < 1e-10 and out["test_accuracy"] > 0.9


@pytest.mark.slow
def test_ode_fit_scan_full(capsys, tmp_path):
    out = load("ode_fit_scan").main(["--out-dir", str(tmp_path)])
    assert abs(out["omega"] - 2.0) < 0.02 and abs(out["gamma"] - 0.3) < 0.02
