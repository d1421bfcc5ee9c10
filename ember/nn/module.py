"""`Module`, the stateful PyTorch-style shim over ember's pure functions.

Its helpers live beside it: `_names` (nested dicts <-> dotted names),
`_rng_streams` (the keys a forward pass draws), `_snapshots` (what a call
restores) and `stateless` (`functional_call`); the names users import from here
are re-exported.

Registration convention (attribute assignment in `__init__` or later):
- a floating-point (or complex) ember Array becomes a *parameter*;
- `nn.Parameter(x)` marks a parameter explicitly (it is unwrapped to the array);
- `self.register_buffer(name, x)` registers *state* that is not trained (BatchNorm
  running statistics); integer and bool ember Arrays assigned as attributes become
  buffers too;
- a `Module` becomes a submodule;
- everything else (Python numbers, strings, numpy arrays, functions) is config.
Assigning `None` to a registered name keeps the slot empty (e.g. `bias=False`).
Assigning an array that another slot already holds ties the two slots, as in PyTorch
(`dec.weight = enc.weight`): one parameter, listed once by `named_parameters()` and
`parameters()`, with one gradient and one optimiser state, and every write-back puts its
new value into all its slots.

Arrays are immutable, so "updating" a parameter rebinds the attribute; the module
tree is the only mutable thing.  Parameters and buffers come out as nested-dict
pytrees (`parameters()`, `buffers()`) or flat dotted names (`named_parameters()`,
`state_dict()`).

Transforms never see the module itself: `functional_call(model, state, *args)`
swaps the given values in, runs `model(*args)`, collects the buffers the forward
pass wrote (BatchNorm statistics), and restores the original values in a `finally`
block, so no tracer is ever left in a module.  A plain `model(x)` under a transform
that tries to write a traced value into the module restores the old state and
raises, rather than leaking the tracer.

Randomness (dropout): a forward pass draws keys from an RNG stream.
`functional_call(..., rng=key)` (and `nn.value_and_grad`, `nn.TrainStep`) pass
the key explicitly; an eager `model(x)` outside any transform draws a fresh key
from the model's own key (`set_rng`) or from the global seed (`nn.manual_seed`).

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> class Affine(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.w = enp.ones(3)          # a parameter
    ...         self.scale = 2.0              # config
    ...     def forward(self, x):
    ...         return self.w * x * self.scale
    >>> m = Affine()
    >>> sorted(m.parameters())
    ['w']
    >>> out, bufs = nn.functional_call(m, {"w": enp.zeros(3)}, enp.ones(3))
    >>> out.tolist(), m.w.tolist()
    ([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
"""
from __future__ import annotations

import weakref
from collections import OrderedDict, namedtuple

import numpy as np

from .. import dtypes as _dt
from .. import numpy as enp
from .. import random, serialization, tree
from ..api_device import device_put
from ..array import Array
from ..backends.base import Device
from ..fx.core import Tracer, eval_trace, get_aval, set_current_trace
from ..transforms import captured_state as _captured
from .hooks import HookMixin, call_forward as _call_forward
from ._names import flatten_names, unflatten_names
# re-exported: train, init and the layers import these from here
from ._rng_streams import (_STREAM, _Stream, _draw_eager_key, _global_next_key,  # noqa: F401
                           _in_transform, manual_seed, next_rng_key, rng_scope)
from ._snapshots import _SCOPE, _StateGuard, _restore, _scope_ids, _snapshot, _state_items
from ..fx.spelling import user_str
from .functional._util import is_array

__all__ = ["Module", "ModuleInitError", "Parameter", "Buffer", "ParameterView", "NamedParameters", "functional_call", "manual_seed", "next_rng_key", "rng_scope",
           "flatten_names", "unflatten_names", "IncompatibleKeys"]

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


_is_array = is_array   # module slots, stateless and parametrize use the one check


# --- finding the module slots that hold an array (for nn.init's in-place spelling) ----
# `nn.init.normal_(layer.weight)` must update the layer, as in PyTorch, yet arrays are
# immutable: the initialiser rebinds the slot holding that very array object.  Every
# registry write indexes the array's id (`_Slots`); modules whose registries are not
# `_Slots` (made some other way) are still found by a scan over the live modules.

_LIVE_MODULES: "weakref.WeakSet" = weakref.WeakSet()
_HOLDERS: dict = {}  # id(array) -> (weakref to the array, [weakref to a module, ...])


def _track(module) -> None:
    try:
        _LIVE_MODULES.add(module)
    except TypeError:  # a subclass with __eq__ but no __hash__: only the id index finds it
        pass


def _forget(key, ref):
    entry = _HOLDERS.get(key)
    if entry is not None and entry[0] is ref:
        del _HOLDERS[key]


def _note_holder(value, module) -> None:
    if type(value) is not Array:
        return
    key = id(value)
    entry = _HOLDERS.get(key)
    if entry is None or entry[0]() is not value:
        ref = weakref.ref(value, lambda r, key=key: _forget(key, r))
        entry = (ref, {})
        _HOLDERS[key] = entry
    if id(module) not in entry[1]:
        entry[1][id(module)] = weakref.ref(module)


class _Slots(OrderedDict):
    """A module's parameter or buffer registry: every write notes which module holds
    the array, so `rebind_array` finds the slots without scanning all modules."""

    def __init__(self, owner=None):
        super().__init__()
        self._owner = weakref.ref(owner) if owner is not None else None

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        owner = self._owner() if self._owner is not None else None
        if owner is not None:
            _note_holder(value, owner)

    def __reduce__(self):
        # the owner is a weakref (not picklable); Module.__setstate__ sets it again
        return (type(self), (), None, None, iter(list(self.items())))

    def copy(self):
        return OrderedDict(self)


