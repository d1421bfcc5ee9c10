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

from typing import Callable, NamedTuple

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
    make.call_key = key   # read by `loop_spec`
    return make


def switch_driver(params, compile, xp=np):
    """cond/switch: the branch the clamped index selects (`SwitchSpec`)."""
    branches = [compile(b) for b in _switch_spec(params).branches]
    last = len(branches) - 1

    def run(index, *ops):
        # int() reads a rank-0 device array too (one transfer)
        i = min(max(int(index), 0), last)
        return branches[i](*ops)
    return run


class ScanSpec(NamedTuple):
    """What a scan does, read from its params: the operands are `num_consts`
    consts, `num_carry` carries and the scanned inputs (xs); `body(consts, carry,
    x_i) -> (carry, y_i)` runs for i = 0 .. length-1 (length-1 .. 0 if `reverse`),
    its y_i stacked along a new leading axis; the results are the final carry and
    the stacked ys.  Every backend's scan (the driver below, the LLVM backend's
    native loops) follows this description."""
    body: object
    num_consts: int
    num_carry: int
    length: int
    reverse: bool


class CallSpec(NamedTuple):
    """A primitive that runs `graph` once (jit_call, remat, custom rules' calls):
    its operands are the graph's inputs and its results the graph's outputs."""
    graph: object


class SwitchSpec(NamedTuple):
    """What cond/switch does: the operands are the index (an integer scalar) and
    the branches' operands; branch ``min(max(index, 0), len(branches) - 1)``
    runs on them and its outputs are the results (cond's false branch is
    branches[0]).

    Example:
        >>> import ember
        >>> g = ember.make_graph(lambda p, x: ember.cond(p, lambda u: u + 1.0, lambda u: u - 1.0, x))(True, 1.0)
        >>> eq = next(e for e in g.equations if e.prim.name == "cond")
        >>> len(loop_spec(eq.prim, eq.params).branches)
        2
    """
    branches: tuple


class WhileSpec(NamedTuple):
    """What a while_loop does: the operands are `cond_nconsts` consts of `cond`,
    `body_nconsts` consts of `body`, then the carries; while `cond(cconsts,
    carry)` (a bool scalar) holds, `carry = body(bconsts, carry)`; the result is
    the final carry (the initial one if the condition is false at once)."""
    cond: object
    body: object
    cond_nconsts: int
    body_nconsts: int


def loop_spec(prim: Primitive, params: dict):
    """The `ScanSpec` / `WhileSpec` of a loop primitive's equation, the
    `SwitchSpec` of cond/switch, the `CallSpec` of a single call of a
    sub-graph, or None for other primitives.

    Example:
        >>> import ember, numpy as np
        >>> g = ember.make_graph(lambda c: ember.scan(lambda c, x: (c + x, c), c, np.ones(3, np.float32)))(0.0)
        >>> eq = next(e for e in g.equations if e.prim.name == "scan")
        >>> s = loop_spec(eq.prim, eq.params); (type(s).__name__, s.num_carry, s.length, s.reverse)
        ('ScanSpec', 1, 3, False)
    """
    make = DRIVERS.get(prim)
    if make is scan_driver:
        return _scan_spec(params)
    if make is while_driver:
        return _while_spec(params)
    if make is switch_driver:
        return _switch_spec(params)
    key = getattr(make, "call_key", None)
    return None if key is None else CallSpec(params[key])


def _scan_spec(params) -> ScanSpec:
    return ScanSpec(params["body"], params["num_consts"], params["num_carry"], params["length"],
                    bool(params["reverse"]))


def _switch_spec(params) -> SwitchSpec:
    return SwitchSpec(tuple(params["branches"]))


def _while_spec(params) -> WhileSpec:
    return WhileSpec(params["cond_graph"], params["body_graph"], params["cond_nconsts"], params["body_nconsts"])


def while_driver(params, compile, xp=np):
    """while_loop: the body while the condition holds (`WhileSpec`)."""
    spec = _while_spec(params)
    cond, body = compile(spec.cond), compile(spec.body)
    nc, nb = spec.cond_nconsts, spec.body_nconsts

    def run(*vals):
        cc, bc, carry = list(vals[:nc]), list(vals[nc:nc + nb]), list(vals[nc + nb:])
        while bool(cond(*cc, *carry)[0]):
            carry = body(*bc, *carry)
        return [xp.asarray(c) for c in carry]
    return run


def scan_driver(params, compile, xp=np):
    """scan: the body once per row of the scanned inputs, stacking the outputs (`ScanSpec`)."""
    spec = _scan_spec(params)
    body = compile(spec.body)
    nc, nk, length, reverse = spec.num_consts, spec.num_carry, spec.length, spec.reverse
    y_avals = spec.body.out_avals[nk:]

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
