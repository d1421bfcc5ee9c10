"""nn.Transformer (encoder-decoder) and the decoder stack against PyTorch on the
same weights: outputs with every kind of mask, and gradients under jit."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn

from _nn_helpers import copy_to_torch, np_, rnd, to_torch


def test_square_subsequent_mask_matches_torch():
    torch = pytest.importorskip("torch")
    for n in (1, 4):
        np.testing.assert_array_equal(np_(nn.Transformer.generate_square_subsequent_mask(n)),
                                      torch.nn.Transformer.generate_square_subsequent_mask(n).numpy())
    assert nn.Transformer.generate_square_subsequent_mask(3, dtype=enp.float64).dtype == enp.float64


@pytest.mark.parametrize("kw", [dict(), dict(batch_first=True, norm_first=True, activation="gelu")])
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_transformer_matches_torch_forward_and_gradients(kw):
    torch = pytest.importorskip("torch")
    nn.manual_seed(0)
    e = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                       dim_feedforward=16, **kw).eval()
    t = torch.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                             dim_feedforward=16, **kw).eval()
    assert list(e.state_dict()) == list(t.state_dict())
    # Xavier re-initialisation makes the cloned layers differ, as in PyTorch
    assert not np.array_equal(np_(e.encoder.layers[0].linear1.weight), np_(e.encoder.layers[1].linear1.weight))
    copy_to_torch(e, t)
    bf = kw.get("batch_first", False)
    S, T, N = 5, 4, 2
    src = rnd((N, S, 8) if bf else (S, N, 8), seed=1)
    tgt = rnd((N, T, 8) if bf else (T, N, 8), seed=2)
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(T)
    src_kpm = np.zeros((N, S), bool)
    src_kpm[1, -2:] = True
    tgt_kpm = np.zeros((N, T), bool)
    tgt_kpm[0, -1] = True
    mem_mask = np.zeros((T, S), np.float32)
    mem_mask[0, 0] = -np.inf
    kwargs_e = dict(tgt_mask=tgt_mask, memory_mask=enp.asarray(mem_mask), src_key_padding_mask=enp.asarray(src_kpm),
                    tgt_key_padding_mask=enp.asarray(tgt_kpm), memory_key_padding_mask=enp.asarray(src_kpm))
    kwargs_t = dict(tgt_mask=to_torch(tgt_mask), memory_mask=torch.from_numpy(mem_mask),
                    src_key_padding_mask=torch.from_numpy(src_kpm), tgt_key_padding_mask=torch.from_numpy(tgt_kpm),
                    memory_key_padding_mask=torch.from_numpy(src_kpm))
    got = e(src, tgt, **kwargs_e)
    want = t(to_torch(src), to_torch(tgt), **kwargs_t)
    np.testing.assert_allclose(np_(got), want.detach().numpy(), rtol=1e-4, atol=1e-4)

    def loss(p, src, tgt):
        return (nn.functional_call(e, p, src, tgt, **kwargs_e)[0] ** 2).sum()
    g = nn.flatten_names(ember.jit(ember.grad(loss))(dict(e.parameters()), src, tgt))
    (t(to_torch(src), to_torch(tgt), **kwargs_t) ** 2).sum().backward()
    for name, p in t.named_parameters():
        np.testing.assert_allclose(np_(g[name]), p.grad.numpy(), rtol=2e-3, atol=2e-4, err_msg=name)


def test_transformer_argument_errors():
    m = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
    with pytest.raises(ValueError, match="batch number of src and tgt must be equal"):
        m(enp.ones((5, 2, 8)), enp.ones((4, 3, 8)))
    with pytest.raises(ValueError, match="d_model=8"):
        m(enp.ones((5, 2, 8)), enp.ones((4, 2, 6)))
    class Doubler(nn.Module):  # a custom encoder takes the encoder stack's arguments
        def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=False):
            return src * 2

    custom = nn.Transformer(d_model=8, nhead=2, custom_encoder=Doubler(), num_decoder_layers=1,
                            dim_feedforward=8).eval()
    src, tgt = rnd((3, 1, 8)), rnd((2, 1, 8), seed=1)
    np.testing.assert_allclose(np_(custom(src, tgt)), np_(custom.decoder(tgt, src * 2)), rtol=1e-6)
