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


def _eager_check(prim, vals, avals, out, out_aval):
    if prim.name == "jit_call":
        return   # its executable is `checked`, which names the equation inside
    outs = out if prim.multiple_results else [out]
    outs = [np.asarray(o) if not isinstance(o, (np.ndarray, np.generic)) else o for o in outs]
    if _finite(outs) or not _finite(vals):
        return
    ctx = " (inside its body)" if prim.kind == "control" else ""
    raise FloatingPointError(_message(prim.name, vals, outs, _core.user_source(), ctx))


def _inner_graph(eq):
    """The sub-graph that an equation runs on exactly its operands (jit_call, remat,
    custom rules' primal function), which the locator enters; None for loops/branches."""
    subs = subgraphs(eq.params)
    if len(subs) != 1 or not isinstance(subs[0], ClosedGraph):
        return None
    g = subs[0]
    if len(g.graph.inputs) != len(eq.inputs) or len(g.graph.outputs) != len(eq.outputs):
        return None
    if [v.aval.shape for v in g.graph.inputs] != [a.aval.shape for a in eq.inputs]:
        return None
    return g


def locate(closed: ClosedGraph, args):
    """The first equation of `closed` (entering jit_call-like sub-graphs) that makes a
    NaN/Inf from finite operands, run with the reference implementations:
    `(equation, operand values, result values, enclosing equations)` or None.

    Example:
        >>> import ember, ember.numpy as enp, numpy as np
        >>> g = ember.make_graph(lambda x: enp.log(x) * 2.0)(1.0)
        >>> eq, ins, outs, path = locate(g, [np.float32(-1.0)])
        >>> eq.prim.name, path
        ('log', [])
    """
    # explicit stack of frames [graph, env, next equation index, entering equation]
    env = dict(zip(closed.graph.constvars, closed.consts_as_buffers()))
    env.update(zip(closed.graph.inputs, args))
    stack = [[closed.graph, env, 0, None]]
    while stack:
        frame = stack[-1]
        graph, env, i, _ = frame
        read = lambda a: a.value if type(a) is Literal else env[a]  # noqa: E731
        if i == len(graph.equations):
            outs = [read(a) for a in graph.outputs]
            stack.pop()
            if not stack:
                return None
            parent = stack[-1]
            parent[1].update(zip(parent[1]["__eq__"].outputs, outs))
            parent[2] += 1
            continue
        eq = graph.equations[i]
        ins = [read(a) for a in eq.inputs]
        inner = _inner_graph(eq) if _finite(ins) else None
        if inner is not None:
            env["__eq__"] = eq
            sub = dict(zip(inner.graph.constvars, inner.consts_as_buffers()))
            sub.update(zip(inner.graph.inputs, ins))
            stack.append([inner.graph, sub, 0, eq])
            continue
        out = eq.prim.impl(*ins, **eq.params)
        outs = list(out) if eq.prim.multiple_results else [out]
        outs = [np.asarray(o) for o in outs]
        if _finite(ins) and not _finite(outs):
            return eq, ins, outs, [f[3] for f in stack[1:]]
        env.update(zip(eq.outputs, outs))
        frame[2] += 1
    return None


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
        ctx = "".join(f" (inside {p.prim.name} {p.params.get('name', '')!s}".rstrip() + ")"
                      for p in reversed(path))
        raise FloatingPointError(_message(eq.prim.name, ins, outs_, eq.source, ctx + " under jit"))


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
