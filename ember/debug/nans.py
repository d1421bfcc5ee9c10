"""The NaN/Inf locator (`config.update("debug_nans", True)`, `EMBER_DEBUG_NANS=1`).

Eagerly, a hook after each primitive's impl raises `FloatingPointError` when an
output is not finite although every input was.  A compiled call whose outputs
are not finite (from finite inputs) is re-run equation by equation with the
reference implementations to find the first such equation.  Either way the
error names the primitive, its operand and result types, and the user's
file:line: the line being run eagerly, or the equation's recorded `source`
(equations that transforms create while differentiating record the line of the
user's code that called the primitive being differentiated).

Example:
    >>> import ember, ember.numpy as enp
    >>> ember.config.update("debug_nans", True)
    >>> try:
    ...     enp.log(enp.asarray([-1.0]))
    ... except FloatingPointError as e:
    ...     print(str(e).splitlines()[0])
    log produced NaN from finite inputs: log(float32[1]) -> float32[1]
    >>> ember.config.update("debug_nans", False)
"""
from __future__ import annotations

import numpy as np

from .. import config
from ..fx import core as _core
from ..fx.ir import ClosedGraph, Literal, subgraphs


def enable(on: bool) -> None:
    """Turn the locator on or off (what `config.update("debug_nans", on)` calls).

    Example:
        >>> enable(False)
    """
    from .. import dtypes
    _core._nan_hook = _eager_check
    _core._debug_nans = bool(on)
    # jit's fastest path keeps executables per signature: a new epoch makes it look
    # them up again, through `checked` while the locator is on
    dtypes.default_epoch += 1


def _inexact(v) -> bool:
    return isinstance(v, (np.ndarray, np.generic)) and v.dtype.kind in "fc"


def _finite(vals) -> bool:
    for v in vals:
        if _inexact(v) and not np.isfinite(v).all():
            return False
    return True


def _what(vals) -> str:
    nan = any(_inexact(v) and np.isnan(v).any() for v in vals)
    return "NaN" if nan else "Inf"


def _type(v) -> str:
    return _core.get_aval(v).str_user() if not isinstance(v, Literal) else v.aval.str_user()


def _message(name, ins, outs, source, context="") -> str:
    sig = f"{name}({', '.join(_type(v) for v in ins)}) -> {', '.join(_type(v) for v in outs)}"
    where = f"\n  at {source}" if source else ""
    return (f"{name} produced {_what(outs)} from finite inputs: {sig}{context}{where}\n"
            f"  (debug_nans is on: ember.config.update(\"debug_nans\", False) turns the check off)")


def _eager_check(prim, vals, avals, out, out_aval, params):
    if prim.name == "jit_call":
        return   # its executable is `checked`, which names the equation inside
    outs = out if prim.multiple_results else [out]
    outs = [np.asarray(o) if not isinstance(o, (np.ndarray, np.generic)) else o for o in outs]
    if _finite(outs) or not _finite(vals):
        return
    here = _core.user_source()
    sub = _enter(prim, params, vals, avals) if prim.kind == "control" else None
    if sub is not None:
        # a loop or branch run eagerly: find the equation inside its body
        def outer():
            return (yield ("enter", None, sub))
        with np.errstate(all="ignore"):
            found = _drive(outer())
        if found is not None:
            eq, ins, outs_, path = found
            note = f" (inside {prim.name} at {here.split(' (')[0]})" if here else f" (inside {prim.name})"
            raise FloatingPointError(_message(eq.prim.name, ins, outs_, eq.source,
                                              _path_note([p for p in path if p is not None]) + note))
    raise FloatingPointError(_message(prim.name, vals, outs, here))


def _inner_graph(eq_params, n_in, in_avals):
    """The sub-graph that an equation runs on exactly its operands (jit_call, remat,
    custom rules' primal function), or None."""
    subs = subgraphs(eq_params)
    if len(subs) != 1 or not isinstance(subs[0], ClosedGraph):
        return None
    g = subs[0]
    if len(g.graph.inputs) != n_in or [v.aval.shape for v in g.graph.inputs] != [a.shape for a in in_avals]:
        return None
    return g


class _Found(Exception):
    def __init__(self, eq, ins, outs):
        self.eq, self.ins, self.outs = eq, ins, outs


def _enter(prim, params, ins, in_avals):
    """A generator re-running a higher-order equation on the reference path, one
    sub-graph run per `yield (graph, args)`, returning its results; None when the
    equation is not entered (its impl runs whole)."""
    name = prim.name
    if name == "scan":
        return _scan(params, ins)
    if name == "while_loop":
        return _while(params, ins)
    if name == "cond":
        return _cond(params, ins)
    inner = _inner_graph(params, len(ins), in_avals)
    return None if inner is None else _call(inner, ins)


def _call(inner, ins):
    outs = yield inner, list(ins)
    return outs


def _scan(p, ins):
    nc, nk, n = p["num_consts"], p["num_carry"], p["length"]
    consts, carry, xs = list(ins[:nc]), list(ins[nc:nc + nk]), [np.asarray(x) for x in ins[nc + nk:]]
    body = p["body"]
    ys = [np.empty((n,) + a.shape, a.dtype) for a in body.out_avals[nk:]]
    for i in (range(n - 1, -1, -1) if p["reverse"] else range(n)):
        outs = yield body, consts + carry + [x[i] for x in xs]
        carry = list(outs[:nk])
        for y, o in zip(ys, outs[nk:]):
            y[i] = o
    return carry + ys


