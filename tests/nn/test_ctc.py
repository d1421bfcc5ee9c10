"""CTC loss against PyTorch: values for every target layout and reduction,
gradients (through log_softmax, where PyTorch's kernel is exact), zero_infinity,
traced lengths under jit, and vmap."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember import nn
from ember.nn import functional as F
from ember.testing import check_grads, check_vmap

from _nn_helpers import np_


def _case(seed, T, N, C, S):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((T, N, C)).astype(np.float32)
    tl = rng.integers(0, S + 1, N)
    il = rng.integers(max(1, T // 2), T + 1, N)
    targets = rng.integers(1, C, (N, S))
    return logits, targets, il, tl


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10 ** 6), T=st.integers(1, 8), N=st.integers(1, 3), C=st.integers(2, 5),
       S=st.integers(1, 4), reduction=st.sampled_from(["none", "sum", "mean"]), concat=st.booleans(),
       zero_inf=st.booleans())
def test_ctc_matches_torch(seed, T, N, C, S, reduction, concat, zero_inf):
    torch = pytest.importorskip("torch")
    logits, targets, il, tl = _case(seed, T, N, C, S)
    if concat:
        tg_e = enp.asarray(np.concatenate([targets[n, :tl[n]] for n in range(N)]).astype(np.int64))
        tg_t = torch.from_numpy(np.array(tg_e))
    else:
        tg_e, tg_t = enp.asarray(targets), torch.from_numpy(targets)
    lp_t = torch.from_numpy(logits).requires_grad_(True)
    want = torch.nn.functional.ctc_loss(lp_t.log_softmax(-1), tg_t, torch.from_numpy(il), torch.from_numpy(tl),
                                        reduction=reduction, zero_infinity=zero_inf)

    def f(x):
        return F.ctc_loss(F.log_softmax(x, dim=-1), tg_e, il, tl, reduction=reduction, zero_infinity=zero_inf)
    got = f(enp.asarray(logits))
    np.testing.assert_allclose(np_(got), want.detach().numpy(), rtol=1e-4, atol=1e-4)
    if zero_inf or np.all(np.isfinite(want.detach().numpy())):
        want.sum().backward()
        g = ember.grad(lambda x: f(x).sum())(enp.asarray(logits))
        np.testing.assert_allclose(np_(g), lp_t.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_ctc_blank_unbatched_module_and_finite_differences():
    torch = pytest.importorskip("torch")
    logits, targets, il, tl = _case(3, 6, 2, 4, 3)
    targets = np.where(targets == 3, 0, targets)  # blank=3: the others are labels
    lp = F.log_softmax(enp.asarray(logits), dim=-1)
    tlp = torch.from_numpy(logits).log_softmax(-1)
    loss = nn.CTCLoss(blank=3, reduction="sum")
    tloss = torch.nn.CTCLoss(blank=3, reduction="sum")
    np.testing.assert_allclose(np_(loss(lp, enp.asarray(targets), il, tl)),
                               tloss(tlp, torch.from_numpy(targets), torch.from_numpy(il),
                                     torch.from_numpy(tl)).numpy(), rtol=1e-5)
    t0 = np.ascontiguousarray(targets[0, :tl[0]])
    one = F.ctc_loss(lp[:, 0], enp.asarray(t0), il[0], tl[0], blank=3, reduction="none")
    tone = torch.nn.functional.ctc_loss(tlp[:, 0], torch.from_numpy(t0), torch.tensor(il[0]),
                                        torch.tensor(tl[0]), blank=3, reduction="none")
    np.testing.assert_allclose(np_(one), tone.numpy(), rtol=1e-5)
    assert one.shape == ()
    x64 = np.asarray(logits, np.float64)
    check_grads(lambda x: F.ctc_loss(F.log_softmax(x, dim=-1), enp.asarray(targets), il, tl, blank=3),
                (x64,), order=1)
    # the true derivative w.r.t. log_probs (PyTorch's differs by exp(log_probs))
    check_grads(lambda lp: F.ctc_loss(lp, enp.asarray(targets), il, tl, blank=3),
                (np.asarray(F.log_softmax(enp.asarray(x64), dim=-1)),), order=1)


def test_ctc_impossible_alignment_and_traced_lengths_under_jit():
    logits, targets, _, _ = _case(5, 4, 2, 3, 3)
    lp = F.log_softmax(enp.asarray(logits), dim=-1)
    il, tl = np.array([2, 4]), np.array([3, 1])  # 3 labels cannot fit in 2 frames
    inf = F.ctc_loss(lp, enp.asarray(targets), il, tl, reduction="none")
    assert np.isinf(np_(inf)[0]) and np.isfinite(np_(inf)[1])
    z = F.ctc_loss(lp, enp.asarray(targets), il, tl, reduction="none", zero_infinity=True)
    assert np_(z)[0] == 0.0 and np_(z)[1] == np_(inf)[1]
    g = ember.grad(lambda lp: F.ctc_loss(lp, enp.asarray(targets), il, tl, zero_infinity=True))(lp)
    assert np.all(np.isfinite(np_(g))) and np.all(np_(g)[:, 0] == 0)
    jf = ember.jit(lambda lp, t, il, tl: F.ctc_loss(lp, t, il, tl, reduction="none"))
    for a, b in ((np.array([4, 3]), np.array([2, 1])), (np.array([3, 4]), np.array([1, 3]))):
        np.testing.assert_allclose(np_(jf(lp, enp.asarray(targets), enp.asarray(a), enp.asarray(b))),
                                   np_(F.ctc_loss(lp, enp.asarray(targets), a, b, reduction="none")), rtol=1e-6)
    lps = F.log_softmax(enp.asarray(np.random.default_rng(0).standard_normal((3, 5, 1, 4)).astype(np.float32)),
                        dim=-1)
    check_vmap(lambda lp: F.ctc_loss(lp, enp.asarray([[1, 2]]), [5], [2]), (lps,))


def test_ctc_argument_errors():
    lp = F.log_softmax(enp.zeros((4, 2, 3)), dim=-1)
    t = enp.asarray([[1, 2], [1, 1]])
    with pytest.raises(ValueError, match=r"input_lengths must lie in \[1, 4\]"):
        F.ctc_loss(lp, t, [5, 4], [2, 2])
    with pytest.raises(ValueError, match="one entry per batch element"):
        F.ctc_loss(lp, t, [4], [2, 2])
    with pytest.raises(ValueError, match=r"blank=3 must be a class index in \[0, 3\)"):
        F.ctc_loss(lp, t, [4, 4], [2, 2], blank=3)
    with pytest.raises(TypeError, match="targets must hold class indices"):
        F.ctc_loss(lp, enp.ones((2, 2)), [4, 4], [2, 2])
    with pytest.raises(ValueError, match="target_lengths must lie in"):
        F.ctc_loss(lp, t, [4, 4], [3, 2])
