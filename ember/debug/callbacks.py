"""`ember.debug.print` / `callback` / `print_grad`: host calls with concrete values
at execution time, eagerly, under jit, vmap, grad and inside loop bodies.

Example:
    >>> import ember, ember.numpy as enp
    >>> @ember.jit
    ... def f(x):
    ...     ember.debug.print("x = {}", x)
    ...     return x * 2.0
    >>> _ = f(enp.asarray([1.0, 2.0]))
    x = [1. 2.]
"""
from __future__ import annotations

import builtins
import sys

import numpy as np

from ..fx.prims.callback import debug_callback
from ..tree import tree_flatten, tree_unflatten


def _leaves(where: str, args, kwargs):
    leaves, tree = tree_flatten((tuple(args), dict(kwargs)))
    for i, x in enumerate(leaves):
        if not (hasattr(x, "aval") or isinstance(x, (bool, int, float, complex, np.ndarray, np.generic))):
            raise TypeError(f"{where}: argument leaf {i} is a {type(x).__name__}, not an array or a "
                            f"number; pass non-array values through the Python function itself "
                            f"(functools.partial or a closure)")
    return leaves, tree


def callback(fn, *args, ordered: bool = False, vmap_method: str = "batched", **kwargs):
    """Call `fn(*args, **kwargs)` with concrete ember arrays when the program runs.

    Under `jit` the call is a host step of the compiled program; under `vmap` `fn`
    is called once with the batched values (batch axis first), or once per example
    in order with `vmap_method="sequential"` (JAX's default); under `grad` it runs
    in the forward pass; inside `scan` / `while_loop` bodies on every iteration.
    Callbacks always run in program order (`ordered` is accepted for JAX
    compatibility: ember never reorders them).  `fn`'s return value is ignored.

    Example:
        >>> import ember, ember.numpy as enp
        >>> seen = []
        >>> ember.jit(lambda x: (ember.debug.callback(seen.append, x), x + 1.0)[1])(enp.asarray(2.0))
        Array(3., dtype=float32)
        >>> [float(v) for v in seen]
        [2.0]
    """
    if not callable(fn):
        raise TypeError(f"ember.debug.callback: the first argument must be callable, got a "
                        f"{type(fn).__name__}")
    leaves, tree = _leaves("ember.debug.callback", args, kwargs)

    def host(*vals):
        from ..array import wrap_buffer
        a, kw = tree_unflatten(tree, [wrap_buffer(v) for v in vals])
        fn(*a, **kw)

    host.__name__ = getattr(fn, "__name__", "callback").replace("<", "").replace(">", "")
    debug_callback(host, *leaves, vmap_method=vmap_method)


def print(fmt: str, *args, ordered: bool = False, vmap_method: str = "batched", **kwargs) -> None:  # noqa: A001
    """`print(fmt.format(*args, **kwargs))` with concrete values, when the program runs.

    The values are numpy arrays (0-d ones numpy scalars), so `{:.3f}` works on
    scalars.  Runs where `ember.debug.callback` does (see there; `vmap_method`
    too).

    Example:
        >>> import ember, ember.numpy as enp
        >>> ember.vmap(lambda x: ember.debug.print("batch {}", x) or x)(enp.arange(3.0)).shape
        batch [0. 1. 2.]
        (3,)
    """
    if not isinstance(fmt, str):
        raise TypeError(f"ember.debug.print: the format must be a str, got a {type(fmt).__name__}")
    leaves, tree = _leaves("ember.debug.print", args, kwargs)

    def show(*vals):
        a, kw = tree_unflatten(tree, [v[()] if v.ndim == 0 else v for v in vals])
        # sys.stdout read at call time: a redirected stdout (capsys, contextlib) gets the text
        builtins.print(fmt.format(*a, **kw), file=sys.stdout)

    show.__name__ = "debug_print"
    debug_callback(show, *leaves, vmap_method=vmap_method)


def print_grad(fmt: str, x):
    """`x` unchanged; the backward pass prints its cotangent with `fmt.format(ct)`.

    Example:
        >>> import ember, ember.numpy as enp
        >>> ember.grad(lambda x: enp.sin(ember.debug.print_grad("ct = {:.2f}", x * 3.0)))(0.0)
        ct = 1.00
        Array(3., dtype=float32)
    """
    from ..transforms.custom_derivatives import custom_vjp

    @custom_vjp
    def ident(v):
        return v

    def fwd(v):
        return v, None

    def bwd(_, ct):
        print(fmt, ct)
        return (ct,)

    ident.defvjp(fwd, bwd)
    return ident(x)