def _while(p, ins):
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cc, bc, carry = list(ins[:nc]), list(ins[nc:nc + nb]), list(ins[nc + nb:])
    while True:
        (go,) = yield p["cond_graph"], cc + carry
        if not bool(np.asarray(go)):
            return carry
        carry = list((yield p["body_graph"], bc + carry))


def _cond(p, ins):
    branches = p["branches"]
    i = int(np.clip(int(np.asarray(ins[0])), 0, len(branches) - 1))
    outs = yield branches[i], list(ins[1:])
    return outs


def _graph(closed, args):
    """Run `closed` equation by equation; raise `_Found` at the first equation that
    makes a NaN/Inf from finite operands; enter sub-graphs through the driver."""
    graph = closed.graph
    env = dict(zip(graph.constvars, closed.consts_as_buffers()))
    env.update(zip(graph.inputs, args))

    def read(a):
        return a.value if type(a) is Literal else env[a]

    for eq in graph.equations:
        ins = [read(a) for a in eq.inputs]
        sub = _enter(eq.prim, eq.params, ins, [a.aval for a in eq.inputs]) if _finite(ins) else None
        if sub is not None:
            outs = yield ("enter", eq, sub)
        else:
            out = eq.prim.impl(*ins, **eq.params)
            outs = [np.asarray(o) for o in (out if eq.prim.multiple_results else [out])]
            if _finite(ins) and not _finite(outs):
                raise _Found(eq, ins, outs)
        env.update(zip(eq.outputs, outs))
    return [read(a) for a in graph.outputs]


def _drive(first):
    """Run a stack of generators (no recursion): `_graph` ones yield ("enter", eq,
    generator) for a higher-order equation; those yield (graph, args) for each
    sub-graph run.  Returns `(equation, ins, outs, enclosing equations)` or None."""
    stack, labels = [first], [None]   # labels: the equation each entry runs, if any
    value = None
    while stack:
        try:
            req = stack[-1].send(value)
        except StopIteration as stop:
            stack.pop()
            labels.pop()
            value = stop.value
            continue
        except _Found as f:
            return f.eq, f.ins, f.outs, [e for e in labels if e is not None]
        value = None
        if req[0] == "enter":
            stack.append(req[2])
            labels.append(req[1])
        else:
            stack.append(_graph(req[0], req[1]))
            labels.append(None)
    return None


def locate(closed: ClosedGraph, args):
    """The first equation of `closed` (entering jit_call-like sub-graphs, loop bodies
    on every iteration and the taken branch of a cond) that makes a NaN/Inf from
    finite operands, run with the reference implementations: `(equation, operand
    values, result values, enclosing equations)` or None.

    Example:
        >>> import ember, ember.numpy as enp, numpy as np
        >>> g = ember.make_graph(lambda x: enp.log(x) * 2.0)(1.0)
        >>> eq, ins, outs, path = locate(g, [np.float32(-1.0)])
        >>> eq.prim.name, path
        ('log', [])
    """
    return _drive(_graph(closed, list(args)))


def _path_note(path) -> str:
    return "".join(f" (inside {p.prim.name}" + (f" {p.params['name']}" if "name" in p.params else "")
                   + (f" at {p.source.split(' (')[0]}" if p.source else "") + ")" for p in reversed(path))


class Checked:
    """An executable whose non-finite results (from finite inputs) raise, naming the
    equation that made them (see `locate`).

    Example:
        >>> import ember, numpy as np
        >>> g = ember.make_graph(lambda x: x / x)(1.0)
        >>> run = Checked(lambda *a: [np.divide(a[0], a[0])], g)
        >>> try:
        ...     run(np.float32(0.0))
        ... except FloatingPointError as e:
        ...     print(str(e).splitlines()[0])
        div produced NaN from finite inputs: div(float32[], float32[]) -> float32[] under jit
    """

    def __init__(self, exe, graph: ClosedGraph):
        self.exe, self.graph = exe, graph

    def __call__(self, *args):
        outs = self.exe(*args)
        res = [np.asarray(o) for o in outs]
        if _finite(res) or not _finite(args):
            return outs
        with np.errstate(all="ignore"):   # the compiled run already said nothing: neither do we
            found = locate(self.graph, list(args))
        if found is None:
            raise FloatingPointError(
                f"a compiled program returned {_what(res)} from finite inputs, but running it "
                f"equation by equation with the reference implementations gives finite values "
                f"(the compiled arithmetic differs from numpy's: see docs/sharp-bits.md)")
        eq, ins, outs_, path = found
        raise FloatingPointError(_message(eq.prim.name, ins, outs_, eq.source, _path_note(path) + " under jit"))


def checked(exe, graph: ClosedGraph):
    """`exe` wrapped in `Checked` (what `jit` runs while debug_nans is on).

    Example:
        >>> import ember
        >>> g = ember.make_graph(lambda x: x + 1.0)(1.0)
        >>> float(checked(lambda *a: [a[0] + 1], g)(1.0)[0])
        2.0
    """
    return Checked(exe, graph)


# EMBER_DEBUG_NANS=1 in the environment turns it on at import
if config.debug_nans():
    enable(True)
