"""Containers: `Sequential`, `ModuleList`, `ModuleDict`, `ParameterList`,
`ParameterDict`.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    >>> model(enp.ones((2, 4))).shape
    (2, 1)
"""
from __future__ import annotations

import operator
from collections import OrderedDict

from ..module import Module, Parameter

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


class Sequential(Module):
    """Modules applied in order; built from modules or one OrderedDict of named ones.
    Supports indexing, slicing (a new Sequential), len, iteration and append.

    Example:
        >>> from collections import OrderedDict
        >>> from ember import nn
        >>> m = nn.Sequential(OrderedDict([("fc", nn.Linear(1, 2)), ("act", nn.ReLU())]))
        >>> type(m.fc).__name__, len(m)
        ('Linear', 2)
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def _idx(self, idx):
        n = len(self)
        idx = operator.index(idx)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return idx % n

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[self._idx(idx)]

    def __setitem__(self, idx, module):
        key = list(self._modules)[self._idx(idx)]
        self.add_module(key, module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        if isinstance(idx, slice):
            for k in keys[idx]:
                del self._modules[k]
        else:
            del self._modules[keys[self._idx(idx)]]
        # keep integer names contiguous, as PyTorch does
        items = list(self._modules.items())
        self._modules.clear()
        for i, (k, m) in enumerate(items):
            self._modules[str(i) if k.isdigit() else k] = m

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        """Add a module at the end; returns self.

        Example:
            >>> from ember import nn
            >>> len(nn.Sequential().append(nn.ReLU()))
            1
        """
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """Append each of `modules`; returns self.

        Example:
            >>> from ember import nn
            >>> len(nn.Sequential().extend([nn.ReLU(), nn.Tanh()]))
            2
        """
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module):
        """Insert `module` before position `index`; returns self.

        Example:
            >>> from ember import nn
            >>> type(nn.Sequential(nn.ReLU()).insert(0, nn.Tanh())[0]).__name__
            'Tanh'
        """
        mods = list(self._modules.values())
        n = len(mods)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        mods.insert(index % (n + 1) if index < 0 else index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)
        return self

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input


class ModuleList(Module):
    """A list of submodules (registered, so their parameters are found).

    Example:
        >>> from ember import nn
        >>> layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
        >>> len(layers), len(list(layers.parameters()))
        (3, 3)
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _idx(self, idx):
        n = len(self)
        idx = operator.index(idx)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return idx % n

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(self._idx(idx))]

    def __setitem__(self, idx, module):
        self.add_module(str(self._idx(idx)), module)

    def __delitem__(self, idx):
        mods = list(self._modules.values())
        if isinstance(idx, slice):
            del mods[idx]
        else:
            del mods[self._idx(idx)]
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module):
        """Add a module at the end; returns self.

        Example:
            >>> from ember import nn
            >>> len(nn.ModuleList().append(nn.ReLU()))
            1
        """
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """Append each of `modules`; returns self.

        Example:
            >>> from ember import nn
            >>> len(nn.ModuleList().extend([nn.ReLU()]))
            1
        """
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module) -> None:
        """Insert `module` before position `index`.

        Example:
            >>> from ember import nn
            >>> ml = nn.ModuleList([nn.ReLU()]); ml.insert(0, nn.Tanh()); type(ml[0]).__name__
            'Tanh'
        """
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def forward(self, *args, **kwargs):
        raise TypeError("ModuleList is a container and has no forward(); iterate over it")


class ModuleDict(Module):
    """A dict of submodules (insertion ordered).

    Example:
        >>> from ember import nn
        >>> d = nn.ModuleDict({"enc": nn.Linear(2, 2), "act": nn.ReLU()})
        >>> list(d.keys())
        ['enc', 'act']
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key):
        """Remove and return the module at `key`.

        Example:
            >>> from ember import nn
            >>> type(nn.ModuleDict({"a": nn.ReLU()}).pop("a")).__name__
            'ReLU'
        """
        return self._modules.pop(key)

    def clear(self):
        self._modules.clear()

    def update(self, modules):
        """Add modules from a dict or an iterable of (name, module) pairs.

        Example:
            >>> from ember import nn
            >>> d = nn.ModuleDict(); d.update([("a", nn.ReLU())]); len(d)
            1
        """
        items = modules.items() if hasattr(modules, "items") else modules
        for k, m in items:
            self.add_module(k, m)

    def forward(self, *args, **kwargs):
        raise TypeError("ModuleDict is a container and has no forward(); index it")


class ParameterList(Module):
    """A list of parameters, registered as "0", "1", ...

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> pl = nn.ParameterList([enp.ones(2), enp.zeros(3)])
        >>> [n for n, _ in pl.named_parameters()]
        ['0', '1']
    """

    def __init__(self, values=None):
        super().__init__()
        for v in values or ():
            self.append(v)

    def __getitem__(self, idx):
        return self._parameters[str(operator.index(idx) % len(self))]

    def __setitem__(self, idx, value):
        setattr(self, str(operator.index(idx) % len(self)), value if isinstance(value, Parameter) else Parameter(value))

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, value):
        """Add a parameter at the end; returns self.

        Example:
            >>> import ember.numpy as enp
            >>> from ember import nn
            >>> len(nn.ParameterList().append(enp.ones(1)))
            1
        """
        self.register_parameter(str(len(self)), value)
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self


class ParameterDict(Module):
    """A dict of parameters.

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> sorted(nn.ParameterDict({"a": enp.ones(1)}).parameters())
        ['a']
    """

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        self.register_parameter(key, value)

    def __delitem__(self, key):
        del self._parameters[key]

    def __contains__(self, key):
        return key in self._parameters

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()

    def update(self, parameters):
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for k, v in items:
            self.register_parameter(k, v)
