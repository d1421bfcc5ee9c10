"""The flagship nn examples (train_digits.py, char_transformer.py) and their bundled
corpus: shortened runs in the default suite, the headline claims under -m slow."""
from __future__ import annotations

import math
import pathlib
import sys

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.data import load_digits

from _examples import EXAMPLES, assert_png, check_figure, load, matplotlib_missing


@pytest.fixture(scope="module")
def digits():
    return load("train_digits.py")


@pytest.fixture(scope="module")
def chars():
    return load("char_transformer.py")




# --- train_digits.py: shortened runs -----------------------------------------------------

def test_train_digits_mlp_short_with_checkpoint(digits, tmp_path, capsys):
    ckpt = tmp_path / "mlp.safetensors"
    out = digits.main(["--epochs", "3", "--checkpoint", str(ckpt), "--plot", str(tmp_path / "c.png")])
    hist = out["history"]
    assert [h["epoch"] for h in hist] == [1, 2, 3]
    losses = [h["train_loss"] for h in hist]
    assert all(math.isfinite(l) for l in losses) and losses[-1] < losses[0]
    assert hist[-1]["test_loss"] < hist[0]["test_loss"]
    assert out["test_accuracy"] > 0.6
    assert out["compile_count"] == 1             # one trace for every step, lr changing each step
    # the checkpoint round trip: a freshly built model reproduces the logits exactly
    assert out["reloaded_accuracy"] == out["test_accuracy"]
    assert out["reload_max_logit_diff"] == 0.0
    saved = ember.load(str(ckpt))
    assert saved["epoch"] == 3 and saved["config"]["model"] == "mlp"
    assert "0.mean" in saved["model"] and "2.weight" in saved["model"]   # the Standardize buffers travel
    assert saved["model"]["2.weight"].shape == (256, 64)
    assert set(saved["optimizer"]) == {"state", "param_groups"}
    text = capsys.readouterr().out
    assert "test acc" in text and "reloaded into a fresh model" in text
    # the confusion matrix counts every test image once; its diagonal is the accuracy
    conf = out["confusion"]
    assert conf.shape == (10, 10) and conf.sum() == len(load_digits("test"))
    assert np.trace(conf) / conf.sum() == pytest.approx(out["test_accuracy"])
    assert out["out_dir"] == str(tmp_path)      # figures go next to the checkpoint
    if matplotlib_missing():
        assert not out["plotted"] and "matplotlib is not installed" in text
        assert not (tmp_path / "c.png").exists()
    else:
        assert out["plotted"]
        assert_png(tmp_path / "c.png")
        assert_png(tmp_path / "confusion.png")


def test_train_digits_cnn_short(digits, tmp_path, capsys):
    out = digits.main(["--model", "cnn", "--epochs", "2", "--checkpoint", str(tmp_path / "cnn.st"),
                       "--no-plot"])
    losses = [h["train_loss"] for h in out["history"]]
    assert losses[-1] < losses[0] < math.log(10) + 0.1
    assert out["test_accuracy"] > 0.5
    assert out["reloaded_accuracy"] == out["test_accuracy"] and out["reload_max_logit_diff"] == 0.0
    saved = ember.load(str(tmp_path / "cnn.st"))
    assert saved["model"]["conv1.weight"].shape == (32, 1, 3, 3)        # PyTorch's layout and names
    assert saved["model"]["standardize.std"].shape == (8, 8)


def test_train_digits_models_and_plot_fallback(digits, tmp_path, monkeypatch, capsys):
    from ember import nn
    x = enp.asarray(np.random.default_rng(0).uniform(size=(5, 8, 8)).astype(np.float32))
    for kind in ("mlp", "cnn"):
        m = digits.build_model(kind).eval()
        assert m(x).shape == (5, 10)
        assert digits.standardizer(m) is not None
        assert "mean" in dict(digits.standardizer(m).named_buffers())
    with pytest.raises(ValueError, match="unknown model"):
        digits.build_model("rnn")
    # the buffers of Standardize are fitted, saved, never trained
    s = digits.Standardize().fit(np.ones((3, 8, 8), np.float32))
    assert float(s(enp.ones((1, 8, 8))).sum()) == 0.0
    assert list(s.parameters()) == [] and sorted(s.buffers()) == ["mean", "std"]
    assert isinstance(s, nn.Module)
    # without matplotlib the plot is skipped with a message, whatever is installed here
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    hist = [{"epoch": 1, "train_loss": 1.0, "test_loss": 1.0, "test_accuracy": 0.5}]
    assert digits.plot_history(hist, str(tmp_path / "p.png")) is False
    assert "skipping" in capsys.readouterr().out
    assert not (tmp_path / "p.png").exists()


# --- char_transformer.py: shortened runs -------------------------------------------------

TINY = ["--steps", "20", "--eval-every", "10", "--d-model", "32", "--n-layer", "1", "--n-head", "2",
        "--block-size", "32", "--batch-size", "16", "--eval-windows", "8", "--warmup", "5",
        "--lr", "1e-2", "--sample-chars", "25"]