def _holding_slots(modules, old):
    out = []
    for m in modules:
        if m is None or "_parameters" not in m.__dict__:
            continue
        for reg in (m._parameters, m._buffers):
            out += [(reg, n) for n, v in reg.items() if v is old]
    return out


def holding_slots(old) -> list:
    """The `(module, attribute name)` slots of live modules that hold the array object
    `old` (not an equal copy) as a parameter or buffer.

    Example:
        >>> from ember import nn
        >>> m = nn.Linear(2, 1)
        >>> [(type(mod).__name__, n) for mod, n in holding_slots(m.bias)]
        [('Linear', 'bias')]
    """
    return [(reg._owner() if isinstance(reg, _Slots) and reg._owner is not None else None, n)
            for reg, n in _find_slots(old)]


def _find_slots(old):
    if type(old) is not Array:
        return []
    entry = _HOLDERS.get(id(old))
    slots = []
    if entry is not None and entry[0]() is old:
        slots = _holding_slots([r() for r in list(entry[1].values())], old)
    if not slots:
        slots = _holding_slots(list(_LIVE_MODULES), old)
    return slots


def rebind_array(old, new) -> int:
    """Put `new` in the parameter or buffer slot that holds the array object `old` (not
    an equal copy) and return the number of slots rebound: 1 when exactly one slot of
    the live modules holds it, every slot when all that hold it are tied (one parameter,
    `dec.weight = enc.weight`, as PyTorch re-initialises the shared tensor).  This is
    how `nn.init.normal_(layer.weight)` updates the layer.  Otherwise an array held by
    several slots is ambiguous (clones that share arrays until one is replaced, as
    `nn.TransformerEncoder`'s layers do): nothing is rebound and 0 is returned.

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> m = nn.Linear(2, 1)
        >>> rebind_array(m.bias, enp.zeros(1)), m.bias.tolist()
        (1, [0.0])
    """
    if type(old) is not Array or old is new:
        return 0
    slots = _find_slots(old)
    tokens = {id(_tie_token(reg, name)) for reg, name in slots}
    if len(slots) > 1 and len(tokens) == 1 and _tie_token(*slots[0]) is not None:
        for reg, name in slots:
            reg[name] = new
        return len(slots)
    if len(slots) != 1:
        return 0
    reg, name = slots[0]
    reg[name] = new
    return 1


def _tie_token(reg, name):
    owner = reg._owner() if isinstance(reg, _Slots) and reg._owner is not None else None
    return owner.__dict__.get("_tied", {}).get(name) if owner is not None else None


class _Tie:
    """The identity of one tied parameter: the slots tied by assignment share one token.
    A deep copy copies it with the module tree, so a copied model keeps its ties while
    clones made one by one (`nn.TransformerEncoder`'s layers) get a token each: arrays
    such clones share are not tied across them."""
    __slots__ = ()


def _mark_tie(module, name, value) -> None:
    """`value` about to go into `module`'s slot `name`: when another parameter or buffer
    slot already holds it, that is PyTorch's weight tying (`dec.weight = enc.weight`, one
    parameter under two names) and the slots share a `_Tie` token; an array no other
    slot holds unties the slot.  Arrays shared without an assignment (clones, until one
    is replaced) stay independent parameters, as PyTorch's deep copies are."""
    if type(value) is not Array:
        return  # a traced value written during a pass: the call restores the slot
    ties = module.__dict__.setdefault("_tied", {})
    owners = []
    entry = _HOLDERS.get(id(value))
    if entry is not None and entry[0]() is value:  # only the index: a fresh array is never scanned for
        for reg, n in _holding_slots([r() for r in list(entry[1].values())], value):
            owner = reg._owner() if isinstance(reg, _Slots) and reg._owner is not None else None
            if owner is not None and not (owner is module and n == name):
                owners.append((owner, n))
    if not owners:
        ties.pop(name, None)
        return
    token = next((o.__dict__.get("_tied", {}).get(n) for o, n in owners
                  if o.__dict__.get("_tied", {}).get(n) is not None), None) or _Tie()
    for owner, n in owners + [(module, name)]:
        owner.__dict__.setdefault("_tied", {})[n] = token


def _tie_key(m, n, v):
    """(id of the array, its tie token) for a tied slot, None for an untied one."""
    token = m.__dict__.get("_tied", {}).get(n)
    return None if token is None else (id(v), id(token))


class Parameter:
    """Marks an array as a parameter when assigned to a module attribute; the
    module stores the array itself.  `Parameter(x, requires_grad=False)` registers
    it frozen.

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> m = nn.Module(); m.t = nn.Parameter(enp.zeros(2))
        >>> list(m.parameters())
        ['t']
    """
    __slots__ = ("data", "requires_grad")

    def __init__(self, data, requires_grad: bool = True):
        data = enp.asarray(data)
        if not _dt.is_inexact(get_aval(data).dtype):
            raise TypeError(f"nn.Parameter needs a floating-point array, got {user_str(get_aval(data))}")
        self.data = data
        self.requires_grad = bool(requires_grad)

    def __repr__(self):
        return f"Parameter({self.data!r})"


class Buffer:
    """Marks an array as a buffer when assigned to a module attribute (PyTorch 2.5's
    `nn.Buffer`): `self.x = nn.Buffer(t)` is `self.register_buffer("x", t)`, so a
    float array becomes state that is not trained.  `persistent=False` keeps it out
    of `state_dict()`.

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> m = nn.Module(); m.scale = nn.Buffer(enp.ones(2))
        >>> list(m.buffers()), list(m.parameters())
        (['scale'], [])
    """
    __slots__ = ("data", "persistent")

    def __init__(self, data, *, persistent: bool = True):
        self.data = enp.asarray(data)
        self.persistent = bool(persistent)

    def __repr__(self):
        return f"Buffer({self.data!r})"


# --- parameter views that remember their module ----------------------------------------

