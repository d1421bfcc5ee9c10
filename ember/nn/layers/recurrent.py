"""Recurrent layers: `RNN`, `LSTM`, `GRU` (multi-layer, bidirectional, batch_first,
dropout between layers) built on `ember.scan`, and the single-step `RNNCell`,
`LSTMCell`, `GRUCell`.  Weight names, shapes, gate orders and initialisation
(U(-1/sqrt(hidden), 1/sqrt(hidden))) follow PyTorch, so state dicts transfer.

`LSTM(proj_size=P)` projects each hidden state to P features (`weight_hr_l{k}`), and
every layer accepts a `nn.utils.rnn.PackedSequence` (run on the padded batch with a
lengths mask; see that module).

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> lstm = nn.LSTM(10, 20, num_layers=2)
    >>> out, (h, c) = lstm(enp.ones((5, 3, 10)))
    >>> out.shape, h.shape, c.shape
    ((5, 3, 20), (2, 3, 20), (2, 3, 20))
"""
from __future__ import annotations

import math

from ... import numpy as enp
from .. import functional as F
from .. import init
from ..module import Module, next_rng_key
from ._common import check_sizes, init_keys, param_dtype, place
from ..functional._util import at_user

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _cell_fn(mode):
    return {"RNN_TANH": F.rnn_tanh_cell, "RNN_RELU": F.rnn_relu_cell, "LSTM": F.lstm_cell,
            "GRU": F.gru_cell}[mode]


