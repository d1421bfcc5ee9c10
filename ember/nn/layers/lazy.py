"""Lazy layers (PyTorch's `LazyLinear`, `LazyConv*d`, `LazyConvTranspose*d`,
`LazyBatchNorm*d`, `LazyInstanceNorm*d`): the input size (in_features,
in_channels, num_features) is read from the first forward's input.

A lazy layer is its real layer waiting for one size: on the first call it builds
the real layer with that size (same arguments, same initialisation and RNG stream
as constructing it eagerly would use), takes over its parameters and buffers and
becomes an instance of the real class, as PyTorch's `cls_to_become` does, so no
layer code is duplicated here.  Creating parameters needs concrete shapes outside
any trace: under `jit`, `vmap`, `grad`, `TrainStep` or `compile_forward` a lazy
layer that has not run yet raises and asks for one eager forward first.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> m = nn.LazyLinear(3)
    >>> m(enp.ones((2, 5))).shape, m.weight.shape, type(m).__name__
    ((2, 3), (3, 5), 'Linear')
"""
from __future__ import annotations

import inspect

from ... import random
from ...fx.core import Tracer
from ..module import _INTERNAL, Module
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d,
                            InstanceNorm3d)

__all__ = ["LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


def _takes_key(cls) -> bool:
    return "key" in inspect.signature(cls.__init__).parameters


class _LazyMixin:
    cls_to_become: type = None
    _in_name = ""

    def _lazy_setup(self, args, kwargs):
        Module.__init__(self)
        cls = self.cls_to_become
        key = kwargs.pop("key", None)
        # A template with a stand-in size checks the arguments now (as the eager layer
        # would) and provides the plain attributes; a fixed key keeps it from
        # drawing on the global RNG stream, which the real parameters use later.
        tkw = dict(kwargs, key=random.key(0)) if _takes_key(cls) else dict(kwargs)
        template = cls(self._stand_in(kwargs), *args, **tkw)
        for k, v in template.__dict__.items():
            if k not in _INTERNAL:
                object.__setattr__(self, k, v)
        setattr(template, self._in_name, 0)
        object.__setattr__(self, "_lazy_state", (args, kwargs, key, cls.extra_repr(template)))
        object.__setattr__(self, self._in_name, 0)

    @staticmethod
    def _stand_in(kwargs):
        return 1

    def has_uninitialized_params(self) -> bool:
        """True until the first forward has created the parameters (afterwards the
        layer is an instance of its real class, which has no such method).

        Example:
            >>> from ember import nn
            >>> nn.LazyLinear(2).has_uninitialized_params()
            True
        """
        return True

    def reset_parameters(self, *args, **kwargs):
        # nothing to reset before the parameters exist (PyTorch: a no-op too)
        return None

    def initialize_parameters(self, input) -> None:
        """Create the parameters for `input`'s size and become the real layer (the
        first forward calls this).

        Example:
            >>> import ember.numpy as enp
            >>> from ember import nn
            >>> m = nn.LazyConv1d(4, 3); m.initialize_parameters(enp.ones((1, 2, 8)))
            >>> type(m).__name__, m.weight.shape
            ('Conv1d', (4, 2, 3))
        """
        name = type(self).__name__
        if isinstance(input, Tracer):
            raise RuntimeError(
                f"{name}: its parameters are created from the shape of the first input it sees, "
                f"which cannot happen inside a traced call (jit, vmap, grad, nn.TrainStep, "
                f"compile_forward, summary); run one forward on a concrete input first, e.g. "
                f"model(x), then trace the model")
        args, kwargs, key, _ = self._lazy_state
        cls = self.cls_to_become
        n = self._infer(input)
        real = cls(n, *args, **(dict(kwargs, key=key) if _takes_key(cls) else kwargs))
        object.__delattr__(self, "_lazy_state")
        for k, v in real.__dict__.items():
            if k not in _INTERNAL:
                setattr(self, k, v)
        for k, v in real._parameters.items():
            self.register_parameter(k, v)
        for k, v in real._buffers.items():
            self.register_buffer(k, v, persistent=k not in real._non_persistent)
        for k, v in real._modules.items():
            setattr(self, k, v)
        object.__setattr__(self, "__class__", cls)

    def _infer(self, input) -> int:
        raise NotImplementedError

    def forward(self, input, *args, **kwargs):
        self.initialize_parameters(input)
        return type(self).forward(self, input, *args, **kwargs)

    def extra_repr(self):
        return self._lazy_state[3]


def _shape(input):
    shape = getattr(input, "shape", None)
    if shape is None:
        from ... import numpy as enp
        shape = enp.asarray(input).shape
    return tuple(shape)


class LazyLinear(_LazyMixin, Linear):
    """`Linear` whose in_features is the last dimension of the first input.

    Example:
        >>> import ember.numpy as enp
        >>> m = LazyLinear(4)
        >>> m
        LazyLinear(in_features=0, out_features=4, bias=True)
        >>> m(enp.ones((2, 3))).shape
        (2, 4)
        >>> m
        Linear(in_features=3, out_features=4, bias=True)
    """
    cls_to_become = Linear
    _in_name = "in_features"

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None, *, key=None):
        self._lazy_setup((out_features, bias, device, dtype), {"key": key})

    def _infer(self, input):
        shape = _shape(input)
        if not shape:
            raise ValueError(f"{type(self).__name__}: expected an input with at least 1 dimension "
                             f"(*, in_features), got a 0-d input")
        return shape[-1]


