"""Module hooks with PyTorch's semantics: forward pre-hooks and forward hooks
(which may replace a module's inputs / output), and full backward (pre-)hooks that
see, and may replace, the gradients flowing through a module.

Forward hooks run in Python around `forward`.  Backward hooks work the way
PyTorch's do, by identity functions on the module's boundary: the floating-point
array arguments and the array outputs of a hooked call pass through
`ember.custom_vjp` identities whose backward rule calls the hooks, so they run in
the backward pass of `ember.grad` / `value_and_grad` / `vjp`, and the module's
parameter gradients are untouched unless a hook changes the input gradients.
There is no host callback in ember: under `ember.jit` (and inside `nn.TrainStep`)
every hook runs *once per compile*, while the program is traced, and sees tracers
(shapes and dtypes, not values); whatever it returns is compiled into the
program.  A hook that records values should run eagerly.  Forward-mode
differentiation (`ember.jvp`, `jacfwd`) of a module with backward hooks raises,
as it does for any `custom_vjp` function.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> m = nn.Linear(2, 2)
    >>> seen = []
    >>> h = m.register_forward_hook(lambda mod, args, out: seen.append(out.shape))
    >>> _ = m(enp.ones((3, 2))); h.remove(); _ = m(enp.ones((1, 2)))
    >>> seen
    [(3, 2)]
"""
from __future__ import annotations

import itertools
import warnings
import weakref
from collections import OrderedDict

from .. import dtypes as _dt
from ..array import Array
from ..fx.core import Tracer, get_aval

__all__ = ["RemovableHandle", "HookMixin", "register_module_forward_pre_hook",
           "register_module_forward_hook", "register_module_full_backward_pre_hook",
           "register_module_full_backward_hook", "grad_hook"]

_ids = itertools.count()


class RemovableHandle:
    """What every `register_*_hook` returns: `remove()` takes the hook out (again is
    a no-op); as a context manager it removes the hook on exit.

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> m, calls = nn.ReLU(), []
        >>> with m.register_forward_pre_hook(lambda mod, args: calls.append(1)):
        ...     _ = m(enp.ones(2))
        >>> _ = m(enp.ones(2)); calls
        [1]
    """

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.id = next(_ids)
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        extras = extra_dict if isinstance(extra_dict, (list, tuple)) else (
            [] if extra_dict is None else [extra_dict])
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self) -> None:
        """Remove the hook (and its flags); removing twice does nothing.

        Example:
            >>> from ember import nn
            >>> h = nn.ReLU().register_forward_hook(lambda m, a, o: None); h.remove(); h.remove()
        """
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

    def __repr__(self):
        return f"RemovableHandle(id={self.id})"


class _HookSet:
    """One owner's hooks (a module's, or the global ones), each kind in call order.
    Flags (`with_kwargs`, `always_call`) are dicts keyed by hook id, as in PyTorch,
    so a handle removes the hook and its flags together."""
    __slots__ = ("forward_pre", "forward", "backward_pre", "backward", "pre_kwargs", "fwd_kwargs",
                 "always_call", "__weakref__")

    def __init__(self):
        for name in self.__slots__[:-1]:
            setattr(self, name, OrderedDict())

    def empty(self) -> bool:
        return not (self.forward_pre or self.forward or self.backward_pre or self.backward)


_GLOBAL = _HookSet()


def _add(hooks: OrderedDict, hook, prepend: bool, flags=()):
    if not callable(hook):
        raise TypeError(f"a hook must be callable, got {type(hook).__name__}")
    handle = RemovableHandle(hooks, extra_dict=[d for d, on in flags])
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    for d, on in flags:
        if on:
            d[handle.id] = True
    return handle


def register_module_forward_pre_hook(hook) -> RemovableHandle:
    """A forward pre-hook for every module (runs before each module's own ones).

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> names = []
        >>> with nn.register_module_forward_pre_hook(lambda m, a: names.append(type(m).__name__)):
        ...     _ = nn.Sequential(nn.ReLU())(enp.ones(1))
        >>> names
        ['Sequential', 'ReLU']
    """
    return _add(_GLOBAL.forward_pre, hook, False)