class RNNBase(Module):
    """Shared machinery of RNN, LSTM and GRU (see those classes)."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None, *, key=None):
        super().__init__()
        if proj_size < 0:
            raise ValueError(f"proj_size should be a positive integer or zero to disable projections, "
                             f"got {proj_size}")
        if proj_size and mode != "LSTM":
            raise ValueError(f"proj_size argument is only supported for LSTM, not {mode}")
        if proj_size and proj_size >= hidden_size:
            raise ValueError(f"proj_size has to be smaller than hidden_size, got proj_size={proj_size} "
                             f"and hidden_size={hidden_size}")
        if not 0 <= dropout <= 1:
            raise ValueError(f"dropout should be a number in range [0, 1] representing the "
                             f"probability of an element being zeroed, got {dropout}")
        check_sizes(type(self).__name__, input_size=input_size)
        if hidden_size <= 0 or num_layers <= 0:
            raise ValueError(f"hidden_size and num_layers must be positive, got hidden_size={hidden_size} "
                             f"and num_layers={num_layers}")
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = int(input_size), int(hidden_size), int(num_layers)
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, int(proj_size)
        d = param_dtype(dtype)
        g = _GATES[mode] * self.hidden_size
        D = 2 if bidirectional else 1
        out_size = self.proj_size or self.hidden_size
        for layer in range(self.num_layers):
            for direction in range(D):
                in_size = self.input_size if layer == 0 else out_size * D
                sfx = f"_l{layer}" + ("_reverse" if direction else "")
                setattr(self, "weight_ih" + sfx, place(init.zeros_((g, in_size), dtype=d), device))
                setattr(self, "weight_hh" + sfx, place(init.zeros_((g, out_size), dtype=d), device))
                if bias:
                    setattr(self, "bias_ih" + sfx, place(init.zeros_((g,), dtype=d), device))
                    setattr(self, "bias_hh" + sfx, place(init.zeros_((g,), dtype=d), device))
                if self.proj_size:
                    setattr(self, "weight_hr" + sfx,
                            place(init.zeros_((self.proj_size, self.hidden_size), dtype=d), device))
        self.reset_parameters(key)

    def reset_parameters(self, key=None):
        """Re-draw every weight and bias from U(-1/sqrt(hidden), 1/sqrt(hidden)).

        Example:
            >>> GRU(2, 3).reset_parameters()
        """
        names = [n for n, _ in self.named_parameters(recurse=False)]
        keys = init_keys(key, max(1, len(names)))
        std = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for n, k in zip(names, keys):
            setattr(self, n, init.uniform_(getattr(self, n), -std, std, key=k))

    def _weights(self, layer, direction):
        sfx = f"_l{layer}" + ("_reverse" if direction else "")
        return (getattr(self, "weight_ih" + sfx), getattr(self, "weight_hh" + sfx),
                getattr(self, "bias_ih" + sfx) if self.bias else None,
                getattr(self, "bias_hh" + sfx) if self.bias else None,
                getattr(self, "weight_hr" + sfx) if self.proj_size else None)

    def forward(self, input, hx=None):
        import ember
        from ..utils import rnn as _rnn
        e = enp
        packed = input if isinstance(input, _rnn.PackedSequence) else None
        if packed is not None:
            # padded, time-major, in the batch's own order; the mask stops each sequence
            x, lengths, mask = _rnn._padded_from_packed(packed, 0.0, None)
            x = F._util.float_arr(x)
            mask = e.asarray(mask)
            batched = True
        else:
            x = F._util.float_arr(input)
            mask = None
            if x.ndim not in (2, 3):
                raise ValueError(f"{type(self).__name__}: expected input to be 2D or 3D, got {x.ndim}D")
            batched = x.ndim == 3
            if not batched:
                x = e.expand_dims(x, 1)
            elif self.batch_first:
                x = e.swapaxes(x, 0, 1)
        if x.shape[-1] != self.input_size:
            raise ValueError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                             f"got {x.shape[-1]}")
        N = x.shape[1]
        D = 2 if self.bidirectional else 1
        lstm = self.mode == "LSTM"
        dt = x.dtype
        out_size = self.proj_size or self.hidden_size
        if hx is None:
            h0 = e.zeros((self.num_layers * D, N, out_size), dtype=dt)
            c0 = e.zeros((self.num_layers * D, N, self.hidden_size), dtype=dt) if lstm else None
        else:
            h0, c0 = (hx if lstm else (hx, None))
            h0 = F._util.float_arr(h0)
            c0 = F._util.float_arr(c0) if c0 is not None else None
            if not batched:
                h0 = e.expand_dims(h0, 1)
                c0 = e.expand_dims(c0, 1) if c0 is not None else None
            for t, nm, size in ((h0, "hidden", out_size), (c0, "cell", self.hidden_size)):
                expect = (self.num_layers * D, N, size)
                if t is not None and tuple(t.shape) != expect:
                    raise ValueError(f"Expected {nm} size {expect}, got {tuple(t.shape)}")
        cell = _cell_fn(self.mode)
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(D):
                idx = layer * D + direction
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, direction)

                def step(carry, xs, w_ih=w_ih, w_hh=w_hh, b_ih=b_ih, b_hh=b_hh, w_hr=w_hr):
                    xt, mt = xs
                    new = cell(xt, carry, w_ih, w_hh, b_ih, b_hh)
                    if w_hr is not None:
                        new = (F.linear(new[0], w_hr), new[1])
                    h = new[0] if lstm else new
                    if mt is None:
                        return new, h
                    # a finished sequence keeps its state and outputs zeros (PyTorch's padding)
                    m = mt[:, None]
                    if lstm:
                        new = (e.where(m, new[0], carry[0]), e.where(m, new[1], carry[1]))
                    else:
                        new = e.where(m, new, carry)
                    return new, e.where(m, h, e.zeros_like(h))
                init_c = (h0[idx], c0[idx]) if lstm else h0[idx]
                carry, ys = ember.scan(step, init_c, (x, mask), reverse=bool(direction))
                outs.append(ys)
                if lstm:
                    h_n.append(carry[0])
                    c_n.append(carry[1])
                else:
                    h_n.append(carry)
            x = outs[0] if D == 1 else e.concat(outs, axis=-1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True, key=next_rng_key())
        out = x
        hn = e.stack(h_n)
        cn = e.stack(c_n) if lstm else None
        if packed is not None:
            out = _rnn._pack_in_order(out, packed._sizes, packed._sorted)
        elif not batched:
            out, hn = out[:, 0], hn[:, 0]
            cn = cn[:, 0] if cn is not None else None
        elif self.batch_first:
            out = e.swapaxes(out, 0, 1)
        return (out, (hn, cn)) if lstm else (out, hn)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        return s


class RNN(RNNBase):
    """Elman RNN: h_t = tanh (or relu) (x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh).

    Example:
        >>> import ember.numpy as enp
        >>> rnn = RNN(4, 6, nonlinearity="relu", batch_first=True)
        >>> out, h = rnn(enp.ones((2, 5, 4)))
        >>> out.shape, h.shape
        ((2, 5, 6), (1, 2, 6))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None, *,
                 key=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size,
                         num_layers, bias, batch_first, dropout, bidirectional, 0, device, dtype, key=key)