class _LazyConv(_LazyMixin):
    _in_name = "in_channels"

    @staticmethod
    def _stand_in(kwargs):
        return max(int(kwargs.get("groups", 1)), 1)

    def _infer(self, input):
        shape = _shape(input)
        nsp = self.cls_to_become._nsp
        if len(shape) not in (nsp + 1, nsp + 2):
            raise ValueError(f"{type(self).__name__}: expected a {nsp + 1}-d (C, ...) or "
                             f"{nsp + 2}-d (N, C, ...) input, got an input of shape {shape}")
        return shape[1] if len(shape) == nsp + 2 else shape[0]


def _conv_init(self, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
               device, dtype, key):
    self._lazy_setup((out_channels, kernel_size),
                     dict(stride=stride, padding=padding, dilation=dilation, groups=groups, bias=bias,
                          padding_mode=padding_mode, device=device, dtype=dtype, key=key))


def _convt_init(self, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                dilation, padding_mode, device, dtype, key):
    self._lazy_setup((out_channels, kernel_size),
                     dict(stride=stride, padding=padding, output_padding=output_padding, groups=groups,
                          bias=bias, dilation=dilation, padding_mode=padding_mode, device=device,
                          dtype=dtype, key=key))


class LazyConv1d(_LazyConv, Conv1d):
    """`Conv1d` whose in_channels is read from the first input.

    Example:
        >>> import ember.numpy as enp
        >>> LazyConv1d(4, 3)(enp.ones((1, 2, 8))).shape
        (1, 4, 6)
    """
    cls_to_become = Conv1d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None, *, key=None):
        _conv_init(self, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                   padding_mode, device, dtype, key)


class LazyConv2d(_LazyConv, Conv2d):
    """`Conv2d` whose in_channels is read from the first input.

    Example:
        >>> import ember.numpy as enp
        >>> LazyConv2d(4, 3, padding=1)(enp.ones((1, 2, 5, 5))).shape
        (1, 4, 5, 5)
    """
    cls_to_become = Conv2d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None, *, key=None):
        _conv_init(self, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                   padding_mode, device, dtype, key)


class LazyConv3d(_LazyConv, Conv3d):
    """`Conv3d` whose in_channels is read from the first input.

    Example:
        >>> import ember.numpy as enp
        >>> LazyConv3d(2, 2)(enp.ones((1, 3, 3, 3, 3))).shape
        (1, 2, 2, 2, 2)
    """
    cls_to_become = Conv3d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None, *, key=None):
        _conv_init(self, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                   padding_mode, device, dtype, key)


class LazyConvTranspose1d(_LazyConv, ConvTranspose1d):
    """`ConvTranspose1d` whose in_channels is read from the first input.

    Example:
        >>> import ember.numpy as enp
        >>> LazyConvTranspose1d(4, 3)(enp.ones((1, 2, 5))).shape
        (1, 4, 7)
    """
    cls_to_become = ConvTranspose1d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None, *, key=None):
        _convt_init(self, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                    dilation, padding_mode, device, dtype, key)


class LazyConvTranspose2d(_LazyConv, ConvTranspose2d):
    """`ConvTranspose2d` whose in_channels is read from the first input.

    Example:
        >>> import ember.numpy as enp
        >>> LazyConvTranspose2d(4, 2, stride=2)(enp.ones((1, 2, 3, 3))).shape
        (1, 4, 6, 6)
    """
    cls_to_become = ConvTranspose2d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None, *, key=None):
        _convt_init(self, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                    dilation, padding_mode, device, dtype, key)


