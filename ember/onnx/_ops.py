"""Primitive -> ONNX operator rules: `rule(converter, equation, input_names) -> output names`.

A rule that needs sub-graphs (cond, scan) is a coroutine that yields a request
for each body (see `_convert.drive`).  A primitive, or a use of it, that ONNX
cannot express raises `unsupported(eq, why)`, naming it and the user's line.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ._convert import onnx_dtype, unsupported

RULES: dict = {}


def _aval(eq, i=0):
    return eq.inputs[i].aval


def _out(eq, i=0):
    return eq.outputs[i].aval


def _one(op):
    return lambda cv, eq, ins: [cv.op(op, *ins)]


for _name, _op in {"neg": "Neg", "exp": "Exp", "log": "Log", "tanh": "Tanh", "logistic": "Sigmoid",
                   "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "Asin", "acos": "Acos",
                   "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh",
                   "acosh": "Acosh", "atanh": "Atanh", "sqrt": "Sqrt", "abs": "Abs",
                   "sign": "Sign", "floor": "Floor", "ceil": "Ceil", "erf": "Erf",
                   "round": "Round", "add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div",
                   "max": "Max", "min": "Min", "pow": "Pow", "eq": "Equal", "lt": "Less",
                   "le": "LessOrEqual", "gt": "Greater", "ge": "GreaterOrEqual",
                   "stop_gradient": "Identity", "checkpoint_name": "Identity"}.items():
    RULES[_name] = _one(_op)


def _logical(bool_op, bitwise_op):
    def rule(cv, eq, ins):
        if _aval(eq).dtype == _dt.bool_:
            return [cv.op(bool_op, *ins)]
        if cv.opset < 18:
            raise unsupported(eq, f"{bitwise_op} on integers needs opset >= 18 (got {cv.opset})")
        return [cv.op(bitwise_op, *ins)]
    return rule


RULES["and"] = _logical("And", "BitwiseAnd")
RULES["or"] = _logical("Or", "BitwiseOr")
RULES["xor"] = _logical("Xor", "BitwiseXor")
RULES["not"] = _logical("Not", "BitwiseNot")
RULES["ne"] = lambda cv, eq, ins: [cv.op("Not", cv.op("Equal", *ins))]
RULES["rsqrt"] = lambda cv, eq, ins: [cv.op("Reciprocal", cv.op("Sqrt", ins[0]))]
RULES["square"] = lambda cv, eq, ins: [cv.op("Mul", ins[0], ins[0])]
RULES["rem"] = lambda cv, eq, ins: [cv.op("Mod", *ins, fmod=1)]
RULES["exp2"] = lambda cv, eq, ins: [cv.op("Pow", cv.const(2.0, _aval(eq).dtype), ins[0])]
RULES["log1p"] = lambda cv, eq, ins: [cv.op("Log", cv.op("Add", ins[0], cv.const(1, _aval(eq).dtype)))]
RULES["expm1"] = lambda cv, eq, ins: [cv.op("Sub", cv.op("Exp", ins[0]), cv.const(1, _aval(eq).dtype))]
RULES["is_finite"] = lambda cv, eq, ins: [cv.op("Not", cv.op("Or", cv.op("IsNaN", ins[0]),
                                                                cv.op("IsInf", ins[0])))]
RULES["integer_pow"] = lambda cv, eq, ins: [cv.op("Pow", ins[0], cv.const(eq.params["y"], _aval(eq).dtype))]
RULES["clamp"] = lambda cv, eq, ins: [cv.op("Min", cv.op("Max", ins[1], ins[0]), ins[2])]
RULES["convert_element_type"] = lambda cv, eq, ins: [cv.op("Cast", ins[0], to=onnx_dtype(eq.params["new_dtype"]))]


def _select_n(cv, eq, ins):
    which, cases = ins[0], ins[1:]
    if _aval(eq).dtype == _dt.bool_:
        return [cv.op("Where", which, cases[1], cases[0])]
    out = cases[0]
    for k in range(1, len(cases)):
        out = cv.op("Where", cv.op("Equal", which, cv.const(k, _aval(eq).dtype)), cases[k], out)
    return [out]


RULES["select_n"] = _select_n


# --- shapes ----------------------------------------------------------------------------

def _broadcast_in_dim(cv, eq, ins):
    shape, bd = eq.params["shape"], eq.params["broadcast_dimensions"]
    src = _aval(eq).shape
    mid = [1] * len(shape)
    for i, d in enumerate(bd):
        mid[d] = src[i]
    x = cv.op("Reshape", ins[0], cv.ints(mid))
    return [cv.op("Expand", x, cv.ints(shape))]


RULES["broadcast_in_dim"] = _broadcast_in_dim
RULES["reshape"] = lambda cv, eq, ins: [cv.op("Reshape", ins[0], cv.ints(eq.params["new_sizes"]))]
RULES["transpose"] = lambda cv, eq, ins: [cv.op("Transpose", ins[0], perm=list(eq.params["permutation"]))]
RULES["squeeze"] = lambda cv, eq, ins: [cv.op("Squeeze", ins[0], cv.ints(eq.params["dimensions"]))]
RULES["expand_dims"] = lambda cv, eq, ins: [cv.op("Unsqueeze", ins[0], cv.ints(eq.params["dimensions"]))]
RULES["concatenate"] = lambda cv, eq, ins: [cv.op("Concat", *ins, axis=eq.params["dimension"])]


def _rev(cv, eq, ins):
    dims = eq.params["dimensions"]
    n = len(dims)
    return [cv.op("Slice", ins[0], cv.ints([-1] * n), cv.ints([-(2 ** 62)] * n), cv.ints(dims),
                  cv.ints([-1] * n))]


RULES["rev"] = _rev


def _slice(cv, eq, ins):
    p = eq.params
    n = len(p["start_indices"])
    steps = p["strides"] or (1,) * n
    return [cv.op("Slice", ins[0], cv.ints(p["start_indices"]), cv.ints(p["limit_indices"]),
                  cv.ints(range(n)), cv.ints(steps))]


RULES["slice"] = _slice


def _pad(cv, eq, ins):
    cfg = eq.params["padding_config"]
    if any(i != 0 for _, _, i in cfg):
        raise unsupported(eq, "interior padding has no ONNX equivalent")
    return [cv.op("Pad", ins[0], cv.ints([lo for lo, _, _ in cfg] + [hi for _, hi, _ in cfg]), ins[1])]


RULES["pad"] = _pad


def _iota(cv, eq, ins):
    p = eq.params
    shape, dim = p["shape"], p["dimension"]
    ar = np.arange(shape[dim]).reshape([-1 if i == dim else 1 for i in range(len(shape))])
    return [cv.const(np.broadcast_to(ar, shape).astype(p["dtype"]))]


RULES["iota"] = _iota


def _dynamic_slice(cv, eq, ins):
    x, idx = ins[0], ins[1:]
    sizes = eq.params["slice_sizes"]
    shape = _aval(eq).shape
    starts = cv.op("Concat", *[cv.op("Unsqueeze", cv.op("Cast", i, to=onnx_dtype(np.int64)), cv.ints([0]))
                               for i in idx], axis=0)
    # ember clamps the start so that the slice stays in bounds, as XLA does
    starts = cv.op("Max", cv.op("Min", starts, cv.ints([d - s for d, s in zip(shape, sizes)])), cv.ints([0] * len(sizes)))
    ends = cv.op("Add", starts, cv.ints(sizes))
    return [cv.op("Slice", x, starts, ends, cv.ints(range(len(sizes))))]


RULES["dynamic_slice"] = _dynamic_slice


# --- reductions --------------------------------------------------------------------------

def _reduce(op):
    def rule(cv, eq, ins):
        axes = list(eq.params["axes"])
        if not axes:
            return [cv.op("Identity", ins[0])]
        if op == "ReduceSum" or cv.opset >= 18:
            return [cv.op(op, ins[0], cv.ints(axes), keepdims=0)]
        return [cv.op(op, ins[0], axes=axes, keepdims=0)]
    return rule


RULES["reduce_sum"] = _reduce("ReduceSum")
RULES["reduce_max"] = _reduce("ReduceMax")
RULES["reduce_min"] = _reduce("ReduceMin")
RULES["reduce_prod"] = _reduce("ReduceProd")


def _bool_reduce(op):
    inner = _reduce(op)

    def rule(cv, eq, ins):
        if _aval(eq).dtype != _dt.bool_:
            raise unsupported(eq, "bitwise reductions of integers have no ONNX equivalent")
        x = cv.op("Cast", ins[0], to=onnx_dtype(np.int32))
        (r,) = inner(cv, eq, [x])
        return [cv.op("Cast", r, to=onnx_dtype(np.bool_))]
    return rule


RULES["reduce_and"] = _bool_reduce("ReduceMin")
RULES["reduce_or"] = _bool_reduce("ReduceMax")


def _arg(op):
    def rule(cv, eq, ins):
        r = cv.op(op, ins[0], axis=eq.params["axis"], keepdims=0)
        return [cv.op("Cast", r, to=onnx_dtype(eq.params["index_dtype"]))]
    return rule


RULES["argmax"] = _arg("ArgMax")
RULES["argmin"] = _arg("ArgMin")
RULES["cumsum"] = lambda cv, eq, ins: [cv.op("CumSum", ins[0], cv.const(np.int64(eq.params["axis"])),
                                             reverse=int(eq.params["reverse"]))]


def _top_k(cv, eq, ins):
    vals, idx = cv.node("TopK", [ins[0], cv.ints([eq.params["k"]])], 2, axis=-1, largest=1, sorted=1)
    return [vals, cv.op("Cast", idx, to=onnx_dtype(_out(eq, 1).dtype))]


RULES["top_k"] = _top_k


# --- contractions and windows --------------------------------------------------------------

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _dot_general(cv, eq, ins):
    (lc, rc), (lb, rb) = eq.params["dimension_numbers"]
    la, ra = _aval(eq, 0), _aval(eq, 1)
    out = _out(eq)
    lhs, rhs = ins
    if la.dtype != out.dtype:
        lhs = cv.op("Cast", lhs, to=onnx_dtype(out.dtype))
    if ra.dtype != out.dtype:
        rhs = cv.op("Cast", rhs, to=onnx_dtype(out.dtype))
    if not lb and ra.ndim == 2 and tuple(lc) == (la.ndim - 1,) and tuple(rc) == (0,) and la.ndim >= 1:
        return [cv.op("MatMul", lhs, rhs)]
    letters = iter(_LETTERS)
    ls = [next(letters) for _ in range(la.ndim)]
    rs = [None] * ra.ndim
    for a, b in zip(lb, rb):
        rs[b] = ls[a]
    for a, b in zip(lc, rc):
        rs[b] = ls[a]
    rs = [s or next(letters) for s in rs]
    o = ([ls[a] for a in lb] + [ls[i] for i in range(la.ndim) if i not in lb and i not in lc]
         + [rs[i] for i in range(ra.ndim) if i not in rb and i not in rc])
    return [cv.op("Einsum", lhs, rhs, equation=f"{''.join(ls)},{''.join(rs)}->{''.join(o)}")]


RULES["dot_general"] = _dot_general


def _perm_inverse(p):
    return [int(i) for i in np.argsort(p)]


def _conv(cv, eq, ins):
    p = eq.params
    if any(d != 1 for d in p["lhs_dilation"]):
        raise unsupported(eq, f"lhs_dilation={p['lhs_dilation']} (a transposed convolution) is not mapped")
    if p["batch_group_count"] != 1:
        raise unsupported(eq, "batch_group_count != 1 has no ONNX equivalent")
    dn = p["dimension_numbers"]
    lhs, rhs = ins
    ident = list(range(len(dn.lhs_spec)))
    if list(dn.lhs_spec) != ident:
        lhs = cv.op("Transpose", lhs, perm=list(dn.lhs_spec))
    if list(dn.rhs_spec) != ident:
        rhs = cv.op("Transpose", rhs, perm=list(dn.rhs_spec))
    pads = [lo for lo, _ in p["padding"]] + [hi for _, hi in p["padding"]]
    out = cv.op("Conv", lhs, rhs, strides=list(p["window_strides"]), pads=pads,
                dilations=list(p["rhs_dilation"]), group=p["feature_group_count"])
    if list(dn.out_spec) != ident:
        out = cv.op("Transpose", out, perm=_perm_inverse(dn.out_spec))
    return [out]


RULES["conv_general_dilated"] = _conv


def _pool(kind):
    def rule(cv, eq, ins):
        p = eq.params
        nd = _aval(eq).ndim
        wd, ws, pad = p["window_dimensions"], p["window_strides"], p["padding"]
        wdil, bdil = p["window_dilation"], p["base_dilation"]
        trivial = [d for d in range(nd) if wd[d] == 1 and ws[d] == 1 and tuple(pad[d]) == (0, 0)
                   and wdil[d] == 1]
        if any(b != 1 for b in bdil) or nd < 3 or len(trivial) < 2:
            raise unsupported(eq, f"this window (window_dimensions={wd}, strides={ws}, padding={pad}, "
                              f"base_dilation={bdil}) is not a pooling over trailing spatial axes: "
                              f"MaxPool/AveragePool need two untouched leading axes and no base dilation")
        lead = trivial[:2]
        spatial = [d for d in range(nd) if d not in lead]
        perm = lead + spatial
        x = ins[0] if perm == list(range(nd)) else cv.op("Transpose", ins[0], perm=perm)
        kernel = [wd[d] for d in spatial]
        attrs = dict(kernel_shape=kernel, strides=[ws[d] for d in spatial],
                     pads=[pad[d][0] for d in spatial] + [pad[d][1] for d in spatial])
        if kind == "max":
            if not _dt.is_float(_aval(eq).dtype):
                raise unsupported(eq, "MaxPool takes floating-point values only")
            y = cv.op("MaxPool", x, dilations=[wdil[d] for d in spatial], **attrs)
        else:
            if any(wdil[d] != 1 for d in spatial) or not _dt.is_float(_aval(eq).dtype):
                raise unsupported(eq, "a windowed sum maps to AveragePool only for floats without "
                                  "window dilation")
            avg = cv.op("AveragePool", x, count_include_pad=1, **attrs)
            y = cv.op("Mul", avg, cv.const(float(np.prod(kernel)), _aval(eq).dtype))
        return [y if perm == list(range(nd)) else cv.op("Transpose", y, perm=_perm_inverse(perm))]
    return rule


RULES["reduce_window_max"] = _pool("max")
RULES["reduce_window_sum"] = _pool("sum")


# --- gather and scatter ----------------------------------------------------------------------

def _clip_indices(cv, eq, idx, bounds, mode):
    if mode in ("clip", "promise_in_bounds") or mode is None:
        hi = cv.const(np.asarray(bounds, dtype=eq.inputs[1].aval.dtype))
        return cv.op("Max", cv.op("Min", idx, hi), cv.const(np.zeros(len(bounds), eq.inputs[1].aval.dtype)))
    raise unsupported(eq, f"mode={mode!r}: out-of-range indices have no ONNX equivalent "
                      f"(use mode='clip')")


def _to_spare_slot(cv, eq, idx, bounds):
    """int64 indices [..., k] whose out-of-range vectors (any component outside
    [0, bound]) point at `bound + 1` in every component: one slot past the end,
    which the caller pads on (a gather's fill value) or pads on and slices off
    (a scatter's dropped updates).  ONNX's GatherND/ScatterND have no fill or drop."""
    idx = cv.op("Cast", idx, to=onnx_dtype(np.int64))
    b = np.asarray(bounds, np.int64)
    inside = cv.op("And", cv.op("GreaterOrEqual", idx, cv.const(np.zeros(len(b), np.int64))),
                   cv.op("LessOrEqual", idx, cv.const(b)))
    # all components inside: the minimum over the last axis of the 0/1 flags
    flags = cv.op("Cast", inside, to=onnx_dtype(np.int32))
    if cv.opset >= 18:
        ok = cv.op("ReduceMin", flags, cv.ints([-1]), keepdims=1)
    else:
        ok = cv.op("ReduceMin", flags, axes=[-1], keepdims=1)
    ok = cv.op("Cast", ok, to=onnx_dtype(np.bool_))
    return cv.op("Where", ok, idx, cv.const(b + 1))


def _pad_spare_slots(cv, x, ndim, axes, value):
    """x with one more element at the end of each of `axes`, holding `value`."""
    hi = [1 if d in axes else 0 for d in range(ndim)]
    return cv.op("Pad", x, cv.ints([0] * ndim + hi), value)


def _gather(cv, eq, ins):
    p = eq.params
    dn = p["dimension_numbers"]
    op_aval, idx_aval = _aval(eq, 0), _aval(eq, 1)
    sim = tuple(dn.start_index_map)
    nbatch = len(dn.operand_batching_dims)
    lead = tuple(range(nbatch))
    if (tuple(dn.operand_batching_dims) != lead or tuple(dn.start_indices_batching_dims) != lead
            or sorted(dn.collapsed_slice_dims) != sorted(sim)):
        raise unsupported(eq, "only gathers that index whole slices (collapsed dims = indexed dims, "
                          "batching dims leading) map to GatherND")
    rest = [d for d in range(op_aval.ndim) if d not in sim and d >= nbatch]
    if any(p["slice_sizes"][d] != 1 for d in sim + lead) or \
            any(p["slice_sizes"][d] != op_aval.shape[d] for d in rest):
        raise unsupported(eq, f"slice_sizes={p['slice_sizes']} are not whole slices")
    x = ins[0]
    perm = list(lead) + list(sim) + rest
    if perm != list(range(op_aval.ndim)):
        x = cv.op("Transpose", x, perm=perm)
    bounds = [op_aval.shape[d] - 1 for d in sim]
    if p["mode"] == "fill":
        fill = np.array(0 if p["fill_value"] is None else p["fill_value"]).astype(op_aval.dtype)
        x = _pad_spare_slots(cv, x, op_aval.ndim, range(nbatch, nbatch + len(sim)), cv.const(fill))
        idx = _to_spare_slot(cv, eq, ins[1], bounds)
    else:
        idx = cv.op("Cast", _clip_indices(cv, eq, ins[1], bounds, p["mode"]), to=onnx_dtype(np.int64))
    y = cv.op("GatherND", x, idx, batch_dims=nbatch)
    # GatherND gives batch dims then offset dims; the gather's output interleaves them
    out_nd = _out(eq).ndim
    offs = list(dn.offset_dims)
    nb = out_nd - len(offs)
    src, b = [], 0
    for j in range(out_nd):
        if j in offs:
            src.append(nb + offs.index(j))
        else:
            src.append(b)
            b += 1
    return [y if src == list(range(out_nd)) else cv.op("Transpose", y, perm=src)]


RULES["gather"] = _gather


def _scatter(reduction):
    def rule(cv, eq, ins):
        p = eq.params
        dn = p["dimension_numbers"]
        op_aval, up_aval = _aval(eq, 0), _aval(eq, 2)
        k = len(dn.scatter_dims_to_operand_dims)
        nb = up_aval.ndim - len(dn.update_window_dims)
        if (dn.operand_batching_dims or tuple(dn.inserted_window_dims) != tuple(range(k))
                or tuple(dn.scatter_dims_to_operand_dims) != tuple(range(k))
                or tuple(dn.update_window_dims) != tuple(range(nb, up_aval.ndim))
                or tuple(up_aval.shape[nb:]) != tuple(op_aval.shape[k:])):
            raise unsupported(eq, "only scatters of whole slices along leading axes map to ScatterND")
        attrs = {} if reduction == "none" else {"reduction": reduction}
        bounds = [op_aval.shape[d] - 1 for d in range(k)]
        if p["mode"] in ("drop", "fill"):
            # dropped updates land in a spare slot past the end, sliced off after
            x = _pad_spare_slots(cv, ins[0], op_aval.ndim, range(k), cv.const(np.zeros((), op_aval.dtype)))
            idx = _to_spare_slot(cv, eq, ins[1], bounds)
            y = cv.op("ScatterND", x, idx, ins[2], **attrs)
            return [cv.op("Slice", y, cv.ints([0] * k), cv.ints(op_aval.shape[:k]), cv.ints(range(k)))]
        idx = cv.op("Cast", _clip_indices(cv, eq, ins[1], bounds, p["mode"]), to=onnx_dtype(np.int64))
        return [cv.op("ScatterND", ins[0], idx, ins[2], **attrs)]
    return rule


RULES["scatter"] = _scatter("none")
RULES["scatter_add"] = _scatter("add")
RULES["scatter_mul"] = _scatter("mul")
RULES["scatter_max"] = _scatter("max")
RULES["scatter_min"] = _scatter("min")
RULES["take_along_axis"] = lambda cv, eq, ins: [cv.op("GatherElements", ins[0],
                                                      cv.op("Cast", ins[1], to=onnx_dtype(np.int64)),
                                                      axis=eq.params["axis"])]


# --- control flow -------------------------------------------------------------------------------

def _cond(cv, eq, ins):
    branches = eq.params["branches"]
    if len(branches) != 2:
        raise unsupported(eq, f"a switch with {len(branches)} branches (If has two)")
    index, ops = ins[0], ins[1:]
    graphs = []
    for k, b in enumerate(branches):
        env = dict(zip(b.graph.inputs, ops))
        graphs.append((yield ("body", cv, b, env, [], f"branch{k}_{cv.fresh('g')}")))
    flag = cv.op("Greater", index, cv.const(0, _aval(eq).dtype))
    return cv.node("If", [flag], len(eq.outputs), then_branch=graphs[1], else_branch=graphs[0])


def _scan(cv, eq, ins):
    p = eq.params
    body, nc, nk = p["body"], p["num_consts"], p["num_carry"]
    bg = body.graph
    consts, carry, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]
    if not xs:
        raise unsupported(eq, "a scan over no sequences (ONNX Scan needs one scan input; use scan "
                          "with xs)")
    formal = [(cv.fresh("carry"), v.aval) for v in bg.inputs[nc:nc + nk]] + \
             [(cv.fresh("x"), v.aval) for v in bg.inputs[nc + nk:]]
    env = dict(zip(bg.inputs[:nc], consts))
    env.update(zip(bg.inputs[nc:], [n for n, _ in formal]))
    g = yield ("body", cv, body, env, formal, f"scan_{cv.fresh('g')}")
    d = int(p["reverse"])
    n_ys = len(bg.outputs) - nk
    return cv.node("Scan", carry + xs, len(eq.outputs), body=g, num_scan_inputs=len(xs),
                   scan_input_directions=[d] * len(xs), scan_output_directions=[d] * n_ys)


RULES["cond"] = _cond
RULES["scan"] = _scan


def _sort(cv, eq, ins):
    p = eq.params
    if p["num_keys"] != 1:
        raise unsupported(eq, "a sort on several keys (TopK sorts by one)")
    axis = p["dimension"]
    n = _aval(eq).shape[axis]
    # TopK orders equal keys by index, so it is a stable ascending sort with largest=0
    vals, idx = cv.node("TopK", [ins[0], cv.ints([n])], 2, axis=axis, largest=0, sorted=1)
    return [vals] + [cv.op("GatherElements", x, idx, axis=axis) for x in ins[1:]]


RULES["sort"] = _sort


def _while(cv, eq, ins):
    from ..fx.core import AbstractArray
    from ..fx.ir import ClosedGraph, Graph, Var
    p = eq.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cg, bg = p["cond_graph"].graph, p["body_graph"].graph
    cconsts, bconsts, carry = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
    # the first test, in the enclosing graph: a sub-graph converted, then spliced in
    first = yield ("body", cv, p["cond_graph"], dict(zip(cg.inputs, cconsts + carry)), [], cv.fresh("cond0"))
    cv.nodes.extend(first.node)
    # ONNX Loop's body returns (condition, carry): the body graph, then the test on its results
    after = dict(zip(cg.inputs[nc:], bg.outputs))
    test = [e.replace(inputs=[after.get(a, a) if isinstance(a, Var) else a for a in e.inputs])
            for e in cg.equations]
    out0 = cg.outputs[0]
    out0 = after.get(out0, out0) if isinstance(out0, Var) else out0
    both = ClosedGraph(Graph([], list(cg.inputs[:nc]) + list(bg.inputs), list(bg.equations) + test,
                             [out0] + list(bg.outputs)), [])
    formal = [(cv.fresh("iter"), AbstractArray((), np.int64)), (cv.fresh("cond_in"), AbstractArray((), np.bool_))]
    formal += [(cv.fresh("carry"), v.aval) for v in bg.inputs[nb:]]
    env = dict(zip(cg.inputs[:nc], cconsts))
    env.update(zip(bg.inputs[:nb], bconsts))
    env.update(zip(bg.inputs[nb:], [n for n, _ in formal[2:]]))
    body = yield ("body", cv, both, env, formal, cv.fresh("while_body"))
    return cv.node("Loop", ["", first.output[0].name] + list(carry), len(eq.outputs), body=body)


RULES["while_loop"] = _while
