"""LSTM(proj_size) and packed sequences (nn.utils.rnn) against PyTorch: values,
layouts and gradients, eagerly and under jit."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember import nn
from ember.nn.utils import rnn

from _nn_helpers import copy_to_torch, np_, rnd, to_torch


def _grads_vs_torch(e, t, run_e, run_t, rtol=1e-4, atol=1e-5):
    torch = pytest.importorskip("torch")
    params = dict(e.parameters())
    g = nn.flatten_names(ember.grad(lambda p: run_e(p))(params))
    gj = nn.flatten_names(ember.jit(ember.grad(lambda p: run_e(p)))(params))
    t.zero_grad()
    run_t().backward()
    for name, p in t.named_parameters():
        np.testing.assert_allclose(np_(g[name]), p.grad.numpy(), rtol=rtol, atol=atol, err_msg=name)
        np.testing.assert_allclose(np_(gj[name]), p.grad.numpy(), rtol=rtol, atol=atol, err_msg=name)
    del torch


@pytest.mark.parametrize("kw", [dict(), dict(num_layers=2, bidirectional=True), dict(batch_first=True, bias=False)])
def test_lstm_proj_size_matches_torch(kw):
    torch = pytest.importorskip("torch")
    nn.manual_seed(1)
    e = nn.LSTM(3, 6, proj_size=2, **kw)
    t = torch.nn.LSTM(3, 6, proj_size=2, **kw)
    copy_to_torch(e, t)
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    x = rnd((2, 5, 3)) if kw.get("batch_first") else rnd((5, 2, 3))
    out, (h, c) = e(x)
    tout, (th, tc) = t(to_torch(x))
    for a, b in ((out, tout), (h, th), (c, tc)):
        np.testing.assert_allclose(np_(a), b.detach().numpy(), rtol=1e-4, atol=1e-5)
    jout, (jh, _) = ember.jit(e)(x)
    np.testing.assert_allclose(np_(jout), tout.detach().numpy(), rtol=1e-4, atol=1e-5)

    def run_e(p):
        o, (hh, cc) = nn.functional_call(e, p, x)[0]
        return (o ** 2).sum() + (hh * cc[..., :2]).sum()

    def run_t():
        o, (hh, cc) = t(to_torch(x))
        return (o ** 2).sum() + (hh * cc[..., :2]).sum()
    _grads_vs_torch(e, t, run_e, run_t)
    assert "proj_size=2" in repr(e)


def test_proj_size_errors():
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="only supported for LSTM"):
        nn.RNNBase("GRU", 3, 4, proj_size=2)
    lstm = nn.LSTM(3, 4, proj_size=2)
    with pytest.raises(ValueError, match=r"Expected hidden size \(1, 2, 2\)"):
        lstm(rnd((5, 2, 3)), (rnd((1, 2, 4)), rnd((1, 2, 4))))


@settings(max_examples=15, deadline=None)
@given(lengths=st.lists(st.integers(1, 5), min_size=1, max_size=4), batch_first=st.booleans(),
       enforce_sorted=st.booleans(), feat=st.integers(1, 3))
def test_pack_and_pad_match_torch(lengths, batch_first, enforce_sorted, feat):
    torch = pytest.importorskip("torch")
    if enforce_sorted:
        lengths = sorted(lengths, reverse=True)
    T, B = max(lengths), len(lengths)
    x = rnd((B, T, feat) if batch_first else (T, B, feat), seed=len(lengths))
    p = rnn.pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    tp = torch.nn.utils.rnn.pack_padded_sequence(to_torch(x), torch.tensor(lengths), batch_first=batch_first,
                                                 enforce_sorted=enforce_sorted)
    np.testing.assert_array_equal(np_(p.batch_sizes), tp.batch_sizes.numpy())
    if len(set(lengths)) == len(lengths) or enforce_sorted:  # ties may sort either way in torch
        np.testing.assert_array_equal(np_(p.data), tp.data.numpy())
        if not enforce_sorted:
            np.testing.assert_array_equal(np_(p.sorted_indices), tp.sorted_indices.numpy())
            np.testing.assert_array_equal(np_(p.unsorted_indices), tp.unsorted_indices.numpy())
    out, lens = rnn.pad_packed_sequence(p, batch_first=batch_first, padding_value=-1.0, total_length=T + 1)
    tout, tlens = torch.nn.utils.rnn.pad_packed_sequence(tp, batch_first=batch_first, padding_value=-1.0,
                                                         total_length=T + 1)
    np.testing.assert_array_equal(np_(out), tout.numpy())
    np.testing.assert_array_equal(np_(lens), tlens.numpy())
    seqs = [rnd((n, feat), seed=i) for i, n in enumerate(lengths)]
    for side in ("right", "left"):
        np.testing.assert_array_equal(
            np_(rnn.pad_sequence(seqs, batch_first=batch_first, padding_value=2.0, padding_side=side)),
            torch.nn.utils.rnn.pad_sequence([to_torch(s) for s in seqs], batch_first=batch_first,
                                            padding_value=2.0, padding_side=side).numpy())
    back = rnn.unpack_sequence(rnn.pack_sequence(seqs, enforce_sorted=False))
    for a, b in zip(back, seqs):
        np.testing.assert_array_equal(np_(a), np_(b))


@pytest.mark.parametrize("cls,kw", [("GRU", dict(bidirectional=True)), ("LSTM", dict(num_layers=2)),
                                    ("RNN", dict(batch_first=True)),
                                    ("LSTM", dict(bidirectional=True, proj_size=2, batch_first=True))])
def test_rnns_on_packed_sequences_match_torch(cls, kw):
    torch = pytest.importorskip("torch")
    nn.manual_seed(2)
    e = getattr(nn, cls)(3, 4, **kw)
    t = getattr(torch.nn, cls)(3, 4, **kw)
    copy_to_torch(e, t)
    bf = kw.get("batch_first", False)
    lengths = [2, 5, 3]
    x = rnd((3, 5, 3) if bf else (5, 3, 3), seed=4)
    p = rnn.pack_padded_sequence(x, lengths, batch_first=bf, enforce_sorted=False)
    tp = torch.nn.utils.rnn.pack_padded_sequence(to_torch(x), torch.tensor(lengths), batch_first=bf,
                                                 enforce_sorted=False)
    out, hid = e(p)
    tout, thid = t(tp)
    assert isinstance(out, rnn.PackedSequence)
    np.testing.assert_allclose(np_(out.data), tout.data.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(np_(out.batch_sizes), tout.batch_sizes.numpy())
    pad, _ = rnn.pad_packed_sequence(out, batch_first=bf)
    tpad, _ = torch.nn.utils.rnn.pad_packed_sequence(tout, batch_first=bf)
    np.testing.assert_allclose(np_(pad), tpad.detach().numpy(), rtol=1e-4, atol=1e-5)
    hs = hid if cls == "LSTM" else (hid,)
    ths = thid if cls == "LSTM" else (thid,)
    for a, b in zip(hs, ths):
        np.testing.assert_allclose(np_(a), b.detach().numpy(), rtol=1e-4, atol=1e-5)

    def first(h):
        return h[0] if cls == "LSTM" else h

    def run_e(params):
        o, h = nn.functional_call(e, params, rnn.pack_padded_sequence(x, lengths, batch_first=bf,
                                                                      enforce_sorted=False))[0]
        return (o.data ** 2).sum() + first(h).sum()

    def run_t():
        o, h = t(torch.nn.utils.rnn.pack_padded_sequence(to_torch(x), torch.tensor(lengths),
                                                         batch_first=bf, enforce_sorted=False))
        return (o.data ** 2).sum() + first(h).sum()
    _grads_vs_torch(e, t, run_e, run_t)


def test_packed_gradients_reach_the_inputs_and_errors_are_clear():
    torch = pytest.importorskip("torch")
    nn.manual_seed(3)
    e = nn.GRU(2, 3)
    t = torch.nn.GRU(2, 3)
    copy_to_torch(e, t)
    x = rnd((4, 2, 2), seed=9)
    gx = ember.grad(lambda x: (e(rnn.pack_padded_sequence(x, [4, 2]))[0].data ** 2).sum())(x)
    tx = to_torch(x).requires_grad_(True)
    (t(torch.nn.utils.rnn.pack_padded_sequence(tx, [4, 2]))[0].data ** 2).sum().backward()
    np.testing.assert_allclose(np_(gx), tx.grad.numpy(), rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="sorted in decreasing order"):
        rnn.pack_padded_sequence(x, [2, 4])
    with pytest.raises(ValueError, match="expected 2 lengths"):
        rnn.pack_padded_sequence(x, [4, 2, 1])
    with pytest.raises(TypeError, match="must be concrete"):
        ember.jit(lambda n: rnn.pack_padded_sequence(x, n))(enp.asarray([4, 2]))
    with pytest.raises(ValueError, match="must be positive"):
        rnn.pack_padded_sequence(x, [4, 0])
