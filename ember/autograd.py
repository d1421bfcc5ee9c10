"""`ember.autograd.Function`: PyTorch-style custom gradients on top of `custom_vjp`.

Subclass with static `forward(ctx, *args)` and `backward(ctx, *grads)`, save
arrays with `ctx.save_for_backward(...)`, stash Python values as attributes of
`ctx`, and call `MyFunction.apply(*args)`.  Because it is a `custom_vjp`
underneath, it composes with `grad` (any order), `vmap` and `jit`.

Example:
    >>> import ember, ember.numpy as enp
    >>> class Square(Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 2.0 * x * g
    >>> float(ember.grad(Square.apply)(3.0))
    6.0
"""
from __future__ import annotations

import inspect

from .transforms.custom_derivatives import custom_vjp
from .tree import register_pytree_node


class FunctionCtx:
    """The `ctx` passed to `forward` and `backward`."""

    def __init__(self):
        self.saved_tensors = ()

    def save_for_backward(self, *arrays):
        """Keep arrays for `backward` (available there as `ctx.saved_tensors`)."""
        self.saved_tensors = tuple(arrays)

    def mark_non_differentiable(self, *outputs):
        """Accepted for PyTorch compatibility: outputs' cotangents are simply unused."""


class _Static:
    """Python values set on ctx in forward travel as static pytree metadata."""

    def __init__(self, attrs):
        self.attrs = attrs


register_pytree_node(_Static, lambda s: ((), tuple(sorted(s.attrs.items()))),
                     lambda aux, children: _Static(dict(aux)))


class Function:
    """Base class for custom differentiable operations (see the module docstring)."""

    @staticmethod
    def forward(ctx, *args):  # pragma: no cover - overridden
        raise TypeError("subclasses of ember.autograd.Function must define forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grads):  # pragma: no cover - overridden
        raise TypeError("subclasses of ember.autograd.Function must define backward(ctx, *grads)")

    @classmethod
    def _vjp_function(cls):
        fn = cls.__dict__.get("_ember_custom_vjp")
        if fn is not None:
            return fn

        def primal(*args):
            return cls.forward(FunctionCtx(), *args)

        def fwd(*args):
            ctx = FunctionCtx()
            out = cls.forward(ctx, *args)
            attrs = {k: v for k, v in vars(ctx).items() if k != "saved_tensors"}
            return out, (tuple(ctx.saved_tensors), _Static(attrs))

        def bwd(res, g):
            saved, static = res
            ctx = FunctionCtx()
            ctx.saved_tensors = saved
            for k, v in static.attrs.items():
                setattr(ctx, k, v)
            grads = cls.backward(ctx, *(g if isinstance(g, tuple) else (g,)))
            return grads if isinstance(grads, tuple) else (grads,)

        primal.__name__ = cls.__name__
        try:  # forward's signature without ctx, so errors name the user's arguments
            sig = inspect.signature(cls.forward)
            primal.__signature__ = sig.replace(parameters=list(sig.parameters.values())[1:])
        except (TypeError, ValueError):
            pass
        # errors about what they return name the user's methods, not these adapters
        fwd.__wrapped__ = cls.forward
        bwd.__wrapped__ = cls.backward
        fn = custom_vjp(primal)
        fn.defvjp(fwd, bwd)
        setattr(cls, "_ember_custom_vjp", fn)
        return fn

    @classmethod
    def apply(cls, *args):
        """Run the operation; differentiating it calls `backward`."""
        return cls._vjp_function()(*args)
