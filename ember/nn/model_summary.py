"""`summary(model, input_shape)`: a table of every submodule call with its output
shape and parameter count, and the model's totals.

The forward pass runs under `ember.eval_shape` (traced on abstract inputs, no
array math on them) with temporary global forward hooks (`nn.hooks`): a
pre-hook opens a row when a module is entered, so rows come in call order with
parents before their children, and the forward hook fills in the output's
shapes.  The first row is the model itself; a module called twice gets two
rows.  Each row counts the parameters of that module and everything below it (so
nested rows overlap); the totals count each parameter once.

Example:
    >>> from ember import nn
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> _ = nn.summary(model, (16, 4))
    Layer (type)    Output shape    Param #
    =======================================
    Sequential      (16, 2)              58
      0 (Linear)    (16, 8)              40
      1 (ReLU)      (16, 8)               0
      2 (Linear)    (16, 2)              18
    =======================================
    Total params: 58
    Trainable params: 58
    Non-trainable params: 0
    Output: (16, 2) float32
"""
from __future__ import annotations

from .. import dtypes as _dt
from ..fx.core import Tracer, get_aval
from ..array import Array

__all__ = ["summary", "ModelSummary"]


class ModelSummary:
    """What `summary` returns: `rows` as (name, type, output shapes, parameter
    count, depth), the totals, and the table (`str(s)`).

    Example:
        >>> from ember import nn
        >>> s = nn.summary(nn.Linear(3, 2), (1, 3), print_summary=False)
        >>> s.total_params, s.rows[0][:2]
        (8, ('', 'Linear'))
    """

    def __init__(self, rows, total, trainable, output):
        self.rows = rows
        self.total_params = total
        self.trainable_params = trainable
        self.output = output

    def __str__(self):
        head = ("Layer (type)", "Output shape", "Param #")
        body = [("  " * depth + (f"{name} ({kind})" if name else kind), shapes, f"{n:,}")
                for name, kind, shapes, n, depth in self.rows]
        w = [max(len(r[i]) for r in [head] + body) for i in range(3)]
        gap = "    "

        def line(r):
            return f"{r[0]:<{w[0]}}{gap}{r[1]:<{w[1]}}{gap}{r[2]:>{w[2]}}".rstrip()
        rule = "=" * (sum(w) + 2 * len(gap))
        out = [line(head), rule] + [line(r) for r in body] + [rule]
        out += [f"Total params: {self.total_params:,}", f"Trainable params: {self.trainable_params:,}",
                f"Non-trainable params: {self.total_params - self.trainable_params:,}",
                f"Output: {self.output}"]
        return "\n".join(out)

    __repr__ = __str__


def _describe(out, with_dtype=False):
    from .. import tree
    leaves, treedef = tree.flatten(out)
    descs = []
    for leaf in leaves:
        if isinstance(leaf, (Array, Tracer)) or hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
            a = get_aval(leaf) if isinstance(leaf, (Array, Tracer)) else leaf
            s = str(tuple(a.shape))
            descs.append(f"{s} {_dt.canonicalize(a.dtype)}" if with_dtype else s)
        else:
            descs.append(type(leaf).__name__)
    if len(descs) == 1:
        return descs[0]
    return "[" + ", ".join(descs) + "]"


def summary(model, input_shape, dtype=None, *, print_summary: bool = True, **kwargs) -> ModelSummary:
    """Print (and return) the table of `model`'s submodule calls for inputs of
    `input_shape` (the full shape, batch included; a list of shapes for several
    inputs) and `dtype` (default float32; one dtype or one per input); `kwargs`
    go to the forward call.  Nothing is computed on the inputs: shapes come from
    `ember.eval_shape`.

    Example:
        >>> from ember import nn
        >>> s = nn.summary(nn.Conv2d(3, 4, 3), (1, 3, 8, 8), print_summary=False)
        >>> s.rows[0][2], s.total_params
        ('(1, 4, 6, 6)', 112)
    """
    import ember
    from .. import random
    from .hooks import register_module_forward_hook, register_module_forward_pre_hook
    from .module import Module, functional_call
    if not isinstance(model, Module):
        raise TypeError(f"summary expects an nn.Module, got {type(model).__name__}")
    shapes = input_shape
    if isinstance(shapes, (tuple, list)) and shapes and all(isinstance(s, int) for s in shapes):
        shapes = [tuple(shapes)]
    elif not (isinstance(shapes, (tuple, list)) and shapes and all(isinstance(s, (tuple, list)) for s in shapes)):
        raise TypeError(f"summary: input_shape must be a shape like (8, 4) or a list of shapes, got "
                        f"{input_shape!r}")
    dtypes = dtype if isinstance(dtype, (tuple, list)) else [dtype] * len(shapes)
    if len(dtypes) != len(shapes):
        raise ValueError(f"summary: {len(dtypes)} dtypes for {len(shapes)} input shapes")
    specs = [ember.ShapeDtypeStruct(tuple(s), _dt.float32 if d is None else _dt.canonicalize(d))
             for s, d in zip(shapes, dtypes)]
    names = {}
    for name, m in model.named_modules():
        names.setdefault(id(m), name)
    rows, stack = [], []

    def pre(module, args):
        name = names.get(id(module), "?")
        rows.append([name, type(module).__name__, "?", module.num_parameters(), len(stack)])
        stack.append(len(rows) - 1)
        return None

    def post(module, args, out):
        rows[stack.pop()][2] = _describe(out)
        return None

    with register_module_forward_pre_hook(pre), register_module_forward_hook(post):
        out = ember.eval_shape(lambda *xs: functional_call(model, {}, *xs, rng=random.key(0), **kwargs)[0],
                               *specs)
    result = ModelSummary([tuple(r) for r in rows], model.num_parameters(),
                          model.num_parameters(trainable_only=True), _describe(out, with_dtype=True))
    if print_summary:
        print(result)
    return result
