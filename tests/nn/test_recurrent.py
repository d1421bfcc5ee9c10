"""RNN/LSTM/GRU against a step-by-step numpy loop and PyTorch; gradients through scan."""
import numpy as np
import pytest
import scipy.special as sp

import ember
import ember.numpy as enp
from ember import nn, random
from ember.testing import check_grads

from _nn_helpers import copy_to_torch, np_, rnd, to_torch


def _cell_np(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    gi = x @ w_ih.T + b_ih
    gh = h @ w_hh.T + b_hh
    if mode == "LSTM":
        i, f, g, o = np.split(gi + gh, 4, axis=-1)
        c = sp.expit(f) * c + sp.expit(i) * np.tanh(g)
        return sp.expit(o) * np.tanh(c), c
    if mode == "GRU":
        ir, iz, inn = np.split(gi, 3, axis=-1)
        hr, hz, hn = np.split(gh, 3, axis=-1)
        r, z = sp.expit(ir + hr), sp.expit(iz + hz)
        n = np.tanh(inn + r * hn)
        return (1 - z) * n + z * h, None
    act = np.tanh if mode == "RNN_TANH" else (lambda v: np.maximum(v, 0))
    return act(gi + gh), None


def _run_np(m, x):
    """Loop over layers, directions and time steps in numpy (seq-first input)."""
    x = np_(x).astype(np.float64)
    L, N, _ = x.shape
    D = 2 if m.bidirectional else 1
    H = m.hidden_size
    hs, cs = [], []
    for layer in range(m.num_layers):
        outs = []
        for d in range(D):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w = [np_(getattr(m, n + sfx)).astype(np.float64) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
            h, c = np.zeros((N, H)), np.zeros((N, H))
            ys = [None] * L
            for t in (range(L - 1, -1, -1) if d else range(L)):
                h, c = _cell_np(m.mode, x[t], h, c, *w)
                ys[t] = h
            outs.append(np.stack(ys))
            hs.append(h)
            cs.append(c)
        x = np.concatenate(outs, -1)
    return x, np.stack(hs), (np.stack(cs) if m.mode == "LSTM" else None)


@pytest.mark.parametrize("cls,kw", [
    (nn.RNN, dict()), (nn.RNN, dict(nonlinearity="relu", num_layers=2)), (nn.LSTM, dict()),
    (nn.LSTM, dict(num_layers=2, bidirectional=True)), (nn.GRU, dict(bidirectional=True)),
    (nn.GRU, dict(num_layers=2))])
def test_rnn_matches_step_loop(cls, kw):
    m = cls(3, 4, **kw)
    x = rnd((5, 2, 3))
    out = m(x)
    ref_out, ref_h, ref_c = _run_np(m, x)
    np.testing.assert_allclose(np_(out[0]), ref_out, rtol=1e-4, atol=1e-5)
    if cls is nn.LSTM:
        np.testing.assert_allclose(np_(out[1][0]), ref_h, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np_(out[1][1]), ref_c, rtol=1e-4, atol=1e-5)
    else:
        np.testing.assert_allclose(np_(out[1]), ref_h, rtol=1e-4, atol=1e-5)


def test_batch_first_unbatched_and_initial_state():
    m = nn.GRU(3, 4, batch_first=True)
    x = rnd((2, 5, 3))
    out, h = m(x)
    m2 = nn.GRU(3, 4)
    m2.load_state_dict(m.state_dict())
    xs = enp.swapaxes(x, 0, 1)
    out2, h2 = m2(xs)
    np.testing.assert_allclose(np_(out), np.swapaxes(np_(out2), 0, 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np_(h), np_(h2), rtol=1e-5, atol=1e-6)
    single, hs = m2(xs[:, 0])  # unbatched (L, H_in)
    np.testing.assert_allclose(np_(single), np_(out2)[:, 0], rtol=1e-5, atol=1e-6)
    assert hs.shape == (1, 4)
    o3, _ = m2(xs, rnd((1, 2, 4), 7))
    assert not np.allclose(np_(o3), np_(out2))
    lstm = nn.LSTM(3, 4)
    o, (hh, cc) = lstm(rnd((5, 2, 3)), (rnd((1, 2, 4), 1), rnd((1, 2, 4), 2)))
    assert hh.shape == cc.shape == (1, 2, 4)
    with pytest.raises(ValueError):
        lstm(rnd((5, 2, 3)), (rnd((2, 2, 4)), rnd((2, 2, 4))))
    with pytest.raises(ValueError):
        nn.LSTM(3, 4, proj_size=5)  # proj_size must be below hidden_size (test_recurrent_packed.py)


def test_cells_match_layers():
    cell = nn.LSTMCell(3, 4)
    layer = nn.LSTM(3, 4)
    layer.load_state_dict({k + "_l0": v for k, v in cell.state_dict().items()})
    x = rnd((6, 2, 3))
    h = c = enp.zeros((2, 4))
    for t in range(6):
        h, c = cell(x[t], (h, c))
    _, (hn, cn) = layer(x)
    np.testing.assert_allclose(np_(h), np_(hn)[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np_(c), np_(cn)[0], rtol=1e-5, atol=1e-6)
    g = nn.GRUCell(3, 4)
    assert g(x[0]).shape == (2, 4) and nn.RNNCell(3, 4, nonlinearity="relu")(x[0, 0]).shape == (4,)


def test_rnn_dropout_between_layers_and_grads():
    m = nn.LSTM(2, 3, num_layers=2, dropout=0.5).set_rng(random.key(0))
    x = rnd((4, 1, 2))
    a = np_(m(x)[0])
    b = np_(m(x)[0])
    assert not np.allclose(a, b)  # dropout active in training
    m.eval()
    np.testing.assert_array_equal(np_(m(x)[0]), np_(m(x)[0]))
    small = nn.GRU(2, 2, dtype=enp.float64)
    xs = np.random.default_rng(0).standard_normal((3, 1, 2))
    check_grads(lambda p, x: nn.functional_call(small, p, x)[0][0], (small.parameters(), xs), order=1)
    g = ember.jit(ember.grad(lambda p: nn.functional_call(small, p, xs)[0][0].sum()))(small.parameters())
    g2 = ember.grad(lambda p: nn.functional_call(small, p, xs)[0][0].sum())(small.parameters())
    np.testing.assert_allclose(np_(g["weight_hh_l0"]), np_(g2["weight_hh_l0"]), rtol=1e-6)


@pytest.mark.parametrize("cls,kw", [
    ("RNN", dict(num_layers=2, nonlinearity="relu")), ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("GRU", dict(batch_first=True, bidirectional=True)), ("LSTM", dict(batch_first=True, bias=False))])
def test_rnn_against_torch(cls, kw):
    torch = pytest.importorskip("torch")
    e = getattr(nn, cls)(3, 5, **kw)
    t = getattr(torch.nn, cls)(3, 5, **kw)
    copy_to_torch(e, t)
    x = rnd((2, 6, 3)) if kw.get("batch_first") else rnd((6, 2, 3))
    out, hid = e(x)
    with torch.no_grad():
        tout, thid = t(to_torch(x))
    np.testing.assert_allclose(np_(out), tout.numpy(), rtol=1e-4, atol=1e-5)
    if cls == "LSTM":
        np.testing.assert_allclose(np_(hid[0]), thid[0].numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np_(hid[1]), thid[1].numpy(), rtol=1e-4, atol=1e-5)
    else:
        np.testing.assert_allclose(np_(hid), thid.numpy(), rtol=1e-4, atol=1e-5)
