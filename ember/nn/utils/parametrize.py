"""Parametrizations with PyTorch 2's API: `register_parametrization(module, name,
parametrization)` replaces the parameter `module.<name>` by a value computed on
every access, `parametrization(original)`, from the tensor stored at
`module.parametrizations.<name>.original` (or `original0`, `original1`, ... when
the parametrization's `right_inverse` returns several).

As in PyTorch, the module's class is swapped for a per-instance subclass
(`ParametrizedLinear`) with a property for `name`, so `forward` reads the
computed value without change.  The originals are ordinary parameters (and a
parametrization's buffers ordinary buffers) of the module tree, so
`functional_call`, `grad`, `TrainStep` and state dicts see them under PyTorch's
names, and gradients reach them through the parametrization.  Assigning
`module.<name> = value` stores `right_inverse(value)` in the originals.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> from ember.nn.utils import parametrize
    >>> class Symmetric(nn.Module):
    ...     def forward(self, X):
    ...         return enp.triu(X) + enp.triu(X, k=1).T
    >>> m = nn.Linear(3, 3)
    >>> _ = parametrize.register_parametrization(m, "weight", Symmetric())
    >>> bool((m.weight == m.weight.T).all()), [n for n, _ in m.named_parameters()]
    (True, ['bias', 'parametrizations.weight.original'])
"""
from __future__ import annotations

import contextlib
import contextvars

from ..layers.container import ModuleDict, ModuleList
from ..module import Module, Parameter, _is_array
from ... import numpy as enp

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized", "cached",
           "ParametrizationList", "type_before_parametrizations", "transfer_parametrizations_and_params"]

_CACHE: contextvars.ContextVar = contextvars.ContextVar("ember_parametrize_cache", default=None)