class LazyConvTranspose3d(_LazyConv, ConvTranspose3d):
    """`ConvTranspose3d` whose in_channels is read from the first input.

    Example:
        >>> import ember.numpy as enp
        >>> LazyConvTranspose3d(1, 2)(enp.ones((1, 2, 2, 2, 2))).shape
        (1, 1, 3, 3, 3)
    """
    cls_to_become = ConvTranspose3d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None, *, key=None):
        _convt_init(self, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                    dilation, padding_mode, device, dtype, key)


class _LazyNorm(_LazyMixin):
    _in_name = "num_features"

    # PyTorch's lazy norms all default to affine=True, track_running_stats=True, the
    # instance norms too (unlike InstanceNorm*d itself); kept for parity
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None):
        self._lazy_setup((), dict(eps=eps, momentum=momentum, affine=affine,
                                  track_running_stats=track_running_stats, device=device, dtype=dtype))

    def _infer(self, input):
        shape = _shape(input)
        first = self.cls_to_become._ndims[0]
        if issubclass(self.cls_to_become, _InstanceNormBase) and len(shape) == first - 1:
            return shape[0]  # unbatched (C, ...)
        if len(shape) < 2:
            raise ValueError(f"{type(self).__name__}: expected an (N, C, ...) input, got an input "
                             f"of shape {shape}")
        return shape[1]


from .normalization import _InstanceNorm as _InstanceNormBase  # noqa: E402


def _norm_class(real, doc):
    return type(f"Lazy{real.__name__}", (_LazyNorm, real),
                {"cls_to_become": real, "__doc__": doc, "__module__": __name__,
                 "__init__": _LazyNorm.__init__})


LazyBatchNorm1d = _norm_class(BatchNorm1d, """`BatchNorm1d` whose num_features is read from the
    first (N, C) or (N, C, L) input.

    Example:
        >>> import ember.numpy as enp
        >>> m = LazyBatchNorm1d()
        >>> m(enp.ones((4, 3))).shape, m.running_mean.shape
        ((4, 3), (3,))
    """)
LazyBatchNorm2d = _norm_class(BatchNorm2d, """`BatchNorm2d` whose num_features is read from the
    first (N, C, H, W) input.

    Example:
        >>> import ember.numpy as enp
        >>> m = LazyBatchNorm2d()
        >>> m(enp.ones((2, 3, 2, 2))).shape, m.weight.shape
        ((2, 3, 2, 2), (3,))
    """)
LazyBatchNorm3d = _norm_class(BatchNorm3d, """`BatchNorm3d` whose num_features is read from the
    first (N, C, D, H, W) input.

    Example:
        >>> import ember.numpy as enp
        >>> m = LazyBatchNorm3d()
        >>> m(enp.ones((2, 3, 1, 2, 2))).shape, m.num_features
        ((2, 3, 1, 2, 2), 3)
    """)
LazyInstanceNorm1d = _norm_class(InstanceNorm1d, """`InstanceNorm1d` whose num_features is read
    from the first (N, C, L) or (C, L) input.  As in PyTorch, affine and
    track_running_stats default to True here (False for `InstanceNorm1d`).

    Example:
        >>> import ember.numpy as enp
        >>> m = LazyInstanceNorm1d(affine=True)
        >>> m(enp.ones((2, 3, 4))).shape, m.weight.shape
        ((2, 3, 4), (3,))
    """)
LazyInstanceNorm2d = _norm_class(InstanceNorm2d, """`InstanceNorm2d` whose num_features is read
    from the first (N, C, H, W) or (C, H, W) input (affine and track_running_stats
    default to True, as PyTorch's).

    Example:
        >>> import ember.numpy as enp
        >>> m = LazyInstanceNorm2d()
        >>> m(enp.ones((3, 2, 2))).shape, m.num_features
        ((3, 2, 2), 3)
    """)
LazyInstanceNorm3d = _norm_class(InstanceNorm3d, """`InstanceNorm3d` whose num_features is read
    from the first (N, C, D, H, W) or (C, D, H, W) input (affine and
    track_running_stats default to True, as PyTorch's).

    Example:
        >>> import ember.numpy as enp
        >>> m = LazyInstanceNorm3d()
        >>> m(enp.ones((1, 2, 2, 2, 2))).shape, m.running_var.shape
        ((1, 2, 2, 2, 2), (2,))
    """)
