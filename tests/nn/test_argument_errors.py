"""Layer constructors reject bad arguments with the numbers the user typed."""
import pytest

from ember import nn


@pytest.mark.parametrize("make,words", [
    (lambda: nn.MultiheadAttention(13, 4), ["embed_dim=13", "num_heads=4", "divisible"]),
    (lambda: nn.Conv2d(6, 4, 3, groups=4), ["in_channels=6", "groups=4"]),
    (lambda: nn.Conv2d(8, 6, 3, groups=4), ["out_channels=6", "groups=4"]),
    (lambda: nn.Conv1d(4, 4, 3, groups=0), ["groups=0"]),
    (lambda: nn.Conv2d(4, 4, 3, stride=2, padding="same"), ["stride=2", "same"]),
    (lambda: nn.GroupNorm(3, 8), ["num_channels=8", "num_groups=3"]),
    (lambda: nn.Embedding(5, 2, padding_idx=7), ["padding_idx=7", "num_embeddings=5"]),
    (lambda: nn.Embedding(5, 2, _weight=[[1.0, 2.0]]), ["(1, 2)", "(5, 2)"]),
    (lambda: nn.Embedding.from_pretrained([1.0, 2.0]), ["2-dimensional", "(2,)"]),
    (lambda: nn.LSTM(3, 0), ["hidden_size=0", "num_layers=1"]),
    (lambda: nn.GRU(3, 4, dropout=1.5), ["1.5"]),
    (lambda: nn.Dropout(1.5), ["1.5"]),
    (lambda: nn.Linear(-1, 2), ["Linear", "in_features=-1"]),
    (lambda: nn.Conv2d(3, 4, (3, 0)), ["Conv2d", "kernel_size=(3, 0)", "positive"]),
    (lambda: nn.Conv2d(3, 4, 3, stride=0), ["stride=0"]),
    (lambda: nn.Conv1d(3, 4, 3, dilation=0), ["dilation=0"]),
    (lambda: nn.Conv2d(3, 4, 3, padding=-1), ["padding=-1"]),
    (lambda: nn.ConvTranspose2d(3, 4, 3, output_padding=-1), ["output_padding=-1"]),
    (lambda: nn.MaxPool2d(0), ["MaxPool2d", "kernel_size=0"]),
    (lambda: nn.AvgPool1d(2, stride=0), ["AvgPool1d", "stride=0"]),
    (lambda: nn.MaxPool1d(2, padding=-1), ["padding=-1"]),
    (lambda: nn.GroupNorm(0, 4), ["num_groups=0"]),
    (lambda: nn.Bilinear(0, 2, 2), ["in1_features=0"]),
    (lambda: nn.Embedding(-1, 2), ["num_embeddings=-1"]),
    (lambda: nn.RNN(-1, 3), ["RNN", "input_size=-1"]),
])
def test_constructor_errors_name_the_values(make, words):
    with pytest.raises(ValueError) as err:
        make()
    for w in words:
        assert w in str(err.value), (w, str(err.value))


def test_non_integer_sizes_are_type_errors():
    with pytest.raises(TypeError, match=r"Linear: in_features must be an integer, got in_features=2.5"):
        nn.Linear(2.5, 3)
    with pytest.raises(TypeError, match=r"Conv2d: kernel_size must be integers, got kernel_size=\(3, 1.5\)"):
        nn.Conv2d(1, 1, (3, 1.5))
