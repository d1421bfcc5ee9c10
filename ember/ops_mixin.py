"""Python operators and methods shared by concrete Arrays and tracers.

Every operator forwards to the `ember.numpy` function of the same meaning, so
an Array and a tracer behave identically and every transform sees the same
primitives.  This module imports nothing of ember: `ember.numpy` calls
`install` when it has loaded, which gives the methods their namespace and puts
them on `fx.core.Tracer` (the core does not import the numpy layer).

Example:
    >>> import ember.numpy as enp
    >>> (enp.arange(3) * 2).tolist()
    [0, 2, 4]
"""
from __future__ import annotations

_enp = None  # ember.numpy, set by install()

# names of the class machinery, never copied onto another class
_NOT_METHODS = frozenset({"__module__", "__qualname__", "__doc__", "__slots__", "__dict__",
                          "__weakref__"})


def install(namespace, *classes):
    """Bind the operators to `namespace` (ember.numpy) and add them to `classes`
    (the tracer base class) where a class does not define the name itself.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.fx.core import Tracer
        >>> install(enp, Tracer)
        >>> Tracer.__add__ is ArrayOps.__add__
        True
    """
    global _enp
    _enp = namespace
    for cls in classes:
        for name, member in ArrayOps.__dict__.items():
            if name not in _NOT_METHODS and name not in cls.__dict__:
                setattr(cls, name, member)


def _seq(o):
    # `x == [1, 2]` compares elementwise, as in numpy and JAX; the functions themselves
    # (enp.equal) keep refusing lists, as JAX's do.
    return _enp.asarray(o) if isinstance(o, (list, tuple)) else o


_IMMUTABLE = "ember arrays are immutable: write `x = x + y`, or `x = x.at[idx].set(v)` for an update"
_GRAD = ("ember differentiates functions, not arrays: `ember.grad(loss_fn)(params)`, or an "
         "nn.Module with an ember.optim optimiser")
_CAST = "use x.astype('{}')"
# PyTorch Tensor methods that ember spells differently: the missing-attribute error names the
# ember spelling instead of leaving a bare AttributeError
_TORCH_HABITS = {
    "numpy": "use np.asarray(x) (or x.tolist(), x.item())",
    "detach": "use ember.lax.stop_gradient(x) (arrays carry no autograd state)",
    "view": "use x.reshape(...)", "clone": "arrays are immutable: use x itself, or x.copy()",
    "cpu": "use ember.device_put(x, 'cpu') or x.to_device('cpu')",
    "cuda": "use ember.device_put(x, 'cuda') or x.to_device('cuda')",
    "to": "use x.to_device(device) for a device, x.astype(dtype) for a dtype",
    "requires_grad": _GRAD, "requires_grad_": _GRAD, "backward": _GRAD, "grad": _GRAD,
    "dim": "use x.ndim", "numel": "use x.size", "unsqueeze": "use ember.numpy.expand_dims(x, dim)",
    "permute": "use x.transpose(axes)", "contiguous": "arrays are always contiguous: drop the call",
    "expand": "use ember.numpy.broadcast_to(x, shape)", "is_cuda": "use x.device",
    "masked_fill": "use ember.numpy.where(mask, value, x)", "data": "use x itself",
    "float": _CAST.format("float32"), "double": _CAST.format("float64"), "half": _CAST.format("float16"),
    "long": _CAST.format("int64"), "bfloat16": _CAST.format("bfloat16"), "bool": _CAST.format("bool"),
    "fill_": _IMMUTABLE, "zero_": _IMMUTABLE, "add_": _IMMUTABLE, "sub_": _IMMUTABLE,
    "mul_": _IMMUTABLE, "div_": _IMMUTABLE, "copy_": _IMMUTABLE, "clamp_": _IMMUTABLE,
    "normal_": _IMMUTABLE, "uniform_": _IMMUTABLE,
}