@contextlib.contextmanager
def cached():
    """Within the block, each parametrized tensor is computed once per module and
    reused (as in PyTorch, enp.g. one weight for every step of a recurrent loop).

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> from ember.nn.utils import parametrizations
        >>> m = parametrizations.weight_norm(nn.Linear(2, 2))
        >>> with cached():
        ...     same = m.weight is m.weight
        >>> same
        True
    """
    token = _CACHE.set({})
    try:
        yield
    finally:
        _CACHE.reset(token)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the original
    tensor(s) they are applied to (`original`, or `original0`, `original1`, ...).

    Example:
        >>> from ember import nn
        >>> from ember.nn.utils import parametrizations
        >>> m = parametrizations.weight_norm(nn.Linear(2, 3))
        >>> type(m.parametrizations.weight).__name__, m.parametrizations.weight.original0.shape
        ('ParametrizationList', (3, 1))
    """

    def __init__(self, modules, original, unsafe: bool = False, *, requires_grad: bool = True):
        super().__init__(modules)
        self.unsafe = unsafe
        value = original
        for p in reversed(list(self)):
            if hasattr(p, "right_inverse"):
                value = p.right_inverse(value)
        self.is_tensor = _is_array(value)
        self.ntensors = 1 if self.is_tensor else len(value)
        names = ["original"] if self.is_tensor else [f"original{i}" for i in range(self.ntensors)]
        for name, v in zip(names, [value] if self.is_tensor else value):
            setattr(self, name, Parameter(v, requires_grad=requires_grad))
        if not unsafe:
            got = self()
            if not _is_array(got) or tuple(got.shape) != tuple(original.shape) or got.dtype != original.dtype:
                raise ValueError(f"register_parametrization: the parametrization must return an array "
                                 f"with the original's shape {tuple(original.shape)} and dtype "
                                 f"{original.dtype}, got shape {getattr(got, 'shape', None)} and dtype "
                                 f"{getattr(got, 'dtype', None)}; pass unsafe=True to allow it")

    def right_inverse(self, value) -> None:
        """Store `value` (through each parametrization's `right_inverse`, last first)
        in the originals; what `module.<name> = value` runs.

        Example:
            >>> import ember.numpy as enp
            >>> from ember import nn
            >>> from ember.nn.utils import parametrizations
            >>> m = parametrizations.weight_norm(nn.Linear(2, 1))
            >>> m.weight = enp.asarray([[3.0, 4.0]])
            >>> m.parametrizations.weight.original0.tolist()
            [[5.0]]
        """
        for p in reversed(list(self)):
            if hasattr(p, "right_inverse"):
                value = p.right_inverse(value)
        if self.is_tensor:
            setattr(self, "original", enp.asarray(value))
        else:
            if _is_array(value) or len(value) != self.ntensors:
                raise ValueError(f"right_inverse must return {self.ntensors} arrays for this "
                                 f"parametrization")
            for i, v in enumerate(value):
                setattr(self, f"original{i}", enp.asarray(v))

    def forward(self):
        originals = ((self.original,) if self.is_tensor
                     else tuple(getattr(self, f"original{i}") for i in range(self.ntensors)))
        mods = list(self)
        x = mods[0](*originals)
        for p in mods[1:]:
            x = p(x)
        return x


def _getter(name):
    def get(module):
        cache = _CACHE.get()
        if cache is not None:
            key = (id(module), name)
            if key not in cache:
                cache[key] = module.parametrizations[name]()
            return cache[key]
        return module.parametrizations[name]()
    get.__name__ = name
    return get


def _setattr(self, name, value):
    d = self.__dict__
    if name in d.get("_parametrized_names", ()):
        self.parametrizations[name].right_inverse(value)
        return
    Module.__setattr__(self, name, value)


def is_parametrized(module, tensor_name=None) -> bool:
    """Whether `module` has parametrizations (for `tensor_name`, if given).

    Example:
        >>> from ember import nn
        >>> is_parametrized(nn.Linear(2, 2))
        False
    """
    names = module.__dict__.get("_parametrized_names")
    if not names:
        return False
    return tensor_name is None or tensor_name in names


def type_before_parametrizations(module) -> type:
    """The module's class before any parametrization was registered.

    Example:
        >>> from ember import nn
        >>> type_before_parametrizations(nn.ReLU()).__name__
        'ReLU'
    """
    return module.__dict__.get("_class_before_parametrizations", type(module))


def register_parametrization(module, tensor_name: str, parametrization, *, unsafe: bool = False):
    """Make `module.<tensor_name>` the value `parametrization(original)`, computed
    on each access (see the module docstring); registering a second
    parametrization on the same tensor applies it after the first.  Returns the
    module.

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> class Positive(nn.Module):
        ...     def forward(self, X):
        ...         return enp.exp(X)
        ...     def right_inverse(self, W):
        ...         return enp.log(W)
        >>> m = nn.Linear(2, 2)
        >>> m.weight = enp.ones((2, 2))
        >>> _ = register_parametrization(m, "weight", Positive())
        >>> m.parametrizations.weight.original.tolist(), m.weight.tolist()
        ([[0.0, 0.0], [0.0, 0.0]], [[1.0, 1.0], [1.0, 1.0]])
    """
    if not isinstance(parametrization, Module):
        raise TypeError(f"register_parametrization: the parametrization must be an nn.Module with "
                        f"forward(X), got {type(parametrization).__name__}")
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            current = getattr(module, tensor_name)
            got = parametrization(current)
            if tuple(got.shape) != tuple(current.shape) or got.dtype != current.dtype:
                raise ValueError(f"register_parametrization: the new parametrization changes "
                                 f"{tensor_name}'s shape/dtype from {tuple(current.shape)} "
                                 f"{current.dtype} to {tuple(got.shape)} {got.dtype}; pass unsafe=True")
        plist.append(parametrization)
        return module
    params, buffers, _ = module._registries()
    if tensor_name not in params and tensor_name not in buffers:
        raise ValueError(f"register_parametrization: {type(module).__name__} has no parameter or "
                         f"buffer named {tensor_name!r}")
    original = getattr(module, tensor_name)
    if original is None:
        raise ValueError(f"register_parametrization: {type(module).__name__}.{tensor_name} is None")
    frozen = module.is_frozen(tensor_name) if tensor_name in params else True
    plist = ParametrizationList([parametrization], original, unsafe=unsafe, requires_grad=not frozen)
    delattr(module, tensor_name)
    d = module.__dict__
    if "_parametrized_names" not in d:
        base = type(module)
        cls = type(f"Parametrized{base.__name__}", (base,), {"__setattr__": _setattr})
        d["_class_before_parametrizations"] = base
        d["_parametrized_names"] = []
        module.__class__ = cls
        module.parametrizations = ModuleDict()
    d["_parametrized_names"].append(tensor_name)
    setattr(type(module), tensor_name, property(_getter(tensor_name)))
    module.parametrizations[tensor_name] = plist
    return module


def remove_parametrizations(module, tensor_name: str, leave_parametrized: bool = True):
    """Undo `register_parametrization` for `tensor_name`: the tensor becomes a plain
    parameter again, holding the parametrized value (or, with
    `leave_parametrized=False`, the original).  Returns the module.

    Example:
        >>> from ember import nn
        >>> from ember.nn.utils import parametrizations
        >>> m = parametrizations.weight_norm(nn.Linear(2, 2))
        >>> _ = remove_parametrizations(m, "weight"); type(m).__name__, sorted(m.state_dict())
        ('Linear', ['bias', 'weight'])
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"remove_parametrizations: {type(module).__name__} has no parametrization "
                         f"on {tensor_name!r}")
    plist = module.parametrizations[tensor_name]
    if leave_parametrized:
        value = getattr(module, tensor_name)
    else:
        if not plist.is_tensor:
            raise ValueError("remove_parametrizations: leave_parametrized=False needs a "
                             "parametrization with a single original tensor")
        value = plist.original
    frozen = plist.is_frozen("original" if plist.is_tensor else "original0")
    d = module.__dict__
    names = d["_parametrized_names"]
    names.remove(tensor_name)
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    if not names:
        del module.parametrizations
        module.__class__ = d.pop("_class_before_parametrizations")
        del d["_parametrized_names"]
    Module.__setattr__(module, tensor_name, Parameter(value, requires_grad=not frozen))
    return module


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Register `from_module`'s parametrizations (the same parametrization modules)
    on `to_module` and copy the originals.  Returns `to_module`.

    Example:
        >>> from ember import nn
        >>> from ember.nn.utils import parametrizations
        >>> a = parametrizations.weight_norm(nn.Linear(2, 2)); b = nn.Linear(2, 2)
        >>> _ = transfer_parametrizations_and_params(a, b)
        >>> b.weight.tolist() == a.weight.tolist()
        True
    """
    names = [tensor_name] if tensor_name is not None else list(from_module.__dict__.get(
        "_parametrized_names", ()))
    for name in names:
        src = from_module.parametrizations[name]
        for p in src:
            register_parametrization(to_module, name, p, unsafe=True)
        dst = to_module.parametrizations[name]
        for n, v in src.named_parameters(recurse=False):
            setattr(dst, n, v)
    return to_module