class ParameterView(dict):
    """What `Module.parameters()` returns: the nested dict of the module's parameters
    (a pytree like any dict; transforms and `tree` functions give plain dicts back)
    that also remembers the module it came from, so that
    `optim.SGD(model.parameters(), lr=0.1)` and parameter groups built from
    `model.layer.parameters()` update the module, as in PyTorch.

    Example:
        >>> from ember import nn, optim
        >>> import ember.numpy as enp
        >>> m = nn.Linear(2, 1)
        >>> opt = optim.SGD(m.parameters(), lr=0.5)
        >>> g = {"weight": enp.ones((1, 2)), "bias": enp.ones(1)}
        >>> before = m.bias.tolist()[0]; _ = opt.step(g)
        >>> m.bias.tolist()[0] == before - 0.5
        True
    """
    __slots__ = ("_module", "_reader")

    def __init__(self, module, reader):
        super().__init__(reader())
        self._module = module
        self._reader = reader

    def __reduce__(self):
        # a copy or a pickle is plain data, not a handle on the module
        return (dict, (dict(self),))

    def module_source(self):
        """(module, read) for optimisers: `read()` gives the current values as a plain
        nested dict, and `module.load_parameters(tree)` writes them back.

        Example:
            >>> from ember import nn
            >>> m = nn.Linear(2, 1)
            >>> m.parameters().module_source()[0] is m
            True
        """
        return self._module, self._reader


def _flatten_view(view):
    keys = sorted(view)  # a plain dict's pytree order, so leaves line up with dict(view)
    return [view[k] for k in keys], tuple(keys)


def _register_view():
    tree.register_pytree_node(ParameterView, _flatten_view, lambda keys, children: dict(zip(keys, children)))


_register_view()


class NamedParameters:
    """What `Module.named_parameters()` returns: an iterator of (dotted name, array)
    pairs in registration order that also remembers its module, so that
    `optim.Adam(model.named_parameters(), lr=...)` updates the module.

    Example:
        >>> from ember import nn
        >>> [n for n, _ in nn.Linear(2, 1).named_parameters()]
        ['weight', 'bias']
    """

    def __init__(self, module, pairs, reader):
        self._it = iter(pairs)
        self._module = module
        self._reader = reader

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._it)

    module_source = ParameterView.module_source


# --- Module ---------------------------------------------------------------------------

_INTERNAL = ("_parameters", "_buffers", "_modules", "_frozen", "_non_persistent", "training",
             "_rng_key", "_tied")


class ModuleInitError(TypeError, AttributeError):
    """A `Module` used before `Module.__init__()` ran (a subclass that forgot
    `super().__init__()`).  A TypeError; also an AttributeError, so `hasattr` and
    `getattr(m, name, default)` on such an object still answer instead of raising.

    Example:
        >>> from ember import nn
        >>> class Net(nn.Module):
        ...     def __init__(self):
        ...         self.fc = nn.Linear(2, 2)
        >>> try:
        ...     Net()
        ... except nn.ModuleInitError as e:
        ...     print(str(e)[:60])
        Net: cannot assign the submodule 'fc' before Module.__init__
    """


def _missing_init(cls_name, what):
    return ModuleInitError(
        f"{cls_name}: cannot {what} before Module.__init__() has run: did you forget to call "
        f"super().__init__() at the start of {cls_name}.__init__?")


