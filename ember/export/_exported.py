"""`export` and `Exported`: a staged function with its structures, avals, graph and consts, callable without its source.

`Exported.call` binds `jit_call` with the stored graph, so `jit`, `vmap` and
`grad` of it go through jit_call's rules exactly as for a jitted function.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..fx.core import AbstractArray, Tracer
from ..fx.ir import ClosedGraph, Graph
from ..fx.parse import ParseError, graph_difference, parse
from ..fx.printing import consts_in_order, format_graph
from ..fx.staging import ShapeDtypeStruct, consts_to_inputs
from ..tree import tree_flatten, tree_unflatten
from . import _serialize, _symbolic
from ._pytree import tree_from_json, tree_to_json
from ._rules import trace_custom_rules

PLATFORMS = ("cpu", "reference", "cuda")


class ExportError(ValueError):
    """An export or deserialization failed: says what and how to fix it.

    Example:
        >>> try:
        ...     deserialize(b"not an export")
        ... except ExportError as e:
        ...     print(e)
        cannot deserialize: not an ember export file (it does not start with the magic b'EMBEREXP')
    """


def _spec_of(x, name):
    """(shape with ints and names, dtype, weak) of one argument leaf."""
    if isinstance(x, ShapeDtypeStruct):
        shape = tuple(d if isinstance(d, str) else int(d) for d in x.shape)
        for d in shape:
            if isinstance(d, str) and not d.isidentifier():
                raise ExportError(f"export: argument `{name}` has symbolic dimension {d!r}; a "
                                  f"symbolic dimension is a name such as 'b'")
        return shape, _dt.canonicalize(x.dtype), bool(x.weak_type)
    from ..transforms.jit import _to_operand
    try:
        a = _to_operand(x)[1]
    except TypeError:
        raise ExportError(f"export: argument `{name}` is a {type(x).__name__}; pass arrays, "
                          f"Python scalars or ember.ShapeDtypeStruct") from None
    return a.shape, a.dtype, a.weak_type


def _shape_str(shape, dtype) -> str:
    name = "float0" if dtype == _dt.float0 else np.dtype(dtype).name
    return f"{name}[{','.join(str(d) for d in shape)}]"


def _as_jit(fun):
    from ..transforms.jit import JitFunction, jit
    if isinstance(fun, JitFunction):
        return fun
    from ..nn.module import Module
    from ..nn.train import CompiledForward
    if isinstance(fun, CompiledForward):
        fun = fun.model
    if isinstance(fun, Module):
        model = fun

        def forward(*args, **kwargs):
            return model(*args, **kwargs)
        forward.__name__ = f"{type(model).__name__}.forward"
        return JitFunction(forward)
    if not callable(fun):
        raise ExportError(f"export: expected a function, a jitted function or an nn.Module, got "
                          f"{type(fun).__name__}")
    return jit(fun)


def stage(fun, args, kwargs=None):
    """(optimised ClosedGraph with its consts, in_tree, out_tree, argument names) of
    `fun` for concrete example arguments: the staging `export` and `ember.onnx` share.

    Example:
        >>> import ember.numpy as enp
        >>> closed, _, _, names = stage(lambda x, y: x * y, (enp.ones(2), 2.0))
        >>> [e.prim.name for e in closed.equations], names
        (['mul'], ['x', 'y'])
    """
    jf = _as_jit(fun)
    kwargs = kwargs or {}
    from ..transforms.util import argument_names
    static, dyn_args, dyn_kwargs, nums = jf._signature(tuple(args), kwargs)
    leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
    arg_names = argument_names(jf.fun, in_tree, [i for i in range(len(args)) if i not in nums],
                               with_kwargs=True)
    avals = []
    for x, n in zip(leaves, arg_names):
        s, dt, w = _spec_of(x, n)
        if any(isinstance(d, str) for d in s):
            raise ExportError(f"argument `{n}` has a symbolic shape {s}; give concrete sizes here")
        avals.append(AbstractArray(s, dt, w))
    closed, out_tree = _trace_entry(jf, args, static, nums, in_tree, avals)
    return closed, in_tree, out_tree, arg_names


def _trace_entry(jf, args, static, nums, in_tree, avals):
    e = jf._trace(args, static, nums, in_tree, avals)
    if not e.cacheable:
        raise ExportError("export: the function closes over values of an enclosing "
                          "transform; export it outside any jit/grad/vmap")
    nc = len(e.consts)
    g = e.graph.graph
    closed = ClosedGraph(Graph(g.inputs[:nc], g.inputs[nc:], g.equations, g.outputs),
                         [np.asarray(c) for c in e.const_buffers])
    return trace_custom_rules(closed), e.out_tree


def export(fun, *, platforms=None, with_vjp: bool = False):
    """`export(fn)(*args)`: stage `fn` (a jitted or plain function, or an nn.Module,
    whose parameters become consts) for arguments like `args` (arrays, Python
    scalars, or `ember.ShapeDtypeStruct`, where a dimension may be a name such as
    `"b"`: the graph then accepts any size there) and return an `Exported`.

    `platforms` are the backends the artifact may run on (default: all of
    "cpu", "reference", "cuda"; the first is used by `call`).  `with_vjp=True`
    checks at export time that the stored graph can be differentiated in reverse
    mode (the VJP is re-derived from the stored graph when `grad` needs it: every
    primitive in it keeps its rules, custom_vjp rules as traced graphs).

    Example:
        >>> import ember, ember.numpy as enp
        >>> e = export(ember.jit(lambda x, y: {"s": x + y}))(enp.ones(2), 1.0)
        >>> e.call(enp.ones(2), 2.0)["s"].tolist(), e.in_avals[1]
        ([3.0, 3.0], ShapeDtypeStruct(shape=(), dtype=float32))
    """
    jf = _as_jit(fun)
    if platforms is None:
        platforms = PLATFORMS
    platforms = tuple(platforms)
    for p in platforms:
        if p not in PLATFORMS:
            raise ExportError(f"export: unknown platform {p!r}; expected some of {PLATFORMS}")

    def exporter(*args, **kwargs):
        from ..transforms.util import argument_names
        static, dyn_args, dyn_kwargs, nums = jf._signature(args, kwargs)
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        arg_names = argument_names(jf.fun, in_tree, [i for i in range(len(args)) if i not in nums],
                                   with_kwargs=True)
        specs = [_spec_of(x, n) for x, n in zip(leaves, arg_names)]
        names = list(dict.fromkeys(d for s, _, _ in specs for d in s if isinstance(d, str)))

        def trace(sizes):
            avals = [AbstractArray(tuple(sizes[d] if isinstance(d, str) else d for d in s), dt, w)
                     for s, dt, w in specs]
            return _trace_entry(jf, args, static, nums, in_tree, avals)

        base = {n: _symbolic.BASE for n in names}
        closed, out_tree = trace(base)
        text = format_graph(closed.graph)
        consts = consts_in_order(closed)
        _check_parses(text, consts, closed)
        slots, out_shapes = [], [a.shape for a in closed.out_avals]
        if names:
            varied = {}
            outs_varied = {}
            for n in names:
                g_n, _ = trace({**base, n: _symbolic.BASE + 1})
                varied[n] = format_graph(g_n.graph)
                outs_varied[n] = [a.shape for a in g_n.out_avals]
                _same_consts(consts, consts_in_order(g_n), n)
            try:
                slots = _symbolic.template(text, varied)
            except ValueError as e:
                raise ExportError(f"export: cannot make {', '.join(names)} symbolic: {e}") from None
            check = {n: 5 + 2 * i for i, n in enumerate(names)}
            g_c, _ = trace(check)
            if _symbolic.instantiate(text, slots, check) != format_graph(g_c.graph):
                raise ExportError(f"export: cannot make {', '.join(names)} symbolic: the graph is "
                                  f"not an affine function of the sizes (traced at {check}, it "
                                  f"differs from the template)")
            out_shapes = _symbolic_out_shapes(closed, outs_varied)
        header = {
            "format": "ember.export",
            "fun_name": getattr(jf.fun, "__name__", "fun"),
            "in_tree": tree_to_json(in_tree, "the arguments' structure"),
            "out_tree": tree_to_json(out_tree, "the result's structure"),
            "arg_names": arg_names,
            "in_shapes": [[list(s), _dt.canonicalize(dt).name, w] for s, dt, w in specs],
            "out_shapes": [[list(s), a.dtype.name if a.dtype != _dt.float0 else "float0", a.weak_type]
                           for s, a in zip(out_shapes, closed.out_avals)],
            "symbols": names,
            "slots": slots,
            "platforms": list(platforms),
            "with_vjp": bool(with_vjp),
            "num_consts": len(consts),
        }
        exp = Exported(header, text, consts, closed)
        if with_vjp:
            _check_vjp(exp)
        return exp

    return exporter


def _check_parses(text, consts, closed):
    try:
        back = parse(text, consts=consts)
    except ParseError as e:
        raise ExportError(f"export: the staged graph has a param the IR text cannot carry: {e}") from None
    d = graph_difference(closed, back)
    if d is not None:
        raise ExportError(f"export: the staged graph does not survive printing and parsing ({d})")


def _same_consts(a, b, name):
    from ..fx.ir import constant_key
    if len(a) != len(b) or any(x.shape != y.shape or constant_key(x, x.dtype) != constant_key(y, y.dtype)
                               for x, y in zip(a, b)):
        raise ExportError(f"export: the function's captured constants depend on the size {name}; "
                          f"it cannot be symbolic")


def _symbolic_out_shapes(closed, outs_varied):
    out = []
    for j, a in enumerate(closed.out_avals):
        dims = []
        for k, d in enumerate(a.shape):
            coeffs = {n: shapes[j][k] - d for n, shapes in outs_varied.items()}
            const = d - sum(c * _symbolic.BASE for c in coeffs.values())
            dims.append(_symbolic.dim_expr(const, coeffs))
        out.append(tuple(dims))
    return out


def _check_vjp(exp):
    from ..fx.staging import trace_flat
    from ..transforms.vjp import vjp
    base = {n: _symbolic.BASE for n in exp.symbols}
    avals = [AbstractArray(tuple(base[d] if isinstance(d, str) else d for d in s), dt, w)
             for s, dt, w in exp._in_specs]
    diff = [i for i, a in enumerate(avals) if _dt.is_inexact(a.dtype)]

    def pullback(*xs):
        def inexact_outputs(*ds):
            full = list(xs)
            for i, d in zip(diff, ds):
                full[i] = d
            return [o for o in exp._bind(full, base) if _dt.is_inexact(o.aval.dtype)]
        out, pull = vjp(inexact_outputs, *[xs[i] for i in diff])
        return list(pull(out))

    try:
        trace_flat(pullback, avals)
    except Exception as e:  # what the VJP cannot do, said at export time rather than at use
        raise ExportError(f"export(with_vjp=True): the exported graph cannot be differentiated: "
                          f"{type(e).__name__}: {e}") from None


class Exported:
    """An exported function: `call(*args)` runs it; `serialize()` writes it.

    Attributes: `fun_name`, `in_tree` / `out_tree` (pytree structures of
    `(args, kwargs)` and of the result), `in_avals` / `out_avals`
    (`ShapeDtypeStruct`s, a symbolic dimension as its name), `graph` (the
    optimised `ClosedGraph`, at size 2 for symbolic dimensions), `consts`,
    `platforms`.

    Example:
        >>> import ember, ember.numpy as enp
        >>> e = export(ember.jit(enp.tanh))(ember.ShapeDtypeStruct(("b",), "float32"))
        >>> e.in_avals[0].shape, e.call(enp.zeros(5)).shape
        (('b',), (5,))
    """

    def __init__(self, header: dict, text: str, consts, graph: ClosedGraph | None = None):
        self._header = header
        self._text = text
        self.consts = list(consts)
        self.fun_name = header["fun_name"]
        self.in_tree = tree_from_json(header["in_tree"], "the arguments' structure")
        self.out_tree = tree_from_json(header["out_tree"], "the result's structure")
        self.arg_names = list(header["arg_names"])
        self.symbols = list(header["symbols"])
        self.platforms = tuple(header["platforms"])
        self.backend = self.platforms[0]
        self._in_specs = [(tuple(s), _dt.canonicalize(d), bool(w)) for s, d, w in header["in_shapes"]]
        self._out_specs = [(tuple(s), _dt.canonicalize(d) if d != "float0" else _dt.float0, bool(w))
                           for s, d, w in header["out_shapes"]]
        self._instances: dict = {}
        if graph is None:
            graph = parse(text, consts=self.consts) if not self.symbols else None
        self._graph = graph

    # --- what it is -----------------------------------------------------------------
    @property
    def graph(self) -> ClosedGraph:
        if self._graph is None:
            self._graph = self._graph_for({n: _symbolic.BASE for n in self.symbols})[2]
        return self._graph

    @property
    def in_avals(self) -> tuple:
        return tuple(ShapeDtypeStruct(s, d, w) for s, d, w in self._in_specs)

    @property
    def out_avals(self) -> tuple:
        return tuple(ShapeDtypeStruct(s, d, w) for s, d, w in self._out_specs)

    @property
    def with_vjp(self) -> bool:
        return bool(self._header.get("with_vjp"))

    def __repr__(self):
        ins = ", ".join(_shape_str(s, d) for s, d, _ in self._in_specs)
        return f"Exported({self.fun_name}({ins}) on {'/'.join(self.platforms)})"

    def on(self, backend: str) -> "Exported":
        """The same artifact, run by `call` on `backend` (one of `platforms`).

        Example:
            >>> import ember, ember.numpy as enp
            >>> e = export(ember.jit(lambda x: x * 2.0))(enp.ones(2)).on("reference")
            >>> e.call(enp.ones(2)).tolist()
            [2.0, 2.0]
        """
        if backend not in self.platforms:
            raise ExportError(f"{self.fun_name} was exported for {list(self.platforms)}, not for "
                              f"{backend!r}; export with platforms=[..., {backend!r}]")
        from ..backends.base import available_backends
        if backend not in available_backends():
            raise ExportError(f"{self.fun_name}: the {backend!r} backend is not available here "
                              f"(available: {available_backends()}); the artifact itself is "
                              f"backend-neutral, so load it where that backend is installed")
        other = Exported(self._header, self._text, self.consts, self._graph)
        other._instances = self._instances
        other.backend = backend
        return other

    # --- running it -------------------------------------------------------------------
    def _graph_for(self, sizes: dict):
        """(const-free jit graph, consts, ClosedGraph) for concrete symbolic sizes."""
        key = tuple(sorted(sizes.items()))
        hit = self._instances.get(key)
        if hit is None:
            if self.symbols:
                text = _symbolic.instantiate(self._text, self._header["slots"], sizes)
                try:
                    closed = parse(text, consts=self.consts)
                except ParseError as e:
                    raise ExportError(f"{self.fun_name}: the exported graph does not hold for sizes "
                                      f"{dict(sizes)}: {e}") from None
            else:
                closed = self._graph if self._graph is not None else parse(self._text, consts=self.consts)
            g, consts = consts_to_inputs(closed)
            hit = self._instances[key] = (g, consts, closed)
        return hit

    def _check_args(self, leaves) -> dict:
        from ..transforms.jit import _to_operand
        sizes: dict = {}
        where: dict = {}
        ops = []
        for x, (shape, dtype, _), name in zip(leaves, self._in_specs, self.arg_names):
            try:
                op, a = (x, x.aval) if isinstance(x, Tracer) else _to_operand(x)
            except TypeError:
                raise TypeError(f"{self.fun_name}: argument `{name}` is a {type(x).__name__}, not an "
                                f"array") from None
            want = _shape_str(shape, dtype)
            if a.dtype != dtype or len(a.shape) != len(shape):
                raise TypeError(f"{self.fun_name}: argument `{name}` is {a.str_user()} but the "
                                f"exported function takes {want}")
            for k, (d, n) in enumerate(zip(shape, a.shape)):
                if isinstance(d, str):
                    if d in sizes and sizes[d] != n:
                        raise TypeError(f"{self.fun_name}: argument `{name}` is {a.str_user()}, "
                                        f"so {d} = {n}, but `{where[d]}` gave {d} = {sizes[d]} "
                                        f"(the exported function takes {want})")
                    sizes[d], where[d] = n, name
                elif d != n:
                    raise TypeError(f"{self.fun_name}: argument `{name}` is {a.str_user()} but the "
                                    f"exported function takes {want} (axis {k} must be {d})")
            ops.append(op)
        return sizes, ops

    def _bind(self, leaves, sizes):
        from ..transforms.jit import jit_call_p
        g, consts, _ = self._graph_for(sizes)
        return jit_call_p.bind(*consts, *leaves, graph=g, name=f"exported({self.fun_name})",
                               backend=self.backend)

    def call(self, *args, **kwargs):
        """Run the exported function on `args` (checked against the exported
        structure, dtypes and shapes; a symbolic dimension takes any size, the
        same wherever its name appears).  Composes with jit, vmap and grad.

        Example:
            >>> import ember, ember.numpy as enp
            >>> e = export(ember.jit(lambda x: enp.sum(x ** 2)))(enp.ones(3))
            >>> ember.grad(e.call)(enp.ones(3)).tolist()
            [2.0, 2.0, 2.0]
        """
        leaves, tree = tree_flatten((list(args), kwargs))
        if tree != self.in_tree:
            raise TypeError(f"{self.fun_name}: the arguments have structure {tree}, but the "
                            f"exported function takes {self.in_tree}")
        sizes, ops = self._check_args(leaves)
        outs = self._bind(ops, sizes)
        return tree_unflatten(self.out_tree, list(outs))

    __call__ = call

    def serialize(self) -> bytes:
        """The artifact as bytes (the format of docs/export.md): no pickle, no code."""
        return _serialize.pack(self._header, self._text, self.consts)


def deserialize(data) -> Exported:
    """Read `Exported.serialize()` output back; runs no code, unpickles nothing.

    Example:
        >>> import ember, ember.numpy as enp
        >>> blob = export(ember.jit(lambda x: x + 1.0))(enp.ones(2)).serialize()
        >>> deserialize(blob).call(enp.ones(2)).tolist()
        [2.0, 2.0]
    """
    header, text, consts = _serialize.unpack(data)
    try:
        return Exported(header, text, consts)
    except ParseError as e:
        raise ExportError(f"cannot deserialize: the graph text is not valid: {e}") from None
    except (KeyError, TypeError, ValueError) as e:
        if isinstance(e, ExportError):
            raise
        raise ExportError(f"cannot deserialize: the header is malformed ({type(e).__name__}: {e})") from None
