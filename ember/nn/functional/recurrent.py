"""Single steps of the recurrent cells, with PyTorch's weight layouts and gate
orders (LSTM: input, forget, cell, output; GRU: reset, update, new).

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> h = F.rnn_tanh_cell(enp.ones((2, 3)), enp.zeros((2, 4)), enp.ones((4, 3)), enp.ones((4, 4)))
    >>> h.shape
    (2, 4)
"""
from __future__ import annotations

from ._util import enp, float_arr
from .activation import sigmoid
from .linear import linear

__all__ = ["rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell"]


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh).

    Example:
        >>> import ember.numpy as enp
        >>> rnn_tanh_cell(enp.zeros(2), enp.zeros(3), enp.ones((3, 2)), enp.ones((3, 3))).tolist()
        [0.0, 0.0, 0.0]
    """
    return enp().tanh(linear(input, w_ih, b_ih) + linear(hx, w_hh, b_hh))


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """h' = relu(x W_ih^T + b_ih + h W_hh^T + b_hh).

    Example:
        >>> import ember.numpy as enp
        >>> rnn_relu_cell(enp.ones(2), enp.zeros(1), -enp.ones((1, 2)), enp.ones((1, 1))).tolist()
        [0.0]
    """
    return enp().maximum(linear(input, w_ih, b_ih) + linear(hx, w_hh, b_hh), 0.0)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step; `hx` = (h, c); weights (4H, in) / (4H, H) in gate order
    i, f, g, o.  Returns (h', c').

    Example:
        >>> import ember.numpy as enp
        >>> h, c = lstm_cell(enp.ones(2), (enp.zeros(3), enp.zeros(3)), enp.ones((12, 2)), enp.ones((12, 3)))
        >>> h.shape, c.shape
        ((3,), (3,))
    """
    e = enp()
    h, c = hx
    gates = linear(input, w_ih, b_ih) + linear(h, w_hh, b_hh)
    i, f, g, o = e.split(gates, 4, axis=-1)
    i, f, g, o = sigmoid(i), sigmoid(f), e.tanh(g), sigmoid(o)
    c2 = f * float_arr(c) + i * g
    return o * e.tanh(c2), c2


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step; weights (3H, in) / (3H, H) in gate order r, z, n:
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h.

    Example:
        >>> import ember.numpy as enp
        >>> gru_cell(enp.ones(2), enp.zeros(3), enp.ones((9, 2)), enp.ones((9, 3))).shape
        (3,)
    """
    e = enp()
    gi = linear(input, w_ih, b_ih)
    gh = linear(hx, w_hh, b_hh)
    ir, iz, in_ = e.split(gi, 3, axis=-1)
    hr, hz, hn = e.split(gh, 3, axis=-1)
    r = sigmoid(ir + hr)
    z = sigmoid(iz + hz)
    n = e.tanh(in_ + r * hn)
    return (1.0 - z) * n + z * float_arr(hx)
