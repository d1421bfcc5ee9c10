"""repr(Module) in PyTorch's tree format (compared with torch's own repr for the
same layers) and nn.summary's table for small models."""
import time

import pytest

import ember.numpy as enp
from ember import nn

# (class name, args, kwargs), built identically in ember and torch
SPECS = [
    ("Linear", (4, 32), {}), ("Linear", (4, 2), dict(bias=False)), ("Bilinear", (2, 3, 4), {}),
    ("Conv1d", (2, 3, 3), {}), ("Conv2d", (2, 3, 3), dict(stride=2, padding=1, bias=False)),
    ("Conv2d", (2, 4, (3, 5)), dict(dilation=2, groups=2, padding_mode="reflect", padding=1)),
    ("ConvTranspose2d", (2, 3, 3), dict(stride=2, output_padding=1)),
    ("ReLU", (), {}), ("LeakyReLU", (0.2,), {}), ("ELU", (), {}), ("GELU", (), dict(approximate="tanh")),
    ("Softmax", (), dict(dim=1)), ("Softplus", (), {}), ("Hardtanh", (), {}), ("PReLU", (), {}),
    ("Threshold", (0.1, 2.0), {}), ("GLU", (), {}), ("Softshrink", (), {}), ("Hardshrink", (0.3,), {}),
    ("Dropout", (0.3,), {}), ("BatchNorm1d", (4,), {}), ("BatchNorm2d", (4,), dict(affine=False)),
    ("LayerNorm", (4,), {}), ("LayerNorm", ((4, 5),), dict(elementwise_affine=False)), ("GroupNorm", (2, 4), {}),
    ("RMSNorm", (4,), {}), ("InstanceNorm2d", (3,), {}), ("LocalResponseNorm", (2,), {}),
    ("MaxPool2d", (2,), {}), ("AvgPool2d", (2,), {}), ("AdaptiveAvgPool2d", ((1, 1),), {}), ("LPPool2d", (2, 3), {}),
    ("Embedding", (10, 3), dict(padding_idx=0)), ("EmbeddingBag", (10, 3), {}), ("Flatten", (), {}),
    ("Unflatten", (1, (2, 3)), {}), ("LSTM", (3, 4), dict(num_layers=2, batch_first=True, bidirectional=True)),
    ("LSTM", (3, 4), dict(proj_size=2)), ("GRU", (3, 4), dict(bias=False)), ("LSTMCell", (3, 4), {}),
    ("RNNCell", (3, 4), dict(bias=False, nonlinearity="relu")), ("CTCLoss", (), {}), ("MSELoss", (), {}),
    ("Upsample", (), dict(scale_factor=2)), ("PixelShuffle", (2,), {}),
]


@pytest.mark.parametrize("name,args,kw", SPECS, ids=[f"{s[0]}-{i}" for i, s in enumerate(SPECS)])
def test_layer_repr_matches_torch(name, args, kw):
    torch = pytest.importorskip("torch")
    assert repr(getattr(nn, name)(*args, **kw)) == repr(getattr(torch.nn, name)(*args, **kw))


def test_tree_repr_matches_torch():
    torch = pytest.importorskip("torch")

    def build(m):
        return m.Sequential(m.Linear(4, 32), m.ReLU(),
                            m.Sequential(m.Conv1d(1, 2, 3), m.ModuleDict({"a": m.Tanh(), "b": m.Identity()})),
                            m.ModuleList([m.Dropout(0.5)]), m.Linear(32, 2))
    assert repr(build(nn)) == repr(build(torch.nn))
    assert repr(build(nn)).startswith("Sequential(\n  (0): Linear(in_features=4, out_features=32, bias=True)\n")

    class Multi(nn.Module):
        def extra_repr(self):
            return "a=1\nb=2"

    class TMulti(torch.nn.Module):
        def extra_repr(self):
            return "a=1\nb=2"
    assert repr(Multi()) == repr(TMulti()).replace("TMulti", "Multi")


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.rnn = nn.LSTM(4, 6, batch_first=True)
        self.head = nn.Sequential(nn.Linear(6, 3), nn.Tanh())
        self.head[0].requires_grad_(False)

    def forward(self, tokens):
        out, _ = self.rnn(self.embed(tokens))
        return self.head(out[:, -1])


EXPECTED = """\
Layer (type)           Output shape                         Param #
===================================================================
_Net                   (2, 3)                                   349
  embed (Embedding)    (2, 7, 4)                                 40
  rnn (LSTM)           [(2, 7, 6), (1, 2, 6), (1, 2, 6)]        288
  head (Sequential)    (2, 3)                                    21
    head.0 (Linear)    (2, 3)                                    21
    head.1 (Tanh)      (2, 3)                                     0
===================================================================
Total params: 349
Trainable params: 328
Non-trainable params: 21
Output: (2, 3) float32"""


def test_summary_text(capsys):
    s = nn.summary(_Net(), (2, 7), dtype=enp.int32)
    printed = capsys.readouterr().out
    assert printed.rstrip("\n") == EXPECTED
    assert str(s) == EXPECTED
    assert (s.total_params, s.trainable_params) == (349, 328)
    assert [r[0] for r in s.rows] == ["", "embed", "rnn", "head", "head.0", "head.1"]


def test_summary_shared_module_several_inputs_and_no_compute():
    shared = nn.Linear(8, 8)

    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.f = shared

        def forward(self, a, b):
            return self.f(a) + self.f(b)
    s = nn.summary(Twice(), [(3, 8), (1, 8)], print_summary=False)
    assert [(r[0], r[2]) for r in s.rows] == [("", "(3, 8)"), ("f", "(3, 8)"), ("f", "(1, 8)")]
    assert s.total_params == 72
    big = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU())
    t0 = time.perf_counter()
    s = nn.summary(big, (65536, 1024), print_summary=False)  # 137 GFLOP if it were computed
    assert time.perf_counter() - t0 < 20
    assert s.rows[1][2] == "(65536, 1024)" and s.total_params == 1024 * 1025
    with pytest.raises(TypeError, match="input_shape must be a shape"):
        nn.summary(big, "8x4096")