def test_char_transformer_short(chars, capsys, tmp_path):
    out = chars.main(TINY + ["--temperatures", "0.5", "1.0", "--prompt", "Dear ",
                             "--out-dir", str(tmp_path)])
    check_figure(out["figure"], tmp_path / "training.png")
    h1 = out["unigram_entropy"]
    assert 2.5 < h1 < 3.5 and out["bigram_entropy"] < h1
    hist = out["history"]
    assert [h["step"] for h in hist] == [10, 20] and out["steps"] == 20
    vocab = len(out["vocab"])
    # from uniform guessing (log |vocab|) towards the unigram entropy within 20 steps
    assert hist[-1]["val"] < hist[0]["val"] < math.log(vocab)
    assert out["val_loss"] < math.log(vocab) - 0.8
    assert out["compile_count"] == 1
    assert set(out["samples"]) == {0.5, 1.0}
    for s in out["samples"].values():
        assert s.startswith("Dear ") and len(s) == len("Dear ") + 25
        assert set(s) <= set(out["vocab"])
    text = capsys.readouterr().out
    assert "unigram entropy" in text and "sample at temperature 0.5" in text


def test_char_transformer_model_is_causal(chars):
    """Right-padding a window does not change the logits of the positions before the
    padding (what the sampler relies on), and sampling is a function of the key."""
    from ember import nn, random
    nn.manual_seed(0)
    m = chars.CharTransformer(vocab_size=11, block_size=8, d_model=16, n_layer=2, n_head=2).eval()
    ids = np.random.default_rng(0).integers(0, 11, size=(2, 8)).astype(np.int32)
    full = np.asarray(m(enp.asarray(ids)))
    padded = ids.copy()
    padded[:, 5:] = 0
    np.testing.assert_allclose(np.asarray(m(enp.asarray(padded)))[:, :5], full[:, :5], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(m(enp.asarray(ids[:, :5]))), full[:, :5], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="block_size"):
        m(enp.zeros((1, 9), dtype="int32"))
    a = chars.sample(m, [1, 2, 3], [0.7, 1.0], 12, random.key(5))
    b = chars.sample(m, [1, 2, 3], [0.7, 1.0], 12, random.key(5))
    c = chars.sample(m, [1, 2, 3], [0.7, 1.0], 12, random.key(6))
    assert a == b and a != c
    assert [len(r) for r in a] == [12, 12] and all(0 <= t < 11 for r in a for t in r)
    # a very low temperature is greedy decoding
    cold = chars.sample(m, [1, 2, 3], [1e-4], 4, random.key(0))[0]
    window = np.zeros((1, 8), np.int32)
    window[0, :3] = [1, 2, 3]
    assert cold[0] == int(np.argmax(np.asarray(m(enp.asarray(window)))[0, 2]))


def test_char_transformer_helpers(chars):
    assert chars.unigram_entropy("aabb") == pytest.approx(math.log(2))
    assert chars.unigram_entropy("aaaa") == 0.0
    assert chars.bigram_entropy("abababab") == pytest.approx(0.0)
    assert chars.bigram_entropy("aabbaabb") < chars.unigram_entropy("aabbaabb")
    ds = chars.CharWindows(np.arange(10, dtype=np.int32), 4)
    assert len(ds) == 6
    x, y = ds[5]
    assert x.tolist() == [5, 6, 7, 8] and y.tolist() == [6, 7, 8, 9]
    with pytest.raises(ValueError):
        chars.CharWindows(np.arange(3, dtype=np.int32), 4)
    ex, ey = chars.eval_windows(np.arange(100, dtype=np.int32), 8, 5)
    assert ex.shape == ey.shape == (5, 8)
    assert np.array_equal(np.asarray(ey)[:, :-1], np.asarray(ex)[:, 1:])


def test_bundled_corpus_is_reproducible_and_licensed():
    path = EXAMPLES / "data" / "tiny_corpus.txt"
    text = path.read_text(encoding="ascii")
    assert 30_000 <= len(text.encode()) <= 60_000
    gen = load("data/make_tiny_corpus.py")
    assert gen.build() == text                   # the generator reproduces the shipped file
    readme = (EXAMPLES / "data" / "README.md").read_text()
    assert "CC0" in readme and "tiny_corpus.txt" in readme and "original" in readme
    # structure a model can learn: every kind of document occurs many times
    for marker in ("Dear ", "How to make ", "Weather diary, ", "On ", ": "):
        assert text.count(marker) >= 10, marker


# --- full runs (python -m pytest -m slow tests/examples) -----------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_train_digits_full(digits, model, tmp_path, capsys):
    out = digits.main(["--model", model, "--checkpoint", str(tmp_path / "m.safetensors"), "--no-plot"])
    assert out["test_accuracy"] >= 0.97
    assert out["seconds"] < 60
    assert out["reloaded_accuracy"] == out["test_accuracy"]
    assert out["compile_count"] == 1


@pytest.mark.slow
def test_char_transformer_full(chars, capsys):
    out = chars.main(["--no-plot"])
    # measured: validation loss ~0.5 nats/char against a unigram entropy of 3.09
    assert out["val_loss"] < 0.3 * out["unigram_entropy"]
    assert out["val_loss"] < 0.5 * out["bigram_entropy"]
    assert len(out["samples"]) == 3