class Module(HookMixin):
    """Base class of layers and models (PyTorch's `nn.Module` shape; see the module
    docstring for how attributes are registered).

    Subclasses call `super().__init__()` first and define `forward`; calling the
    module runs `forward`.

    Example:
        >>> from ember import nn
        >>> m = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
        >>> [n for n, _ in m.named_parameters()]
        ['0.weight', '0.bias']
    """

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}: Module.__init__() takes no arguments")
        d = self.__dict__
        d["_parameters"] = _Slots(self)
        d["_buffers"] = _Slots(self)
        d["_modules"] = OrderedDict()
        d["_frozen"] = set()
        d["_non_persistent"] = set()
        d["training"] = True
        d["_rng_key"] = None
        d["_tied"] = {}  # slot name -> _Tie token of the slots tied by assignment (`_mark_tie`)
        _track(self)

    # --- attribute registration -----------------------------------------------------

    def _registries(self):
        d = self.__dict__
        if "_parameters" not in d:
            raise _missing_init(type(self).__name__, "assign a parameter, buffer or submodule")
        return d["_parameters"], d["_buffers"], d["_modules"]

    def __setattr__(self, name, value):
        if name in _INTERNAL:
            if "_parameters" not in self.__dict__ and name != "training":
                raise _missing_init(type(self).__name__, f"assign {name!r}")
            object.__setattr__(self, name, value)
            return
        if isinstance(value, Buffer):
            if "_parameters" not in self.__dict__:
                raise _missing_init(type(self).__name__, f"assign the buffer {name!r}")
            self.register_buffer(name, value.data, persistent=value.persistent)
            return
        if isinstance(value, (Parameter, Module)) or _is_array(value):
            if "_parameters" not in self.__dict__:
                kind = "submodule" if isinstance(value, Module) else "parameter or buffer"
                raise _missing_init(type(self).__name__, f"assign the {kind} {name!r}")
            params, buffers, modules = self._registries()
        else:
            d = self.__dict__
            params, buffers, modules = (d.get("_parameters"), d.get("_buffers"), d.get("_modules"))
        if isinstance(value, Parameter):
            self._drop_name(name, keep="param")
            _mark_tie(self, name, value.data)
            params[name] = value.data
            if not value.requires_grad:
                self._frozen.add(name)
            else:
                self._frozen.discard(name)
            return
        if isinstance(value, Module):
            self._drop_name(name, keep="module")
            modules[name] = value
            return
        if _is_array(value):
            _mark_tie(self, name, value)
            if name in buffers:
                buffers[name] = value
            elif name in params:
                params[name] = value
            elif _dt.is_inexact(get_aval(value).dtype):
                self._drop_name(name, keep="param")
                params[name] = value
            else:
                self._drop_name(name, keep="buffer")
                buffers[name] = value
            return
        if value is None and params is not None and (name in params or name in buffers or name in modules):
            for reg in (params, buffers, modules):
                if name in reg:
                    reg[name] = None
            return
        if params is not None:
            if name in params or name in buffers or name in modules:
                self._drop_name(name, keep=None)
        object.__setattr__(self, name, value)

    def _drop_name(self, name, keep):
        d = self.__dict__
        for key, reg in (("param", d["_parameters"]), ("buffer", d["_buffers"]), ("module", d["_modules"])):
            if key != keep and name in reg:
                del reg[name]
        if keep != "param":
            d["_frozen"].discard(name)
        if keep != "buffer":
            d["_non_persistent"].discard(name)
        if keep not in ("param", "buffer"):
            d.get("_tied", {}).pop(name, None)
        if name in d:
            del d[name]

    def __getattr__(self, name):
        d = self.__dict__
        if "_parameters" not in d:
            if name in _INTERNAL:
                raise _missing_init(type(self).__name__, f"use {name!r}")
            raise ModuleInitError(f"'{type(self).__name__}' object has no attribute '{name}': "
                                  f"did you forget to call super().__init__() at the start of "
                                  f"{type(self).__name__}.__init__?")
        for reg in ("_parameters", "_buffers", "_modules"):
            r = d[reg]
            if name in r:
                return r[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        d = self.__dict__
        if "_parameters" in d and any(name in d[r] for r in ("_parameters", "_buffers", "_modules")):
            self._drop_name(name, keep=None)
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        d = self.__dict__
        extra = []
        for reg in ("_parameters", "_buffers", "_modules"):
            extra += list(d.get(reg, ()))
        return sorted(set(list(super().__dir__()) + extra))

    def register_parameter(self, name: str, value) -> None:
        """Register `value` (an array, a `Parameter` or None) as parameter `name`.

        Example:
            >>> import ember.numpy as enp
            >>> from ember import nn
            >>> m = nn.Module(); m.register_parameter("w", enp.ones(2))
            >>> m.w.tolist()
            [1.0, 1.0]
        """
        self._check_name(name)
        if value is None:
            self._registries()
            self._drop_name(name, keep="param")
            self._parameters[name] = None
            return
        setattr(self, name, value if isinstance(value, Parameter) else Parameter(value))

    def register_buffer(self, name: str, value, persistent: bool = True) -> None:
        """Register `value` (an array or None) as buffer `name`: module state that is
        not trained.  Non-persistent buffers stay out of `state_dict()`.

        Example:
            >>> import ember.numpy as enp
            >>> from ember import nn
            >>> m = nn.Module(); m.register_buffer("count", enp.zeros(()))
            >>> list(m.buffers()), list(m.parameters())
            (['count'], [])
        """
        self._check_name(name)
        params, buffers, _ = self._registries()
        if value is not None and not _is_array(value):
            value = enp.asarray(value)
        self._drop_name(name, keep="buffer")
        _mark_tie(self, name, value)
        buffers[name] = value
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def register_module(self, name: str, module) -> None:
        """Register `module` (or None) as submodule `name`; `add_module` is an alias.

        Example:
            >>> from ember import nn
            >>> m = nn.Module(); m.add_module("fc", nn.Linear(1, 1))
            >>> [n for n, _ in m.named_children()]
            ['fc']
        """
        self._check_name(name)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._registries()
        self._drop_name(name, keep="module")
        self._modules[name] = module

    add_module = register_module

    def _check_name(self, name):
        if not isinstance(name, str):
            raise TypeError(f"attribute name should be a string, got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError(f"attribute name can't contain '.' or be empty, got {name!r}")

    # --- traversal -----------------------------------------------------------------------

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """(dotted name, module) pairs of this module and all below it, pre-order;
        a module reachable twice is listed once.

        Example:
            >>> from ember import nn
            >>> [n for n, _ in nn.Sequential(nn.Linear(1, 1)).named_modules()]
            ['', '0']
        """
        if memo is None:
            memo = set()
        if remove_duplicate:  # memo holds the modules themselves, as in PyTorch
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, m in self._registries()[2].items():
            if m is None:
                continue
            yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self):
        """This module and all below it.

        Example:
            >>> from ember import nn
            >>> len(list(nn.Sequential(nn.Linear(1, 1), nn.ReLU()).modules()))
            3
        """
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        """(name, module) pairs of the direct submodules.

        Example:
            >>> from ember import nn
            >>> [n for n, _ in nn.Sequential(nn.ReLU(), nn.Tanh()).named_children()]
            ['0', '1']
        """
        seen = set()
        for name, m in self._registries()[2].items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        """The direct submodules.

        Example:
            >>> from ember import nn
            >>> len(list(nn.Sequential(nn.ReLU(), nn.Tanh()).children()))
            2
        """
        for _, m in self.named_children():
            yield m

    def _named_state(self, kind: str, recurse: bool = True, prefix: str = "", persistent_only=False,
                     trainable_only=False, remove_duplicate=True):
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        seen = set()
        for mname, m in mods:
            reg = m._registries()[0 if kind == "param" else 1]
            for n, v in reg.items():
                if v is None:
                    continue
                key = _tie_key(m, n, v) if remove_duplicate else None
                if key is not None:  # a tied parameter is one parameter: listed once, first name
                    if key in seen:
                        continue
                    seen.add(key)
                if persistent_only and n in m._non_persistent:
                    continue
                if trainable_only and n in m._frozen:
                    continue
                yield (f"{mname}.{n}" if mname else n), v

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """(dotted name, array) pairs of every parameter (frozen ones included), in
        registration order.  A submodule registered twice is listed once, and so is a
        tied parameter (one array assigned to two slots, `dec.weight = enc.weight`),
        under its first name, as in PyTorch: it is one parameter, with one gradient (the
        sum over its uses) and one optimiser state, and every update writes the new
        value into all its slots.  `remove_duplicate=False` lists every slot.

        Example:
            >>> from ember import nn
            >>> [n for n, _ in nn.Linear(2, 1).named_parameters()]
            ['weight', 'bias']
        """
        return NamedParameters(self, self._named_state("param", recurse, prefix,
                                                       remove_duplicate=remove_duplicate),
                               lambda: self._param_tree(recurse))

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """(dotted name, array) pairs of every buffer; a buffer tied to another slot is
        listed once unless `remove_duplicate=False` (see `named_parameters`).

        Example:
            >>> from ember import nn
            >>> [n for n, _ in nn.BatchNorm1d(2).named_buffers()]
            ['running_mean', 'running_var', 'num_batches_tracked']
        """
        yield from self._named_state("buffer", recurse, prefix, remove_duplicate=remove_duplicate)

    def parameters(self, recurse: bool = True) -> dict:
        """All parameters as a nested dict (a pytree), frozen ones included.  Use
        `named_parameters()` for dotted names, `trainable_parameters()` without the
        frozen ones.  The dict is a `ParameterView`: an optimiser given it updates
        this module.

        Example:
            >>> from ember import nn
            >>> p = nn.Sequential(nn.Linear(2, 1)).parameters()
            >>> sorted(p["0"])
            ['bias', 'weight']
        """
        return ParameterView(self, lambda: self._param_tree(recurse))

    def _param_tree(self, recurse=True, trainable_only=False):
        return unflatten_names(OrderedDict(self._named_state("param", recurse,
                                                             trainable_only=trainable_only)))

    def trainable_parameters(self) -> dict:
        """The parameters that are not frozen, as a nested dict.

        Example:
            >>> from ember import nn
            >>> m = nn.Linear(2, 1).freeze("bias")
            >>> sorted(m.trainable_parameters())
            ['weight']
        """
        return ParameterView(self, lambda: self._param_tree(True, trainable_only=True))

    def buffers(self, recurse: bool = True) -> dict:
        """All buffers as a nested dict (a pytree).

        Example:
            >>> from ember import nn
            >>> sorted(nn.BatchNorm1d(3).buffers())
            ['num_batches_tracked', 'running_mean', 'running_var']
        """
        return unflatten_names(OrderedDict(self._named_state("buffer", recurse)))

    def num_parameters(self, trainable_only: bool = False) -> int:
        """The number of scalar parameters.

        Example:
            >>> from ember import nn
            >>> nn.Linear(3, 2).num_parameters()
            8
        """
        return int(sum(int(np.prod(v.shape)) for _, v in
                       self._named_state("param", True, trainable_only=trainable_only)))

    def _module_at(self, path: str):
        m = self
        if path:
            for p in path.split("."):
                nxt = m._registries()[2].get(p)
                if nxt is None:
                    raise KeyError(f"{type(self).__name__} has no submodule {path!r}")
                m = nxt
        return m

    def get_submodule(self, target: str):
        """The submodule at dotted path `target` ("" is the module itself).

        Example:
            >>> from ember import nn
            >>> type(nn.Sequential(nn.Linear(1, 1)).get_submodule("0")).__name__
            'Linear'
        """
        return self._module_at(target)

    def _slot(self, name: str):
        mpath, _, leaf = name.rpartition(".")
        return self._module_at(mpath), leaf

    def _tie_groups(self, kind: str = "param") -> dict:
        """{dotted name: every dotted name of the slots tied to it, first name first}
        for the tied parameters (or buffers) of this tree; untied names are absent."""
        if not any(m.__dict__.get("_tied") for m in self.modules()):
            return {}
        by_key = OrderedDict()
        # every name, a shared submodule's too, so that any spelling of a slot is found
        for mname, m in self.named_modules(remove_duplicate=False):
            for n, v in (m._parameters if kind == "param" else m._buffers).items():
                key = _tie_key(m, n, v) if v is not None else None
                if key is not None:
                    by_key.setdefault(key, []).append(f"{mname}.{n}" if mname else n)
        return {name: tuple(names) for names in by_key.values() if len(names) > 1 for name in names}

    def _expand_tied(self, flat, what: str) -> "OrderedDict":
        """`flat` (dotted name -> value) with each value given for a tied parameter or
        buffer also under the names of its other slots, so the tie holds in the swapped
        state; several different values for one tied array raise a ValueError."""
        groups = {**self._tie_groups("param"), **self._tie_groups("buffer")}
        if not groups:
            return flat
        out = OrderedDict(flat)
        for name, v in flat.items():
            for other in groups.get(name, ()):
                if other in flat and flat[other] is not v:
                    raise ValueError(
                        f"{what}: got different values for {name!r} and {other!r}, which are one "
                        f"tied parameter of {type(self).__name__} ({', '.join(groups[name])}); pass "
                        f"it under one name (parameters() lists it under {groups[name][0]!r})")
                out[other] = v
        return out

    # --- state -----------------------------------------------------------------------

    def state_dict(self, prefix: str = "", keep_vars: bool = False) -> "OrderedDict[str, Array]":
        """Parameters and persistent buffers by dotted name (PyTorch's layout and names).
        A submodule registered under several names appears under each of them.

        Example:
            >>> from ember import nn
            >>> list(nn.Linear(2, 2).state_dict())
            ['weight', 'bias']
        """
        out = OrderedDict()
        # A submodule registered under two names is listed under both, as in PyTorch, so a
        # checkpoint holds every name a loader of either layout looks for.
        for mname, m in self.named_modules(prefix=prefix.rstrip("."), remove_duplicate=False):
            for kind in (0, 1):
                reg = m._registries()[kind]
                for n, v in reg.items():
                    if v is None or (kind == 1 and n in m._non_persistent):
                        continue
                    out[f"{mname}.{n}" if mname else n] = v
        return out

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Load parameters and persistent buffers by dotted name (values may be ember
        arrays, numpy arrays or anything with `__array__`, e.g. torch tensors).

        Values are cast to the dtype of the entry they replace (unless `assign`).
        Shape mismatches always raise, listing every offending name; with `strict`,
        missing and unexpected keys raise too.  Returns `(missing_keys, unexpected_keys)`.

        Example:
            >>> from ember import nn
            >>> a, b = nn.Linear(2, 2), nn.Linear(2, 2)
            >>> b.load_state_dict(a.state_dict())
            IncompatibleKeys(missing_keys=[], unexpected_keys=[])
        """
        if not isinstance(state_dict, dict):
            raise TypeError(f"load_state_dict expects a dict, got {type(state_dict).__name__}")
        own = self.state_dict()
        flat = OrderedDict()
        for k, v in state_dict.items():
            if isinstance(v, dict):
                for kk, vv in flatten_names(v, f"{k}.").items():
                    flat[kk] = vv
            else:
                flat[k] = v
        missing = [k for k in own if k not in flat]
        unexpected = [k for k in flat if k not in own]
        errors = []
        if strict and (missing or unexpected):
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected))
            if missing:
                errors.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing))
        new = {}
        for k, cur in own.items():
            if k not in flat:
                continue
            v = flat[k]
            if not _is_array(v):
                v = serialization._to_numpy(v, k)  # a numpy view of torch tensors, bfloat16 too
            vshape = tuple(v.shape)
            if vshape != tuple(cur.shape):
                errors.append(f'size mismatch for {k}: copying a param with shape {vshape} from '
                              f'checkpoint, the shape in current model is {tuple(cur.shape)}.')
                continue
            v = enp.asarray(v)
            if not assign and get_aval(v).dtype != get_aval(cur).dtype:
                v = enp.astype(v, get_aval(cur).dtype)
            new[k] = v
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        # a tied array takes the last value given under any of its names, in every slot,
        # as PyTorch's copies into the one shared tensor do
        groups = {**self._tie_groups("param"), **self._tie_groups("buffer")}
        for k, v in new.items():
            for name in groups.get(k, (k,)):
                m, leaf = self._slot(name)
                reg = m._parameters if leaf in m._parameters else m._buffers
                reg[leaf] = v
        return IncompatibleKeys(missing, unexpected)

    def load_parameters(self, params: dict, include_frozen: bool = False) -> None:
        """Write a nested dict of parameters (shaped like `parameters()`, or a subset of
        it) back into the module.  Frozen parameters are left unchanged unless
        `include_frozen`, so an optimiser stepping every parameter cannot move them.
        This is the write-back half of the protocol `ember.optim` uses.

        Example:
            >>> import ember.numpy as enp
            >>> from ember import nn
            >>> m = nn.Linear(1, 1)
            >>> m.load_parameters({"bias": enp.zeros(1)}); m.bias.tolist()
            [0.0]
        """
        self._write("param", params, include_frozen)

    _set_parameters = load_parameters

    def load_buffers(self, buffers: dict) -> None:
        """Write a nested dict of buffers (shaped like `buffers()`, or a subset) back.

        Example:
            >>> import ember.numpy as enp
            >>> from ember import nn
            >>> bn = nn.BatchNorm1d(2); bn.load_buffers({"running_mean": enp.ones(2)})
            >>> bn.running_mean.tolist()
            [1.0, 1.0]
        """
        self._write("buffer", buffers, True)

    def _write(self, kind, tree, include_frozen):
        flat = flatten_names(tree) if isinstance(tree, dict) else tree
        groups = self._tie_groups(kind)  # a tied array's new value goes into all its slots
        for name, v in list(flat.items()):
            for other in groups.get(name, (name,)):
                self._write_slot(kind, other, v, include_frozen)

    def _write_slot(self, kind, name, v, include_frozen):
        m, leaf = self._slot(name)
        reg = m._parameters if kind == "param" else m._buffers
        if leaf not in reg:
            raise KeyError(f"{type(self).__name__} has no {'parameter' if kind == 'param' else 'buffer'} "
                           f"{name!r}")
        if kind == "param" and leaf in m._frozen and not include_frozen:
            return
        cur = reg[leaf]
        if cur is not None and _is_array(v) and tuple(v.shape) != tuple(cur.shape):
            raise ValueError(f"{name}: new value has shape {tuple(v.shape)}, expected {tuple(cur.shape)}")
        reg[leaf] = v

    # --- modes -----------------------------------------------------------------------

    def train(self, mode: bool = True):
        """Set training mode (dropout active, BatchNorm uses and updates batch
        statistics) on this module and all below it; returns self.

        Example:
            >>> from ember import nn
            >>> nn.Dropout().train(False).training
            False
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        """Evaluation mode (`train(False)`); returns self.

        Example:
            >>> from ember import nn
            >>> nn.BatchNorm1d(2).eval().training
            False
        """
        return self.train(False)

    def freeze(self, *names: str):
        """Freeze parameters: all of them, or those at the given dotted names or below
        the given submodule paths.  Frozen parameters get no gradient from
        `nn.value_and_grad`/`TrainStep` and are never moved by an optimiser.

        Example:
            >>> from ember import nn
            >>> m = nn.Linear(2, 2).freeze()
            >>> m.num_parameters(trainable_only=True)
            0
        """
        self._set_frozen(names, True)
        return self

    def unfreeze(self, *names: str):
        """Undo `freeze` (for all parameters, or the given names/submodules).

        Example:
            >>> from ember import nn
            >>> nn.Linear(2, 2).freeze().unfreeze().num_parameters(trainable_only=True)
            6
        """
        self._set_frozen(names, False)
        return self

    def requires_grad_(self, requires_grad: bool = True):
        """PyTorch's spelling of `unfreeze()` / `freeze()`.

        Example:
            >>> from ember import nn
            >>> nn.Linear(2, 2).requires_grad_(False).num_parameters(trainable_only=True)
            0
        """
        return self.unfreeze() if requires_grad else self.freeze()

    def _set_frozen(self, names, flag):
        targets = []
        if not names:
            targets = [(m, n) for _, m in self.named_modules() for n in m._parameters]
        else:
            all_params = dict(self.named_parameters(remove_duplicate=False))
            for name in names:
                if name in all_params:
                    targets.append(self._slot(name))
                    continue
                sub = self._module_at(name)
                targets += [(m, n) for _, m in sub.named_modules() for n in m._parameters]
        # a tied parameter is one parameter (PyTorch's requires_grad lives on it): freezing
        # it through one of its slots freezes all of them
        groups = self._tie_groups("param")
        if groups:
            slot_names = {(id(m), n): name for name, _ in self.named_parameters(remove_duplicate=False)
                          for m, n in [self._slot(name)]}
            for m, n in list(targets):
                targets += [self._slot(o) for o in groups.get(slot_names.get((id(m), n)), ())]
        for m, n in targets:
            (m._frozen.add if flag else m._frozen.discard)(n)

    def is_frozen(self, name: str) -> bool:
        """Whether the parameter at dotted `name` is frozen.

        Example:
            >>> from ember import nn
            >>> nn.Linear(1, 1).freeze("bias").is_frozen("bias")
            True
        """
        m, leaf = self._slot(name)
        return leaf in m._frozen

    def frozen_mask(self) -> dict:
        """A nested dict shaped like `parameters()` with True for frozen parameters.

        Example:
            >>> from ember import nn
            >>> nn.Linear(1, 1).freeze("bias").frozen_mask()
            {'weight': False, 'bias': True}
        """
        out = OrderedDict()
        for name, _ in self.named_parameters():
            m, leaf = self._slot(name)
            out[name] = leaf in m._frozen
        return unflatten_names(out)

    def apply(self, fn):
        """Call `fn(module)` on every submodule (children first) and on self; returns self.

        Example:
            >>> from ember import nn
            >>> seen = []
            >>> _ = nn.Sequential(nn.ReLU()).apply(lambda m: seen.append(type(m).__name__))
            >>> seen
            ['ReLU', 'Sequential']
        """
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def to(self, *args, device=None, dtype=None):
        """Move parameters and buffers to `device` and/or cast the floating-point ones
        to `dtype` (positional arguments may be either); returns self.

        Example:
            >>> from ember import nn
            >>> nn.Linear(1, 1).to("float64").weight.dtype
            dtype('float64')
        """
        for a in args:
            if isinstance(a, Device) or (isinstance(a, str) and (":" in a or a in ("cpu", "cuda", "gpu", "reference"))):
                device = a
            else:
                dtype = a
        dt = _dt.canonicalize(dtype) if dtype is not None else None
        if dt is not None and not _dt.is_inexact(dt):
            raise TypeError(f"Module.to only accepts floating point dtypes, got {dt}")
        done = {}  # id -> (array, converted): a tied array stays one array in all its slots
        for _, m in self.named_modules():
            for reg in (m._parameters, m._buffers):
                for n, v in list(reg.items()):
                    if v is None:
                        continue
                    hit = done.get(id(v))
                    if hit is None or hit[0] is not v:
                        new = v
                        if dt is not None and _dt.is_float(get_aval(v).dtype):
                            new = enp.astype(new, dt)
                        if device is not None:
                            new = device_put(new, device)
                        hit = done[id(v)] = (v, new)
                    reg[n] = hit[1]
        return self

    def cuda(self, device=None):
        """Move parameters and buffers to a GPU (`device`: an index, a Device or a
        name; default the first GPU); returns self.  Without a GPU this raises, naming
        the devices there are (PyTorch's `module.cuda()`).

        Example:
            >>> from ember import nn
            >>> try:
            ...     nn.Linear(1, 1).cuda()
            ... except RuntimeError as e:
            ...     print("not available" in str(e))
            True
        """
        if device is None:
            device = "cuda"
        elif isinstance(device, int):
            device = f"cuda:{device}"
        return self.to(device=device)

    def cpu(self):
        """Move parameters and buffers to the CPU; returns self.

        Example:
            >>> from ember import nn
            >>> nn.Linear(1, 1).cpu().weight.device
            cpu:0
        """
        return self.to(device="cpu")

    def float(self):
        """Cast floating-point parameters and buffers to float32.

        Example:
            >>> from ember import nn
            >>> nn.Linear(1, 1).double().float().weight.dtype
            dtype('float32')
        """
        return self.to(dtype=_dt.float32)

    def double(self):
        """Cast floating-point parameters and buffers to float64.

        Example:
            >>> from ember import nn
            >>> nn.Linear(1, 1).double().weight.dtype
            dtype('float64')
        """
        return self.to(dtype=_dt.float64)

    def half(self):
        """Cast floating-point parameters and buffers to float16.

        Example:
            >>> from ember import nn
            >>> nn.Linear(1, 1).half().weight.dtype
            dtype('float16')
        """
        return self.to(dtype=_dt.float16)

    def bfloat16(self):
        """Cast floating-point parameters and buffers to bfloat16.

        Example:
            >>> from ember import nn
            >>> str(nn.Linear(1, 1).bfloat16().weight.dtype)
            'bfloat16'
        """
        return self.to(dtype=_dt.bfloat16)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Does nothing: ember gradients are returned values, never stored on modules.

        Example:
            >>> from ember import nn
            >>> nn.Linear(1, 1).zero_grad()
        """
        return None

    # --- randomness ------------------------------------------------------------------

    def set_rng(self, key):
        """Give this module its own key: eager forward passes (and `nn.value_and_grad`,
        `TrainStep`) split it for dropout instead of using the global seed.  Accepts a
        key or an int seed; returns self.  The key of the module called at top level is
        the one used (a child's own key is ignored when its parent is called).

        Example:
            >>> from ember import nn, random
            >>> m = nn.Dropout(0.5).set_rng(random.key(1))
            >>> m.get_rng().shape
            (2,)
        """
        if isinstance(key, (int, np.integer)):
            key = random.key(int(key))
        key = random._check_key(key, "set_rng")
        if isinstance(key, Tracer):
            raise TypeError("set_rng needs a concrete key, not a traced value")
        object.__setattr__(self, "_rng_key", key)
        return self

    def get_rng(self):
        """This module's key (None when it uses the global seed).

        Example:
            >>> from ember import nn
            >>> nn.Linear(1, 1).get_rng() is None
            True
        """
        return self.__dict__.get("_rng_key")

    def _next_step_key(self):
        """A key for one training step, split eagerly from this module's key (or the
        global key); advances the stored key."""
        with set_current_trace(eval_trace()):
            return _draw_eager_key(self)

    # --- calling ---------------------------------------------------------------------

    def forward(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} has no forward(); define forward(self, ...) "
                        f"in the subclass")

    def __call__(self, *args, **kwargs):
        scope = _SCOPE.get()
        if scope is not None and id(self) in scope:
            return _call_forward(self, args, kwargs)
        # A top-level call (or a module outside the tree being run): guard its tree so
        # a transform cannot leave a tracer in it, and give the pass an RNG stream
        # (lazily drawn from this module's key).
        if _captured.is_recording():  # a jit trace reads this module's state as constants
            _captured.note(_StateGuard(self))
        snapshot = _snapshot(self)
        stream_token = _STREAM.set(_Stream(source=self)) if _STREAM.get() is None else None
        scope_token = _SCOPE.set(_scope_ids(self, scope))
        ok = False
        try:
            out = _call_forward(self, args, kwargs)
            leaked = [name for name, v in _state_items(self) if isinstance(v, Tracer)]
            if leaked:
                raise RuntimeError(
                    f"{type(self).__name__}: the forward pass wrote traced values into module "
                    f"state ({', '.join(leaked)}), e.g. BatchNorm running statistics in training "
                    f"mode under a transform. The state was restored. Use "
                    f"nn.functional_call(model, state, *args), which returns the updated buffers, "
                    f"or nn.TrainStep / nn.value_and_grad; or call model.eval().")
            ok = True
            return out
        finally:
            if not ok:
                _restore(snapshot)
            _SCOPE.reset(scope_token)
            if stream_token is not None:
                _STREAM.reset(stream_token)

    def __ember_jit__(self, static_argnums=(), static_argnames=(), backend=None):
        """`ember.jit(model)`: a compiled forward pass that reads the module's current
        parameters and buffers on every call (`nn.compile_forward`).

        Example:
            >>> import ember, ember.numpy as enp
            >>> from ember import nn
            >>> ember.jit(nn.Linear(2, 1))(enp.ones((3, 2))).shape
            (3, 1)
        """
        if static_argnums or static_argnames:
            raise TypeError(f"ember.jit({type(self).__name__}): static arguments are not supported "
                            f"for a module; use ember.jit(lambda p, x, n: nn.functional_call(model, "
                            f"p, x, n), static_argnums=2) with the parameters as an argument")
        from .train import compile_forward
        return compile_forward(self, backend=backend)

    # --- saving ------------------------------------------------------------------------

    def save(self, path) -> None:
        """Save `state_dict()` to a safetensors file (see `ember.save`).

        Example:
            >>> import tempfile, os
            >>> from ember import nn
            >>> p = os.path.join(tempfile.mkdtemp(), "m.safetensors"); nn.Linear(2, 2).save(p)
        """
        serialization.save(path, dict(self.state_dict()))

    def load(self, path, strict: bool = True):
        """Load a state saved by `save` (or any safetensors file with matching names);
        returns `(missing_keys, unexpected_keys)` as `load_state_dict` does.

        Example:
            >>> import tempfile, os
            >>> from ember import nn
            >>> p = os.path.join(tempfile.mkdtemp(), "m.safetensors")
            >>> a = nn.Linear(2, 2); a.save(p); b = nn.Linear(2, 2); _ = b.load(p)
            >>> b.weight.tolist() == a.weight.tolist()
            True
        """
        sd = serialization.load(path)
        return self.load_state_dict(flatten_names(sd) if isinstance(sd, dict) else sd, strict=strict)

    # --- printing ---------------------------------------------------------------------

    def extra_repr(self) -> str:
        """Override to describe the module's config in `repr` (one line)."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for name, m in self._registries()[2].items():
            text = repr(m) if m is not None else "None"
            text = text.replace("\n", "\n  ")
            lines.append(f"({name}): {text}")
        if not self._modules and len(lines) <= 1:  # PyTorch: one config line stays inline
            return f"{self._get_name()}({extra})"
        body = "\n  ".join(lines)
        return f"{self._get_name()}(\n  {body}\n)"

    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state):
        self.__dict__.update(state)
        _track(self)  # copies and unpickled modules are found by nn.init too
        for reg in (self.__dict__.get("_parameters"), self.__dict__.get("_buffers")):
            if isinstance(reg, _Slots):
                reg._owner = weakref.ref(self)
                for v in reg.values():
                    _note_holder(v, self)


# functional_call needs Module: imported once the class exists, re-exported from here
from .stateless import _merge_state, _swapped, functional_call  # noqa: E402,F401
