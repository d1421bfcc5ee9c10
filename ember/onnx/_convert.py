"""The graph walk of the ONNX exporter: equations to ONNX nodes, sub-graphs to If/Scan bodies, on an explicit stack.

Inlined sub-graphs (jit_call, remat, custom rules' `call`) are walked in the
same node list; `cond` and `scan` bodies become ONNX sub-graphs, which read
their captured operands from the enclosing scope by name.  Each graph's
conversion is a coroutine the driver runs on an explicit stack, so nesting
depth costs no Python recursion.
"""
from __future__ import annotations

import numpy as np

from ..fx import trampoline
from ..fx.ir import ClosedGraph, Literal


class OnnxExportError(ValueError):
    """A function cannot be written as ONNX: names the primitive and the user's line.

    Example:
        >>> str(OnnxExportError("ember.onnx.export: no ONNX mapping for primitive `fft`"))[-5:]
        '`fft`'
    """


def onnx_dtype(dtype) -> int:
    import onnx
    from .. import dtypes as _dt
    d = _dt.canonicalize(dtype)
    if d == _dt.bfloat16:
        return onnx.TensorProto.BFLOAT16
    return onnx.helper.np_dtype_to_tensor_dtype(np.dtype(d))


def unsupported(eq, why: str = "") -> OnnxExportError:
    where = f"\n  at {eq.source}" if eq.source else ""
    return OnnxExportError(f"ember.onnx.export: no ONNX mapping for primitive `{eq.prim.name}`"
                           f"{': ' + why if why else ''}{where}\n  hint: rewrite this part "
                           f"with primitives that map (elementwise, reductions, dot_general, conv, "
                           f"pooling windows, gather/scatter, shape ops, cond, scan, while_loop), or export "
                           f"with ember.export instead, which keeps every primitive")


class Converter:
    """State of one export: node lists per open graph, initializers, fresh names."""

    def __init__(self, opset: int):
        self.opset = opset
        self.initializers = []
        self.count = 0
        self.nodes = None   # the node list of the graph being converted

    def fresh(self, hint: str = "t") -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def const(self, value, dtype=None) -> str:
        from onnx import numpy_helper
        a = np.asarray(value, dtype=dtype)
        name = self.fresh("const")
        self.initializers.append(numpy_helper.from_array(a.copy(order="C"), name))  # not ascontiguousarray: it makes 0-d 1-d
        return name

    def ints(self, values) -> str:
        return self.const(np.asarray(list(values), dtype=np.int64))

    def node(self, op: str, inputs, n_out: int = 1, **attrs) -> list:
        import onnx
        outs = [self.fresh(op.lower()) for _ in range(n_out)]
        self.nodes.append(onnx.helper.make_node(op, list(inputs), outs, **attrs))
        return outs

    def op(self, op: str, *inputs, **attrs) -> str:
        return self.node(op, inputs, 1, **attrs)[0]

    def value_info(self, name, aval):
        import onnx
        return onnx.helper.make_tensor_value_info(name, onnx_dtype(aval.dtype), list(aval.shape))

    # --- graphs --------------------------------------------------------------------
    def body(self, closed, env: dict, formal_inputs, name: str):
        """Coroutine: convert `closed` with `env` (its vars -> names), `formal_inputs`
        (name, aval) the ONNX graph's inputs; returns a GraphProto.  Sub-graphs are
        requested from the driver by yielding ("body", closed, env, formal, name)."""
        import onnx
        from ._ops import RULES
        outer_nodes = self.nodes
        self.nodes = nodes = []
        # explicit stack of (graph, env, next equation index): inlined sub-graphs
        frames = [(closed.graph if isinstance(closed, ClosedGraph) else closed, env, 0)]
        result_names = None
        while frames:
            g, e, i = frames.pop()
            if i == len(g.equations):
                outs = [self.atom(a, e) for a in g.outputs]
                if frames:
                    pg, pe, pi = frames[-1]
                    for v, n in zip(pg.equations[pi - 1].outputs, outs):
                        pe[v] = n
                else:
                    result_names = outs
                continue
            frames.append((g, e, i + 1))
            eq = g.equations[i]
            ins = [self.atom(a, e) for a in eq.inputs]
            inline = INLINE.get(eq.prim.name)
            if inline is not None:
                sub = eq.params[inline]
                sg = sub.graph if isinstance(sub, ClosedGraph) else sub
                frames.append((sg, dict(zip(sg.inputs, ins)), 0))
                continue
            rule = RULES.get(eq.prim.name)
            if rule is None:
                raise unsupported(eq)
            self.nodes = nodes
            gen = rule(self, eq, ins)
            if hasattr(gen, "send"):      # a rule with sub-graphs is itself a coroutine
                send = None
                while True:
                    try:
                        req = gen.send(send)
                    except StopIteration as stop:
                        outs = stop.value
                        break
                    self.nodes = outer_marker = nodes
                    send = yield req
                    self.nodes = outer_marker
            else:
                outs = gen
            for v, n in zip(eq.outputs, outs):
                e[v] = n
        self.nodes = nodes
        gouts = []
        for a, n in zip((closed.graph if isinstance(closed, ClosedGraph) else closed).outputs, result_names):
            # every graph output gets its own name (an input or a repeated value may not be one)
            o = self.fresh("out")
            nodes.append(onnx.helper.make_node("Identity", [n], [o]))
            gouts.append(self.value_info(o, a.aval))
        graph = onnx.helper.make_graph(nodes, name, [self.value_info(n, a) for n, a in formal_inputs], gouts)
        self.nodes = outer_nodes
        return graph

    def atom(self, a, env) -> str:
        if isinstance(a, Literal):
            return self.const(np.asarray(a.value, dtype=a.aval.dtype))
        return env[a]


INLINE = {"jit_call": "graph", "remat": "graph", "custom_jvp_call": "call", "custom_vjp_call": "call"}


def drive(first):
    """Run body coroutines on an explicit stack; a yielded request
    ("body", converter, closed, env, formal, name) converts a sub-graph."""
    def spawn(req):
        _, cv, closed, env, formal, name = req
        return cv.body(closed, env, formal, name)
    return trampoline.run(first, spawn)
