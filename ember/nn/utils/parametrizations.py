"""`weight_norm` and `spectral_norm` as parametrizations (PyTorch 2's
`torch.nn.utils.parametrizations` API and state-dict names), built on
`parametrize.register_parametrization`.

`weight_norm` stores `original0` = g (the norms over every axis but `dim`) and
`original1` = v; the weight is `g * v / ||v||`.  `spectral_norm` divides the
weight by its largest singular value, estimated by power iteration on the
buffers `_u`, `_v` (one step per access in training mode, as PyTorch; the
iteration is not differentiated, `stop_gradient`).  In training mode under a
transform, update the buffers through `nn.functional_call` / `nn.TrainStep`,
exactly as for BatchNorm statistics.

Example:
    >>> from ember import nn
    >>> from ember.nn.utils.parametrizations import weight_norm
    >>> m = weight_norm(nn.Linear(3, 2))
    >>> sorted(m.state_dict())
    ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
"""
from __future__ import annotations

from ..module import Module
from . import parametrize
from ... import numpy as enp

__all__ = ["weight_norm", "spectral_norm"]


def _norm_except_dim(v, dim):
    if dim is None:
        return enp.sqrt(enp.sum(enp.square(v)))
    axes = tuple(a for a in range(v.ndim) if a != dim % v.ndim)
    return enp.sqrt(enp.sum(enp.square(v), axis=axes, keepdims=True))


class _WeightNorm(Module):
    """The weight-norm parametrization: (g, v) -> g * v / ||v|| (norm over every
    axis but `dim`; `dim=None` or -1 over all)."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v, None if self.dim == -1 else self.dim))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, None if self.dim == -1 else self.dim), weight


def weight_norm(module, name: str = "weight", dim=0):
    """Reparametrize `module.<name>` as `g * v / ||v||` (Salimans & Kingma), with
    `g` and `v` trained separately; returns the module.

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> m = weight_norm(nn.Linear(2, 1), dim=0)
        >>> m.parametrizations.weight.original0.shape, m.parametrizations.weight.original1.shape
        ((1, 1), (1, 2))
    """
    if not isinstance(module, Module):
        raise TypeError(f"weight_norm expects an nn.Module, got {type(module).__name__}")
    return parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)


class _SpectralNorm(Module):
    """W / sigma(W), sigma from power iteration on the buffers `_u`, `_v`."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12, *, key=None):
        super().__init__()
        ndim = weight.ndim
        if not -ndim <= dim < max(ndim, 1):
            raise IndexError(f"spectral_norm: dim={dim} is out of range for a {ndim}-d weight")
        if n_power_iterations <= 0:
            raise ValueError(f"spectral_norm: n_power_iterations must be positive, got "
                             f"{n_power_iterations}")
        self.dim = dim % ndim if ndim else 0
        self.eps = eps
        self.n_power_iterations = int(n_power_iterations)
        if ndim > 1:
            from ..layers._common import init_keys
            from ... import random
            wm = self._reshape(weight)
            h, w = wm.shape
            ku, kv = init_keys(key, 2)
            u = self._normalize(random.normal(ku, (h,), weight.dtype))
            v = self._normalize(random.normal(kv, (w,), weight.dtype))
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(wm, 15)

    def _reshape(self, weight):
        if self.dim != 0:
            weight = enp.moveaxis(weight, self.dim, 0)
        return enp.reshape(weight, (weight.shape[0], -1))

    def _normalize(self, x):
        return x / enp.maximum(enp.sqrt(enp.sum(enp.square(x))), self.eps)

    def _power_method(self, wm, n):
        import ember
        wm = ember.stop_gradient(wm)
        u, v = self._u, self._v
        for _ in range(n):
            u = self._normalize(wm @ v)
            v = self._normalize(wm.T @ u)
        self._u, self._v = u, v

    def forward(self, weight):
        import ember
        if weight.ndim == 1:
            return weight / enp.maximum(enp.sqrt(enp.sum(enp.square(weight))), self.eps)
        wm = self._reshape(weight)
        if self.training:
            self._power_method(wm, self.n_power_iterations)
        u = ember.stop_gradient(self._u)
        v = ember.stop_gradient(self._v)
        sigma = enp.vdot(u, wm @ v)
        return weight / sigma

    def right_inverse(self, value):
        return value

    def extra_repr(self):
        return ""


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim=None, *, key=None):
    """Divide `module.<name>` by its spectral norm (Miyato et al.), estimated by
    `n_power_iterations` power-iteration steps per access in training mode; `dim`
    (default 0, 1 for transposed convolutions) is the output axis.  `key` seeds
    the initial vectors (default: the `nn.manual_seed` stream).  Returns the module.

    Example:
        >>> import numpy as np
        >>> from ember import nn, random
        >>> m = spectral_norm(nn.Linear(4, 3, key=random.key(0)), key=random.key(1)).eval()
        >>> round(float(np.linalg.svd(np.asarray(m.weight), compute_uv=False)[0]), 3)
        1.0
    """
    if not isinstance(module, Module):
        raise TypeError(f"spectral_norm expects an nn.Module, got {type(module).__name__}")
    weight = getattr(module, name, None)
    if weight is None or not hasattr(weight, "ndim"):
        raise ValueError(f"spectral_norm: {type(module).__name__} has no parameter or buffer named "
                         f"{name!r}")
    if dim is None:
        from ..layers.conv import _ConvTranspose
        dim = 1 if isinstance(module, _ConvTranspose) else 0
    return parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps, key=key))