class LSTM(RNNBase):
    """Long short-term memory; gates i, f, g, o; returns (output, (h_n, c_n)).

    Example:
        >>> LSTM(3, 5, bidirectional=True).weight_hh_l0_reverse.shape
        (20, 5)
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None, *, key=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device, dtype, key=key)


class GRU(RNNBase):
    """Gated recurrent unit; gates r, z, n; returns (output, h_n).

    Example:
        >>> GRU(3, 5).weight_ih_l0.shape
        (15, 3)
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, *, key=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype, key=key)


class RNNCellBase(Module):
    """Shared machinery of the single-step cells."""
    _gates = 1

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None, *, key=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = int(input_size), int(hidden_size), bias
        d = param_dtype(dtype)
        g = self._gates * self.hidden_size
        self.weight_ih = place(init.zeros_((g, self.input_size), dtype=d), device)
        self.weight_hh = place(init.zeros_((g, self.hidden_size), dtype=d), device)
        if bias:
            self.bias_ih = place(init.zeros_((g,), dtype=d), device)
            self.bias_hh = place(init.zeros_((g,), dtype=d), device)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters(key)

    reset_parameters = RNNBase.reset_parameters

    def _input(self, input):
        """The cell's input as a float array: 1-d (one sample) or 2-d (batch, input_size),
        as PyTorch's cells require; anything else is an error naming the shapes."""
        x = F._util.float_arr(input)
        cls = type(self).__name__
        if x.ndim not in (1, 2):
            raise ValueError(f"{cls}: expected input to be 1D or 2D, got {x.ndim}D (shape "
                             f"{tuple(x.shape)}); PyTorch raises here too. Hint: a cell takes one "
                             f"time step; loop over the sequence, or use {cls[:-4]} for whole "
                             f"sequences{at_user()}")
        if x.shape[-1] != self.input_size:
            raise ValueError(f"{cls}: input has {x.shape[-1]} features (shape {tuple(x.shape)}), "
                             f"expected input_size={self.input_size}{at_user()}")
        return x

    def _hx(self, x, hx, name="hx"):
        e = enp
        shape = (x.shape[0], self.hidden_size) if x.ndim == 2 else (self.hidden_size,)
        if hx is None:
            return e.zeros(shape, dtype=x.dtype)
        h = F._util.float_arr(hx)
        if tuple(h.shape) != shape:
            raise ValueError(f"{type(self).__name__}: {name} has shape {tuple(h.shape)}, expected "
                             f"{shape} for an input of shape {tuple(x.shape)} (batch size and "
                             f"hidden_size={self.hidden_size}){at_user()}")
        return h

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        nl = getattr(self, "nonlinearity", "tanh")
        return s if nl == "tanh" else s + f", nonlinearity={nl}"


class RNNCell(RNNCellBase):
    """One Elman RNN step.

    Example:
        >>> import ember.numpy as enp
        >>> RNNCell(3, 4)(enp.ones((2, 3))).shape
        (2, 4)
    """

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None, *, key=None):
        super().__init__(input_size, hidden_size, bias, device, dtype, key=key)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x = self._input(input)
        fn = F.rnn_tanh_cell if self.nonlinearity == "tanh" else F.rnn_relu_cell
        return fn(x, self._hx(x, hx), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)


class LSTMCell(RNNCellBase):
    """One LSTM step; returns (h', c').

    Example:
        >>> import ember.numpy as enp
        >>> h, c = LSTMCell(3, 4)(enp.ones((2, 3)))
        >>> h.shape
        (2, 4)
    """
    _gates = 4

    def forward(self, input, hx=None):
        x = self._input(input)
        if hx is None:
            z = self._hx(x, None)
            hx = (z, z)
        elif not isinstance(hx, (tuple, list)) or len(hx) != 2:
            what = (f"an array of shape {tuple(hx.shape)}" if hasattr(hx, "shape")
                    else type(hx).__name__)
            raise TypeError(f"LSTMCell: hx must be a tuple (h_0, c_0) of two arrays, got {what}; "
                            f"PyTorch raises here too. Hint: pass (h, c){at_user()}")
        else:
            hx = (self._hx(x, hx[0], "h_0"), self._hx(x, hx[1], "c_0"))
        return F.lstm_cell(x, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)


class GRUCell(RNNCellBase):
    """One GRU step.

    Example:
        >>> import ember.numpy as enp
        >>> GRUCell(3, 4)(enp.ones(3)).shape
        (4,)
    """
    _gates = 3

    def forward(self, input, hx=None):
        x = self._input(input)
        return F.gru_cell(x, self._hx(x, hx), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)