def register_module_forward_hook(hook, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """A forward hook for every module (runs before each module's own ones).

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> shapes = []
        >>> with nn.register_module_forward_hook(lambda m, a, out: shapes.append(out.shape)):
        ...     _ = nn.Linear(3, 2)(enp.ones((4, 3)))
        >>> shapes
        [(4, 2)]
    """
    return _add(_GLOBAL.forward, hook, False,
                [(_GLOBAL.fwd_kwargs, with_kwargs), (_GLOBAL.always_call, always_call)])


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    """A backward pre-hook for every module: `hook(module, grad_output)`.

    Example:
        >>> import ember, ember.numpy as enp
        >>> from ember import nn
        >>> m, seen = nn.Tanh(), []
        >>> with nn.register_module_full_backward_pre_hook(lambda mod, g: seen.append(len(g))):
        ...     _ = ember.grad(lambda x: m(x).sum())(enp.ones(3))
        >>> seen
        [1]
    """
    return _add(_GLOBAL.backward_pre, hook, False)


def register_module_full_backward_hook(hook) -> RemovableHandle:
    """A full backward hook for every module: `hook(module, grad_input, grad_output)`.

    Example:
        >>> import ember, ember.numpy as enp
        >>> from ember import nn
        >>> m, seen = nn.Tanh(), []
        >>> with nn.register_module_full_backward_hook(lambda mod, gi, go: seen.append(gi[0].shape)):
        ...     _ = ember.grad(lambda x: m(x).sum())(enp.ones(3))
        >>> seen
        [(3,)]
    """
    return _add(_GLOBAL.backward, hook, False)


def _own(module) -> _HookSet:
    d = module.__dict__
    hs = d.get("_ember_hooks")
    if hs is None:
        hs = d["_ember_hooks"] = _HookSet()
    return hs


class HookMixin:
    """The hook-registration methods of `nn.Module` (PyTorch's names and keywords).

    Example:
        >>> from ember import nn
        >>> issubclass(nn.Module, HookMixin)
        True
    """

    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """`hook(module, args)` runs before `forward`; returning something other than
        None replaces the positional arguments (a non-tuple becomes a 1-tuple).  With
        `with_kwargs=True` it is `hook(module, args, kwargs)` and returns None or
        `(args, kwargs)`.  `prepend=True` runs it before the hooks already registered.

        Example:
            >>> import ember.numpy as enp
            >>> from ember import nn
            >>> m = nn.Identity()
            >>> _ = m.register_forward_pre_hook(lambda mod, args: args[0] * 2)
            >>> m(enp.ones(2)).tolist()
            [2.0, 2.0]
        """
        hs = _own(self)
        return _add(hs.forward_pre, hook, prepend, [(hs.pre_kwargs, with_kwargs)])

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """`hook(module, args, output)` runs after `forward` (after the forward
        hooks of every module `forward` called); returning something other than None
        replaces the output.  `with_kwargs=True`: `hook(module, args, kwargs,
        output)`.  `always_call=True` also runs it (with `output=None`) when
        `forward` raises; an error in such a call is reported as a warning and the
        original exception propagates.

        Example:
            >>> import ember.numpy as enp
            >>> from ember import nn
            >>> m = nn.Identity()
            >>> _ = m.register_forward_hook(lambda mod, args, out: out + 1)
            >>> m(enp.zeros(2)).tolist()
            [1.0, 1.0]
        """
        hs = _own(self)
        return _add(hs.forward, hook, prepend,
                    [(hs.fwd_kwargs, with_kwargs), (hs.always_call, always_call)])

    def register_full_backward_pre_hook(self, hook, *, prepend: bool = False) -> RemovableHandle:
        """`hook(module, grad_output)` runs in the backward pass when the gradients
        with respect to the module's outputs are known (`grad_output` is a tuple, one
        entry per output, None for an output that is not a floating-point array);
        returning a tuple replaces them.  Under `jit` it runs at trace time (see the
        `ember.nn.hooks` docstring).

        Example:
            >>> import ember, ember.numpy as enp
            >>> from ember import nn
            >>> m = nn.Identity()
            >>> _ = m.register_full_backward_pre_hook(lambda mod, g: (g[0] * 10,))
            >>> ember.grad(lambda x: m(x).sum())(enp.ones(2)).tolist()
            [10.0, 10.0]
        """
        return _add(_own(self).backward_pre, hook, prepend)

    def register_full_backward_hook(self, hook, *, prepend: bool = False) -> RemovableHandle:
        """`hook(module, grad_input, grad_output)` runs in the backward pass once the
        gradients with respect to the module's positional inputs are known;
        returning a tuple replaces `grad_input`.  `grad_input` has one entry per
        positional argument: the cotangent of each floating-point array argument,
        None for the others, and all None when no input is being differentiated (the
        hook then runs when `grad_output` is known), as in PyTorch.  Under `jit` it
        runs at trace time (see the `ember.nn.hooks` docstring).

        Example:
            >>> import ember, ember.numpy as enp
            >>> from ember import nn
            >>> m = nn.Linear(2, 1)
            >>> _ = m.register_full_backward_hook(lambda mod, gi, go: (enp.zeros_like(gi[0]),))
            >>> ember.grad(lambda x: m(x).sum())(enp.ones((1, 2))).tolist()
            [[0.0, 0.0]]
        """
        return _add(_own(self).backward, hook, prepend)

    def register_backward_hook(self, hook):
        """PyTorch's deprecated non-full backward hook is not provided: its gradients
        depend on the autograd graph's last operation.  Raises a TypeError that names
        the replacement.

        Example:
            >>> from ember import nn
            >>> try:
            ...     nn.ReLU().register_backward_hook(print)
            ... except TypeError as e:
            ...     print(str(e)[:36])
            register_backward_hook is deprecated
        """
        raise TypeError("register_backward_hook is deprecated in PyTorch and not provided by "
                        "ember: use register_full_backward_hook(hook), whose "
                        "hook(module, grad_input, grad_output) sees the gradients of the module's "
                        "inputs and outputs")


def grad_hook(x, hook):
    """The functional form of PyTorch's `tensor.register_hook`: returns `x`
    unchanged, and in the backward pass calls `hook(grad)` with the cotangent
    flowing into `x` (arrays are immutable, so the hook goes on the value that is
    used afterwards); a non-None result replaces the gradient.  Under `jit` it
    runs at trace time.

    Example:
        >>> import ember, ember.numpy as enp
        >>> f = lambda x: (grad_hook(x * 2.0, lambda g: g * 10.0) ** 2).sum()
        >>> ember.grad(f)(enp.ones(2)).tolist()
        [80.0, 80.0]
    """
    from ..transforms.custom_derivatives import custom_vjp
    if not callable(hook):
        raise TypeError(f"grad_hook: the hook must be callable, got {type(hook).__name__}")
    if not _is_float_array(x):
        raise TypeError(f"grad_hook: x must be a floating-point array, got "
                        f"{get_aval(x).str_user() if isinstance(x, (Array, Tracer)) else type(x).__name__}")

    def identity(v):
        return v

    def fwd(v):
        return v, None

    def bwd(_, g):
        res = hook(g)
        return (g if res is None else res,)

    ident = custom_vjp(identity)
    ident.defvjp(fwd, bwd)
    return ident(x)


# --- running a module with its hooks ------------------------------------------------------

def _is_float_array(x) -> bool:
    return isinstance(x, (Array, Tracer)) and _dt.is_inexact(get_aval(x).dtype)


def _sources(module):
    own = module.__dict__.get("_ember_hooks")
    if _GLOBAL.empty():
        return () if own is None or own.empty() else (own,)
    return (_GLOBAL,) if own is None or own.empty() else (_GLOBAL, own)


def call_forward(module, args: tuple, kwargs: dict):
    """`module.forward(*args, **kwargs)` with the module's (and the global) hooks.
    What `Module.__call__` runs; the common case, no hooks, is one dict lookup."""
    own = module.__dict__.get("_ember_hooks")
    if (own is None or own.empty()) and _GLOBAL.empty():
        return module.forward(*args, **kwargs)
    return _call_hooked(module, args, kwargs, _sources(module))


def _call_hooked(module, args, kwargs, sets):
    for hs in sets:
        for hid, hook in list(hs.forward_pre.items()):
            if hid in hs.pre_kwargs:
                res = hook(module, args, kwargs)
                if res is not None:
                    if not (isinstance(res, tuple) and len(res) == 2 and isinstance(res[1], dict)):
                        raise TypeError(f"{type(module).__name__}: a forward pre-hook registered "
                                        f"with with_kwargs=True must return None or a tuple "
                                        f"(new_args, new_kwargs), got {type(res).__name__}")
                    args, kwargs = res
                    args = args if isinstance(args, tuple) else (args,)
            else:
                res = hook(module, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
    backward = any(hs.backward or hs.backward_pre for hs in sets)
    state = None
    if backward:
        state = _BackwardState(module, sets, len(args))
        args = state.wrap_inputs(args)
    called = set()
    try:
        out = module.forward(*args, **kwargs)
        for hs in sets:
            for hid, hook in list(hs.forward.items()):
                called.add((id(hs), hid))
                res = (hook(module, args, kwargs, out) if hid in hs.fwd_kwargs
                       else hook(module, args, out))
                if res is not None:
                    out = res
    except Exception:
        for hs in sets:
            for hid, hook in list(hs.forward.items()):
                if hid not in hs.always_call or (id(hs), hid) in called:
                    continue
                try:
                    hook(module, args, kwargs, None) if hid in hs.fwd_kwargs else hook(module, args, None)
                except Exception as e:  # the forward's own error is the one to report
                    warnings.warn(f"{type(module).__name__}: a forward hook with always_call=True "
                                  f"raised {type(e).__name__}: {e}; it was silenced so that the "
                                  f"forward pass's error propagates", stacklevel=3)
        raise
    if state is not None:
        out = state.wrap_outputs(out)
    return out


class _BackwardState:
    """One hooked call's link between its output boundary (whose backward rule sees
    grad_output first) and its input boundary (which sees grad_input afterwards)."""

    def __init__(self, module, sets, n_args):
        self.module = module
        self.sets = sets
        self.n_args = n_args
        self.arg_index = ()
        self.inputs_differentiated = False
        self.grad_output = None

    def _identity(self, n, fwd_note, bwd_rule):
        from ..transforms.custom_derivatives import custom_vjp

        def boundary(*xs):
            return tuple(xs)

        def fwd(*xs):
            fwd_note()
            return tuple(xs), None

        def bwd(_, cts):
            return bwd_rule(tuple(cts))

        name = type(self.module).__name__
        boundary.__name__ = boundary.__qualname__ = f"{name}_backward_hook_boundary"
        ident = custom_vjp(boundary)
        ident.defvjp(fwd, bwd)
        return ident

    def wrap_inputs(self, args):
        idx = tuple(i for i, a in enumerate(args) if _is_float_array(a))
        self.arg_index = idx
        if not idx:
            return args
        ident = self._identity(len(idx), self._note_inputs, self._input_backward)
        new = ident(*(args[i] for i in idx))
        args = list(args)
        for i, v in zip(idx, new):
            args[i] = v
        return tuple(args)

    def _note_inputs(self):
        self.inputs_differentiated = True

    def wrap_outputs(self, out):
        single = not isinstance(out, tuple)
        items = (out,) if single else out
        idx = tuple(i for i, o in enumerate(items) if _is_float_array(o))
        if not idx:
            return out
        self.out_index, self.n_out = idx, len(items)
        ident = self._identity(len(idx), lambda: None, self._output_backward)
        new = ident(*(items[i] for i in idx))
        items = list(items)
        for i, v in zip(idx, new):
            items[i] = v
        return items[0] if single else type(out)(items) if type(out) is tuple else type(out)(*items)

    def _check(self, what, got, expected_n, hook):
        name = type(self.module).__name__
        if not isinstance(got, (tuple, list)) or len(got) != expected_n:
            n = len(got) if isinstance(got, (tuple, list)) else type(got).__name__
            raise TypeError(f"{name}: a {what} hook ({getattr(hook, '__qualname__', hook)}) must "
                            f"return None or a tuple of {expected_n} gradient(s), one per "
                            f"{'output' if 'pre' in what else 'positional input'}, got {n}")
        return tuple(got)

    def _output_backward(self, cts):
        grad_output = [None] * self.n_out
        for i, c in zip(self.out_index, cts):
            grad_output[i] = c
        grad_output = tuple(grad_output)
        for hs in self.sets:
            for hook in list(hs.backward_pre.values()):
                res = hook(self.module, grad_output)
                if res is not None:
                    grad_output = self._check("full backward pre-", res, self.n_out, hook)
        self.grad_output = grad_output
        if not self.inputs_differentiated:
            # PyTorch runs the full backward hooks here when no input needs a gradient
            self._run_backward_hooks((None,) * self.n_args)
        return tuple(grad_output[i] for i in self.out_index)

    def _run_backward_hooks(self, grad_input):
        grad_output = self.grad_output if self.grad_output is not None else ()
        for hs in self.sets:
            for hook in list(hs.backward.values()):
                res = hook(self.module, grad_input, grad_output)
                if res is not None:
                    grad_input = self._check("full backward", res, self.n_args, hook)
        return grad_input

    def _input_backward(self, cts):
        grad_input = [None] * self.n_args
        for i, c in zip(self.arg_index, cts):
            grad_input[i] = c
        grad_input = self._run_backward_hooks(tuple(grad_input))
        return tuple(grad_input[i] for i in self.arg_index)