class ArrayOps:
    """The operators and methods shared by `Array` and tracers (see the module docstring)."""
    __slots__ = ()

    def __getattr__(self, name):
        # reached only for a missing attribute; a PyTorch habit gets its ember spelling
        msg = f"{type(self).__name__!r} object has no attribute {name!r}"
        hint = _TORCH_HABITS.get(name)
        raise AttributeError(msg if hint is None else f"{msg} (a PyTorch Tensor method): {hint}")

    # arithmetic
    def __add__(self, o): return _enp.add(self, o)
    def __radd__(self, o): return _enp.add(o, self)
    def __sub__(self, o): return _enp.subtract(self, o)
    def __rsub__(self, o): return _enp.subtract(o, self)
    def __mul__(self, o): return _enp.multiply(self, o)
    def __rmul__(self, o): return _enp.multiply(o, self)
    def __truediv__(self, o): return _enp.divide(self, o)
    def __rtruediv__(self, o): return _enp.divide(o, self)
    def __floordiv__(self, o): return _enp.floor_divide(self, o)
    def __rfloordiv__(self, o): return _enp.floor_divide(o, self)
    def __mod__(self, o): return _enp.remainder(self, o)
    def __rmod__(self, o): return _enp.remainder(o, self)
    def __pow__(self, o): return _enp.pow(self, o)
    def __rpow__(self, o): return _enp.pow(o, self)
    def __matmul__(self, o): return _enp.matmul(self, o)
    def __rmatmul__(self, o): return _enp.matmul(o, self)
    def __divmod__(self, o): return _enp.divmod(self, o)
    def __rdivmod__(self, o): return _enp.divmod(o, self)

    # unary
    def __neg__(self): return _enp.negative(self)
    def __pos__(self): return _enp.positive(self)
    def __abs__(self): return _enp.abs(self)
    def __invert__(self): return _enp.bitwise_invert(self)

    # comparisons
    def __eq__(self, o):
        if o is None or isinstance(o, str):
            return NotImplemented  # Python then compares identities: x == None is False
        return _enp.equal(self, _seq(o))

    def __ne__(self, o):
        if o is None or isinstance(o, str):
            return NotImplemented
        return _enp.not_equal(self, _seq(o))
    def __lt__(self, o): return _enp.less(self, _seq(o))
    def __le__(self, o): return _enp.less_equal(self, _seq(o))
    def __gt__(self, o): return _enp.greater(self, _seq(o))
    def __ge__(self, o): return _enp.greater_equal(self, _seq(o))

    # sizes in bytes, from the abstract value, so tracers answer too
    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    # bitwise
    def __and__(self, o): return _enp.bitwise_and(self, o)
    def __rand__(self, o): return _enp.bitwise_and(o, self)
    def __or__(self, o): return _enp.bitwise_or(self, o)
    def __ror__(self, o): return _enp.bitwise_or(o, self)
    def __xor__(self, o): return _enp.bitwise_xor(self, o)
    def __rxor__(self, o): return _enp.bitwise_xor(o, self)
    def __lshift__(self, o): return _enp.bitwise_left_shift(self, o)
    def __rlshift__(self, o): return _enp.bitwise_left_shift(o, self)
    def __rshift__(self, o): return _enp.bitwise_right_shift(self, o)
    def __rrshift__(self, o): return _enp.bitwise_right_shift(o, self)

    # indexing
    def __getitem__(self, idx): return _enp._indexing.getitem(self, idx)

    def __setitem__(self, idx, value):
        raise TypeError(
            "ember arrays are immutable and do not support item assignment. "
            "Use x = x.at[idx].set(value) (or .add/.multiply/.min/.max) instead.")

    @property
    def at(self):
        return _enp._indexing.AtIndexer(self)

    # array-API / numpy conveniences
    @property
    def T(self):
        # numpy semantics: reverse all axes (a no-op on 0-d and 1-d arrays)
        return _enp.permute_dims(self, tuple(range(self.ndim))[::-1])

    @property
    def mT(self):
        if self.ndim < 2:
            raise ValueError(f".mT needs at least 2 dimensions, got shape {self.shape}")
        return _enp.matrix_transpose(self)

    def __array_namespace__(self, *, api_version=None):
        if api_version is not None and api_version not in ("2021.12", "2022.12", "2023.12", "2024.12"):
            raise ValueError(f"unsupported array API version {api_version!r}")
        return _enp

    def astype(self, dtype, copy=True, *, device=None): return _enp.astype(self, dtype)
    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        return _enp.reshape(self, shape, order=order)
    def transpose(self, *axes):
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = axes[0]
        return _enp.transpose(self, axes or None)
    # The reductions take numpy's keyword protocol: numpy's functions on a non-ndarray
    # call these methods with out=, keepdims=, initial=, where= (np.sum(x) calls
    # x.sum(axis=None, dtype=None, out=None)), so numpy code runs on ember arrays.
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        return _enp.sum(self, axis, dtype, out, keepdims, initial, where)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        return _enp.prod(self, axis, dtype, out, keepdims, initial, where)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
        return _enp.mean(self, axis, dtype, out, keepdims, where=where)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
            mean=None, correction=None):
        return _enp.var(self, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                         correction=correction)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
            mean=None, correction=None):
        return _enp.std(self, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                         correction=correction)

    def max(self, axis=None, out=None, keepdims=False, initial=None, where=None):
        return _enp.max(self, axis, out, keepdims, initial, where)

    def min(self, axis=None, out=None, keepdims=False, initial=None, where=None):
        return _enp.min(self, axis, out, keepdims, initial, where)

    def argmax(self, axis=None, out=None, *, keepdims=False):
        return _enp.argmax(self, axis, out, keepdims=keepdims)

    def argmin(self, axis=None, out=None, *, keepdims=False):
        return _enp.argmin(self, axis, out, keepdims=keepdims)

    def any(self, axis=None, out=None, keepdims=False, *, where=None):
        return _enp.any(self, axis, out, keepdims, where=where)

    def all(self, axis=None, out=None, keepdims=False, *, where=None):
        return _enp.all(self, axis, out, keepdims, where=where)

    def cumsum(self, axis=None, dtype=None, out=None):
        return _enp.cumsum(self, axis, dtype, out)

    def flatten(self): return _enp.reshape(self, (-1,))
    def ravel(self): return _enp.reshape(self, (-1,))
    def squeeze(self, axis=None): return _enp.squeeze(self, axis=axis)
    def clip(self, min=None, max=None, out=None, **kw): return _enp.clip(self, min, max, out=out, **kw)
    def round(self, decimals=0, out=None): return _enp.round(self, decimals=decimals, out=out)
    def conj(self): return _enp.conj(self)
    def dot(self, other): return _enp.dot(self, other)
    def swapaxes(self, a, b): return _enp.swapaxes(self, a, b)

    def cumprod(self, axis=None, dtype=None, out=None): return _enp.cumprod(self, axis, dtype, out)
    def nonzero(self, *, size=None, fill_value=None): return _enp.nonzero(self, size=size, fill_value=fill_value)
    def sort(self, axis=-1, kind=None, order=None, *, descending=False, stable=True):
        return _enp.sort(self, axis=axis, descending=descending, stable=stable, kind=kind,
                          order=order)

    def argsort(self, axis=-1, kind=None, order=None, *, descending=False, stable=True):
        return _enp.argsort(self, axis=axis, descending=descending,
                             stable=True if stable is None else stable, kind=kind, order=order)
    def repeat(self, repeats, axis=None): return _enp.repeat(self, repeats, axis=axis)
    def take(self, indices, axis=None, out=None, mode=None): return _enp.take(self, indices, axis=axis, out=out, mode=mode)
    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None): return _enp.trace(self, offset, axis1, axis2, dtype, out)
    def diagonal(self, offset=0, axis1=0, axis2=1): return _enp.diagonal(self, offset, axis1, axis2)
    def ptp(self, axis=None, out=None, keepdims=False): return _enp.ptp(self, axis, out, keepdims)
    def conjugate(self): return _enp.conj(self)
    def __round__(self, ndigits=None): return _enp.round(self, decimals=ndigits or 0)

    def __contains__(self, value):
        return bool(_enp.any(_enp.equal(self, value)))

    @property
    def real(self): return _enp.real(self)

    @property
    def imag(self): return _enp.imag(self)
