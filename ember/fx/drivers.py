"""Drivers of higher-order primitives: the host loop that runs a cond, while_loop,
scan or call of a sub-graph, given a callback that turns each body into a
callable.  The reference impls interpret the bodies (`interpret`); a native
backend passes its own compiler, so the control flow is written once.

Example:
    >>> import ember, numpy as np
    >>> from ember import lax
    >>> g = ember.make_graph(lambda c: ember.while_loop(lambda v: lax.lt(v, 10.0),
    ...                                                  lambda v: lax.mul(v, 2.0), c))(1.0)
    >>> eq = next(e for e in g.equations if e.prim.name == "while_loop")
    >>> [float(v) for v in driver(eq.prim, eq.params, interpret)(np.float32(1.0))]
    [16.0]
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .core import Primitive
from .interpreter import run_graph_numpy

# primitive -> make(params, compile) -> run(*values) -> list of results
DRIVERS: dict[Primitive, Callable] = {}


def register_driver(prim: Primitive, make: Callable, reference_impl: bool = True):
    """Run `prim` through the driver `make` on every backend; with
    `reference_impl`, its numpy impl is the driver over interpreted bodies.

    Example:
        >>> p = Primitive("my_call", multiple_results=True)
        >>> register_driver(p, call_driver("graph"))
        >>> p in DRIVERS and p.impl is not None
        True
        >>> del DRIVERS[p]
    """
    DRIVERS[prim] = make
    if reference_impl:
        prim.impl = lambda *vals, **params: make(params, interpret)(*vals)


def driver(prim: Primitive, params: dict, compile: Callable, xp=None):
    """A callable(*values) -> results running `prim` with bodies made by
    `compile(closed_graph)`, or None when `prim` has no sub-graphs to drive.
    `xp` is the array namespace of the values (numpy by default; a GPU backend
    passes CuPy so that carries and stacked outputs stay on the device).

    Example:
        >>> driver(Primitive("no_driver"), {}, interpret) is None
        True
    """
    make = DRIVERS.get(prim)
    if make is None:
        return None
    return make(params, compile) if xp is None else make(params, compile, xp=xp)


def interpret(closed) -> Callable:
    """The reference `compile`: the body evaluated equation by equation with the
    primitives' numpy impls.  Like every `compile` result (a native executable),
    it returns a list of arrays (the impls may give numpy or Python scalars).

    Example:
        >>> import ember, numpy as np
        >>> from ember import lax
        >>> g = ember.make_graph(lambda x: lax.neg(x))(np.ones(2, np.float32))
        >>> interpret(g)(np.ones(2, np.float32))[0].tolist()
        [-1.0, -1.0]
    """
    graph = closed.graph
    return lambda *vals: [np.asarray(o) for o in run_graph_numpy(graph, [], vals)]


def call_driver(key: str) -> Callable:
    """The driver of a primitive that calls the sub-graph in `params[key]` once.

    Example:
        >>> make = call_driver("graph")
    """
    def make(params, compile, xp=None):
        return compile(params[key])
    return make


def switch_driver(params, compile, xp=np):
    """cond/switch: the branch the clamped index selects."""
    branches = [compile(b) for b in params["branches"]]
    last = len(branches) - 1

    def run(index, *ops):
        # int() reads a rank-0 device array too (one transfer)
        i = min(max(int(index), 0), last)
        return branches[i](*ops)
    return run


def while_driver(params, compile, xp=np):
    """while_loop: the body while the condition holds."""
    cond, body = compile(params["cond_graph"]), compile(params["body_graph"])
    nc, nb = params["cond_nconsts"], params["body_nconsts"]

    def run(*vals):
        cc, bc, carry = list(vals[:nc]), list(vals[nc:nc + nb]), list(vals[nc + nb:])
        while bool(cond(*cc, *carry)[0]):
            carry = body(*bc, *carry)
        return [xp.asarray(c) for c in carry]
    return run


def scan_driver(params, compile, xp=np):
    """scan: the body once per row of the scanned inputs, stacking the outputs."""
    body = compile(params["body"])
    nc, nk, length, reverse = params["num_consts"], params["num_carry"], params["length"], params["reverse"]
    y_avals = params["body"].out_avals[nk:]

    def run(*vals):
        consts, carry = list(vals[:nc]), list(vals[nc:nc + nk])
        xs = [xp.asarray(x) for x in vals[nc + nk:]]
        ys = [xp.empty((length,) + a.shape, dtype=a.dtype) for a in y_avals]
        for i in (range(length - 1, -1, -1) if reverse else range(length)):
            outs = body(*consts, *carry, *[x[i] for x in xs])
            carry = outs[:nk]
            for y, o in zip(ys, outs[nk:]):
                y[i] = o
        return [xp.asarray(c) for c in carry] + ys
    return run
