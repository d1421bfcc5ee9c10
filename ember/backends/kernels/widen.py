"""Half-precision products on a target whose gemm takes only wider floats.

The reference computes a float16/bfloat16 `dot_general` in float32 and rounds
once at the end. A target whose gemm has no half kernel would otherwise run it
as a host library step; rewritten as convert -> float32 gemm -> convert it does
the same arithmetic (exact half->float32 widening, float32 products and sums,
one rounding) on the native gemm, and the converts fuse into the neighbouring
kernels.

Example:
    >>> import numpy as np, ember, ember.numpy as enp
    >>> from ember.backends.llvm.kernel_target import cpu_target
    >>> g = ember.make_graph(lambda a, b: a @ b)(enp.ones((2, 2), "bfloat16"), enp.ones((2, 2), "bfloat16"))
    >>> [e.prim.name for e in widen_half_products(g, cpu_target()).graph.equations]
    ['convert_element_type', 'convert_element_type', 'dot_general', 'convert_element_type']
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ...fx.core import AbstractArray
from ...fx.ir import ClosedGraph, Equation, Graph, Var
from ...fx.prims.contraction import dot_general_p
from ...fx.prims.convert import convert_element_type_p
from .target import Target

_HALF = (np.dtype(_dt.float16), np.dtype(_dt.bfloat16))
_F32 = np.dtype(np.float32)


def _convert(x, dtype, out=None, source=""):
    out = out if out is not None else Var(AbstractArray(x.aval.shape, dtype))
    return out, Equation(convert_element_type_p, [x], [out],
                         {"new_dtype": dtype, "weak_type": False}, source)


def widen_half_products(closed: ClosedGraph, target: Target) -> ClosedGraph:
    """`closed` with every half-precision dot_general the target's gemm cannot take
    computed as a float32 gemm between converts (the graph itself if there is none)."""
    if _F32 not in target.gemm_dtypes or any(d in target.gemm_dtypes for d in _HALF):
        return closed
    g = closed.graph
    if not any(e.prim is dot_general_p and e.inputs[0].aval.dtype in _HALF for e in g.equations):
        return closed
    eqs = []
    for e in g.equations:
        if e.prim is not dot_general_p or not all(
                type(x) is Var and x.aval.dtype in _HALF for x in e.inputs):
            eqs.append(e)
            continue
        a, b = e.inputs
        a32, ea = _convert(a, _F32, source=e.source)
        b32, eb = _convert(b, _F32, source=e.source)
        out = e.outputs[0]
        params = dict(e.params, preferred_element_type=_F32)
        if out.aval.dtype == _F32:
            eqs += [ea, eb, Equation(dot_general_p, [a32, b32], [out], params, e.source)]
            continue
        wide = Var(AbstractArray(out.aval.shape, _F32))
        _, back = _convert(wide, out.aval.dtype, out=out, source=e.source)
        eqs += [ea, eb, Equation(dot_general_p, [a32, b32], [wide], params, e.source), back]
    return ClosedGraph(Graph(g.constvars, g.inputs, eqs, g.outputs), closed.consts, closed.in_tree,
                       closed.out_tree)
