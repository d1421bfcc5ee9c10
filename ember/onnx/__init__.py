"""ONNX export: `ember.onnx.export(fn_or_module, example_args, "model.onnx")` writes a model onnxruntime runs.

The function is staged and optimised as for `ember.export`; each primitive maps
to ONNX operators (see docs/export.md for the table), and one that has no
mapping raises `OnnxExportError` naming it and the line of user code that
produced it.  Needs the optional extra: `pip install ember[onnx]` (onnx and
onnxruntime), imported only inside this package.

Example:
    >>> issubclass(OnnxExportError, ValueError)
    True
"""
from __future__ import annotations

import re

from ._convert import Converter, OnnxExportError, drive  # noqa: F401


def _need_onnx():
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise ImportError("ember.onnx needs the onnx package: pip install 'ember[onnx]' "
                          "(onnx and onnxruntime)") from None


def _names(given, default, n, what):
    if given is None:
        out, seen = [], set()
        for d in default:
            s = re.sub(r"[^A-Za-z0-9_]+", "_", d).strip("_") or "x"
            while s in seen:
                s += "_"
            seen.add(s)
            out.append(s)
        return out
    given = list(given)
    if len(given) != n or len(set(given)) != n:
        raise OnnxExportError(f"ember.onnx.export: {what} must be {n} distinct names (one per "
                              f"flattened {what.split('_')[0]}), got {given}")
    return given


def export(fn_or_module, example_args, path=None, *, opset: int = 17, input_names=None,
           output_names=None):
    """Stage `fn_or_module(*example_args)` and write it as an ONNX model to `path`
    (skipped when None); returns the `onnx.ModelProto`.  Arguments and results are
    flattened pytrees: one ONNX input per array leaf (named after the function's
    parameters, or `input_names`), one output per result leaf (`output_0`, ... or
    `output_names`).  An nn.Module's parameters become initializers.

    Example (the result is computed by onnxruntime when the extra is installed):
        >>> import importlib.util, numpy as np, ember.numpy as enp
        >>> if importlib.util.find_spec("onnxruntime"):
        ...     import onnxruntime as ort
        ...     m = export(lambda x: enp.tanh(x) * 2.0, (enp.ones(3),))
        ...     sess = ort.InferenceSession(m.SerializeToString())
        ...     out = sess.run(None, {"x": np.zeros(3, np.float32)})[0].tolist()
        ... else:
        ...     out = [0.0, 0.0, 0.0]
        >>> out
        [0.0, 0.0, 0.0]
    """
    _need_onnx()
    import onnx
    from ..export._exported import stage
    if not isinstance(example_args, (tuple, list)):
        example_args = (example_args,)
    if opset < 13:
        raise OnnxExportError(f"ember.onnx.export: opset {opset} is too old; use opset >= 13")
    closed, in_tree, out_tree, arg_names = stage(fn_or_module, tuple(example_args))
    g = closed.graph
    in_names = _names(input_names, arg_names, len(g.inputs), "input_names")
    out_names = _names(output_names, [f"output_{i}" for i in range(len(g.outputs))], len(g.outputs),
                       "output_names")
    cv = Converter(opset)
    env = {v: cv.const(c) for v, c in zip(g.constvars, closed.consts)}
    env.update(zip(g.inputs, in_names))
    body = drive(cv.body(closed, env, list(zip(in_names, [v.aval for v in g.inputs])),
                         getattr(fn_or_module, "__name__", type(fn_or_module).__name__)))
    # name the outputs as asked: rename the final Identity nodes' outputs
    renamed = {o.name: n for o, n in zip(body.output, out_names)}
    for node in body.node:
        for i, o in enumerate(node.output):
            if o in renamed:
                node.output[i] = renamed[o]
    for o in body.output:
        o.name = renamed[o.name]
    body.initializer.extend(cv.initializers)
    model = onnx.helper.make_model(body, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                   producer_name="ember")
    model.ir_version = min(model.ir_version, 9)   # what current onnxruntime releases read
    onnx.checker.check_model(model)
    if path is not None:
        onnx.save(model, str(path))
    return model
