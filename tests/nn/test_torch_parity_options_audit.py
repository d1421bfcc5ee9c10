"""PyTorch parity of less-travelled nn options found wrong by a differential audit
(float64, against torch itself; skipped where torch is not installed)."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn
from ember.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


@pytest.mark.parametrize("p", [float("inf"), -float("inf")])
@pytest.mark.parametrize("nd, shape, kw", [(1, (2, 3, 10), dict(kernel_size=3, stride=2, ceil_mode=True)),
                                           (2, (2, 3, 6, 7), dict(kernel_size=(2, 3))),
                                           (3, (1, 2, 3, 4, 5), dict(kernel_size=2, stride=1))])
def test_lp_pool_infinite_norm_is_max_abs_like_torch(p, nd, shape, kw):
    # the power formula gave x^inf -> inf/0, then ^(1/inf) = 1 everywhere
    x = np.random.default_rng(nd).standard_normal(shape)
    efn, tfn = getattr(F, f"lp_pool{nd}d"), getattr(TF, f"lp_pool{nd}d")
    tx = torch.tensor(x, requires_grad=True)
    want = tfn(tx, p, **kw)
    w = np.random.default_rng(9).standard_normal(tuple(want.shape))
    (want * torch.tensor(w)).sum().backward()
    got, g = ember.value_and_grad(lambda t: enp.sum(efn(t, p, **kw) * enp.asarray(w)))(enp.asarray(x))
    np.testing.assert_allclose(np.asarray(efn(enp.asarray(x), p, **kw)), want.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g), tx.grad.numpy(), rtol=1e-12)
    layer = getattr(nn, f"LPPool{nd}d")(p, **kw)
    np.testing.assert_allclose(np.asarray(layer(enp.asarray(x))), want.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("cls, shape", [("BatchNorm1d", (4, 3)), ("BatchNorm2d", (3, 3, 4, 2))])
def test_batch_norm_cumulative_average_is_exact_in_float64(cls, shape):
    # momentum=None averages with 1/num_batches_tracked; that factor was a float32
    # (1/3 rounded), drifting float64 running stats by ~1e-8 from PyTorch's double
    rng = np.random.default_rng(0)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        tl = getattr(torch.nn, cls)(3, momentum=None)
        el = getattr(nn, cls)(3, momentum=None, dtype="float64")
        xs = [rng.standard_normal(shape) * 2 + 1 for _ in range(5)]
        for x in xs:
            tl(torch.tensor(x))
            el(enp.asarray(x))
        np.testing.assert_allclose(np.asarray(el.running_mean), tl.running_mean.numpy(), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(np.asarray(el.running_var), tl.running_var.numpy(), rtol=1e-13, atol=1e-15)
        tl.eval()
        el.eval()
        np.testing.assert_allclose(np.asarray(el(enp.asarray(xs[0]))), tl(torch.tensor(xs[0])).detach().numpy(),
                                   rtol=1e-12, atol=1e-13)
    finally:
        torch.set_default_dtype(old)
    # a float32 layer keeps float32 stats
    e32 = getattr(nn, cls)(3, momentum=None)
    for x in xs:
        e32(enp.asarray(x.astype(np.float32)))
    assert e32.running_mean.dtype == np.float32 and e32.running_var.dtype == np.float32
