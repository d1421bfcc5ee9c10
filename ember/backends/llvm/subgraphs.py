"""Native implementations of higher-order primitives inside a compiled program.

A library step whose primitive carries sub-graphs (jit_call, cond, scan,
while_loop, remat, custom rules) would otherwise run its numpy reference impl,
which interprets the body equation by equation on every iteration.  Here each
body is compiled once, with the same code generator, and only the loop itself
stays in Python.

Example:
    >>> import ember, numpy as np
    >>> from ember import lax
    >>> f = ember.jit(lambda x: ember.scan(lambda c, v: (lax.add(c, v), c), 0.0, x)[0])
    >>> float(f(np.arange(4.0, dtype=np.float32)))
    6.0
"""
from __future__ import annotations

import numpy as np


def native_impl(eq):
    """A callable(*buffers) -> result(s) for `eq`, or None to use the reference impl."""
    make = _MAKERS.get(eq.prim.name)
    return None if make is None else make(eq.params)


def _compile(closed):
    from .executable import compile_graph
    return compile_graph(closed)


def _call_graph(key):
    def make(params):
        exe = _compile(params[key])
        return lambda *vals: exe(*vals)
    return make


def _cond(params):
    branches = [_compile(b) for b in params["branches"]]

    def run(index, *ops):
        i = int(np.clip(int(np.asarray(index)), 0, len(branches) - 1))
        return branches[i](*ops)
    return run


def _while(params):
    cond, body = _compile(params["cond_graph"]), _compile(params["body_graph"])
    nc, nb = params["cond_nconsts"], params["body_nconsts"]

    def run(*vals):
        cc, bc, carry = list(vals[:nc]), list(vals[nc:nc + nb]), list(vals[nc + nb:])
        while bool(cond(*cc, *carry)[0]):
            carry = body(*bc, *carry)
        return [np.asarray(c) for c in carry]
    return run


def _scan(params):
    body = _compile(params["body"])
    nc, nk, length, reverse = (params["num_consts"], params["num_carry"], params["length"],
                               params["reverse"])
    y_avals = params["body"].out_avals[nk:]

    def run(*vals):
        consts, carry = list(vals[:nc]), list(vals[nc:nc + nk])
        xs = [np.asarray(x) for x in vals[nc + nk:]]
        ys = [np.empty((length,) + a.shape, dtype=a.dtype) for a in y_avals]
        for i in (range(length - 1, -1, -1) if reverse else range(length)):
            outs = body(*consts, *carry, *[x[i] for x in xs])
            carry = outs[:nk]
            for y, o in zip(ys, outs[nk:]):
                y[i] = o
        return [np.asarray(c) for c in carry] + ys
    return run


_MAKERS = {
    "jit_call": _call_graph("graph"),
    "remat": _call_graph("graph"),
    "custom_jvp_call": _call_graph("call"),
    "custom_vjp_call": _call_graph("call"),
    "custom_linear_solve": _call_graph("call"),
    "cond": _cond,
    "while_loop": _while,
    "scan": _scan,
}
