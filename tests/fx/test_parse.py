"""`ember.fx.parse(str(g))` rebuilds `g`: a corpus over every primitive family, control
flow, custom rules and checkpoint, literals of every dtype, and the parser's errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.fx
import ember.numpy as enp
from ember import lax
from ember.export import trace_custom_rules
from ember.fx.ir import Literal, eval_graph, typecheck
from ember.fx.parse import ParseError, graph_difference, parse
from ember.fx.printing import consts_in_order

X3 = np.linspace(-1.0, 1.0, 3).astype(np.float32)
M = np.arange(12, dtype=np.float32).reshape(3, 4) / 7.0
SPD = (np.eye(3) * 3 + 0.1).astype(np.float32)


@ember.custom_vjp
def clip_grad(x):
    return x * 1.0


clip_grad.defvjp(lambda x: (x * 1.0, None), lambda r, g: (enp.clip(g, -1.0, 1.0),))


@ember.custom_vjp
def sin_vjp(x, y):
    return enp.sin(x) * y


sin_vjp.defvjp(lambda x, y: (enp.sin(x) * y, (enp.cos(x), x, y)),
               lambda r, g: (r[0] * r[2] * g, enp.sin(r[1]) * g))


@ember.custom_jvp
def log1p_j(x):
    return enp.log1p(x)


log1p_j.defjvps(lambda t, ans, x: t / (1.0 + x))

W_CAPTURED = enp.asarray(M.T)


def _pool(x):
    return lax.reduce_window_max(x, (1, 2), (1, 2), "VALID")


CORPUS = {
    # the graph of tests/core/test_dtypes_and_ir.py::test_graph_printing_golden
    "golden": (lambda x: lax.max(lax.mul(lax.sin(x), np.float32(2.0)), np.float32(0.0)), (X3,)),
    "weak_scalar": (lambda x: x * 2.0 + 1, (1.0,)),
    "elementwise": (lambda x: enp.tanh(x) * enp.exp(-x) + enp.sqrt(enp.abs(x)) - x ** 3
                    + enp.where(x > 0, x, -0.0) + lax.clamp(-0.5, x, 0.5), (X3,)),
    "integer_ops": (lambda i: (i << 2) ^ (i >> 1) + i % 3 + (i // 2), (np.arange(4, dtype=np.int32),)),
    "literals": (lambda x: (x * np.float64(-0.0), x + np.float64(np.inf), enp.maximum(x, np.float64(np.nan)),
                            x.astype(np.float16) * np.float16(0.1), x.astype(ember.dtypes.bfloat16) + 1,
                            (x > 0).astype(np.uint8) + np.uint8(255), x.astype(np.complex64) * (1 - 2j)),
                 (X3.astype(np.float64),)),
    "convert": (lambda x: (x.astype(np.int32), lax.bitcast_convert_type(x, np.int32)), (X3,)),
    "shape": (lambda x: (enp.transpose(x), x.reshape(4, 3), x[None, :, 1:3], enp.flip(x, 0),
                        enp.pad(x, ((1, 0), (0, 2))), enp.concatenate([x, x], axis=1),
                        lax.dynamic_slice(x, (1, 1), (2, 2)), x[::2, ::-1],
                        lax.dynamic_update_slice(x, enp.ones((1, 2)), (0, 1)),
                        enp.broadcast_to(x[0], (2, 4)), enp.squeeze(x[:1])), (M,)),
    "indexing": (lambda x: (x[enp.array([2, 0])], x.at[1, 2].add(5.0), x.at[0].set(-1.0),
                            x.at[enp.array([0, 0])].mul(2.0), enp.take_along_axis(x, enp.argsort(x, axis=1), axis=1)),
                 (M,)),
    "reduce": (lambda x: (enp.sum(x, axis=0), enp.max(x), enp.argmax(x, axis=1), enp.prod(x, axis=1),
                          enp.min(x, axis=(0, 1)), enp.any(x > 1)), (M,)),
    "cumulative": (lambda x: (enp.cumsum(x, axis=1), enp.cumprod(x, axis=0)), (M,)),
    "sort": (lambda x: (enp.sort(x, axis=1), lax.top_k(x, 2)), (M,)),
    "contraction": (lambda x: (x @ x.T, enp.einsum("ij,kj->ik", x, x), x @ W_CAPTURED), (M,)),
    "conv": (lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"),
             (np.ones((1, 2, 5, 5), np.float32), np.ones((3, 2, 3, 3), np.float32))),
    "window": (lambda x: (_pool(x), lax.reduce_window_sum(x, (2, 2), (1, 1), "SAME")), (M,)),
    "grad_window": (ember.grad(lambda x: enp.sum(_pool(x) ** 2)), (M,)),
    "linalg": (lambda a: (enp.linalg.cholesky(a), enp.linalg.qr(a), enp.linalg.eigh(a),
                          enp.linalg.svd(a), enp.linalg.solve(a, a[0])), (SPD,)),
    "fft": (lambda x: (enp.fft.fft(x), enp.fft.rfft(x), enp.fft.irfft(enp.fft.rfft(x))), (X3,)),
    "random": (lambda k: (ember.random.normal(k, (3,)), ember.random.uniform(k, (2,))),
               (ember.random.key(0),)),
    "grad": (ember.grad(lambda x: enp.sum(enp.tanh(x @ W_CAPTURED) ** 2)), (M,)),
    "vmap": (ember.vmap(lambda v: enp.sum(v ** 2)), (M,)),
    "cond": (lambda x: ember.cond(x.sum() > 0, lambda u: u * 2.0, lambda u: -u, x), (X3,)),
    "switch": (lambda i, x: lax.switch(i, [lambda u: u, lambda u: u * u, lambda u: enp.sin(u)], x),
               (1, X3)),
    "scan": (lambda c: ember.scan(lambda c, x: (c + x, c * x), c, enp.arange(4.0)), (0.0,)),
    "scan_grad": (ember.grad(lambda w: ember.scan(lambda h, x: (enp.tanh(h * w + x), h), 0.0,
                                                  enp.arange(3.0))[0]), (0.5,)),
    "while": (lambda x: lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x), (1.0,)),
    "fori": (lambda x: lax.fori_loop(0, 3, lambda i, c: c + i, x), (X3,)),
    "jit_nested": (ember.jit(lambda x: enp.exp(x) * -0.0), (X3,)),
    "checkpoint": (ember.checkpoint(lambda x: enp.exp(x) * x), (X3,)),
    "checkpoint_policy": (ember.grad(lambda x: enp.sum(ember.checkpoint(
        lambda y: enp.sin(ember.checkpoint_name(y * 2.0, "h")), policy=ember.save_only_these_names("h"))(x))),
        (X3,)),
    "checkpoint_dots": (ember.checkpoint(lambda x: x @ x.T, policy=ember.dots_saveable), (M,)),
    "custom_vjp": (lambda x: clip_grad(x) * sin_vjp(x, x), (X3,)),
    "custom_vjp_grad": (ember.grad(lambda x: enp.sum(sin_vjp(x, x))), (X3,)),
    "custom_vjp_vmap": (ember.vmap(lambda x: sin_vjp(x, x)), (M,)),
    "custom_jvp": (lambda x: log1p_j(x * x), (X3,)),
    "custom_jvp_grad": (ember.grad(lambda x: enp.sum(log1p_j(x * x))), (X3,)),
    "no_inputs": (lambda: enp.arange(3) * 2, ()),
}


def _roundtrip(g):
    text = str(g)
    h = parse(text, consts=consts_in_order(g))
    assert graph_difference(g, h) is None, graph_difference(g, h)
    assert str(h) == text
    typecheck(h)
    return h


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_roundtrip_corpus(name):
    fn, args = CORPUS[name]
    g = trace_custom_rules(ember.make_graph(fn)(*args))
    h = _roundtrip(g)
    ref = eval_graph(g.graph, g.consts, *[enp.asarray(a) for a in args])
    got = eval_graph(h.graph, h.consts, *[enp.asarray(a) for a in args])
    assert len(ref) == len(got) > 0
    for r, o in zip(ref, got):
        np.testing.assert_array_equal(np.asarray(o), np.asarray(r))


def test_parse_is_module_and_callable():
    g = ember.make_graph(lambda x: enp.sin(x))(X3)
    assert ember.fx.parse.structurally_equal(ember.fx.parse(str(g)), g)


def test_structural_equality_sees_differences():
    mk = ember.make_graph
    assert graph_difference(mk(lambda x: x * 0.0)(X3), mk(lambda x: x * -0.0)(X3)) is not None
    assert graph_difference(mk(lambda x: x + 1.0)(X3), mk(lambda x: x + 1.0)(X3[:2])) is not None
    assert "param axes" in graph_difference(mk(lambda x: x.sum(0))(M), mk(lambda x: x.sum(1))(M))
    assert "weak" in graph_difference(mk(lambda x: x + 1)(1.0), mk(lambda x: x + 1)(np.float32(1.0)))


def test_printing_marks_weak_types_and_literal_dtypes():
    text = str(ember.make_graph(lambda x: (x * 2, x.astype(np.float64) - 0.5))(1.0))
    assert "a:f32[]~" in text and "0.5:f64" in text


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["float16", "bfloat16", "float32", "float64", "int8", "uint32", "int64", "bool"]),
       st.floats(allow_nan=True, allow_infinity=True, width=32) | st.sampled_from([-0.0, math.nan, -math.inf]),
       st.booleans())
def test_literal_roundtrip(dtype, value, weak):
    d = ember.dtypes.canonicalize(dtype)
    with np.errstate(all="ignore"):
        v = np.asarray(value if ember.dtypes.is_inexact(d) else (0 if not math.isfinite(value) else
                                                                  int(abs(value)) % 100), d)[()]
    lit = Literal(v, ember.fx.core.AbstractArray((), d, weak))
    x = ember.fx.ir.Var(ember.fx.core.AbstractArray((2,), d))
    out = ember.fx.ir.Var(ember.fx.core.AbstractArray((2,), d))
    prim = ember.fx.core.PRIMITIVES["max"]
    eq = ember.fx.ir.Equation(prim, [x, lit], [out], {})
    g = ember.fx.ir.ClosedGraph(ember.fx.ir.Graph([], [x], [eq], [out]), [])
    h = _roundtrip(g)
    got = h.equations[0].inputs[1]
    assert got.aval == lit.aval and got.key == lit.key


@pytest.mark.parametrize("bits, dtype", [(0x7FC00001, np.uint32), (0xFFC00000, np.uint32),
                                         (0x7FF0000000000123, np.uint64), (0xFE01, np.uint16)])
def test_nan_payloads_roundtrip(bits, dtype):
    fdt = {np.uint32: np.float32, np.uint64: np.float64, np.uint16: np.float16}[dtype]
    nan = np.asarray(bits, dtype).view(fdt)[()]
    g = ember.make_graph(lambda x: enp.maximum(x, nan))(np.ones(2, fdt))
    assert "nan0x" in str(g)
    h = _roundtrip(g)
    assert h.equations[0].inputs[1].value.tobytes() == nan.tobytes()


@pytest.mark.parametrize("text, match", [
    ("{ lambda ; a:f32[3]. let\n    b:f32[3] = frobnicate a\n  in (b,) }", "unknown primitive 'frobnicate'"),
    ("{ lambda ; a:f32[3]. let\n    b:f32[4] = sin a\n  in (b,) }", r"gives float32\[3\] but the text says float32\[4\]"),
    ("{ lambda ; a:f32[3]. let\n    b:f32[3] = sin c\n  in (b,) }", "variable c is used before"),
    ("{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n  in (b,) } extra", "after the graph"),
    ("{ lambda ; a:q32[3]. let\n  in (a,) }", "expected a dtype"),
    ("{ lambda a:f32[3] ; . let\n  in (a,) }", "consts="),
    ("{ lambda ; a:f32[3]. let\n    b:f32[3] = remat[graph=\n { lambda ; a:f32[3]. let\n in (a,) }"
     " policy=@os.system] a\n  in (b,) }", "Python function 'os.system'"),
    ("{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n  in (b,)", "expected '}'"),
    ("{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n  in (b,) } $", "unexpected character"),
])
def test_parse_errors(text, match):
    with pytest.raises(ParseError, match=match):
        parse(text)


def test_parse_rejects_python_rule_with_hint():
    g = ember.make_graph(lambda x: clip_grad(x))(X3)
    with pytest.raises(ParseError, match="trace_custom_rules"):
        parse(str(g))
    with pytest.raises(TypeError, match="expected the IR text"):
        parse(b"{ lambda ; . let in () }")


def _recording_make_graph(monkeypatch):
    """Wrap ember.make_graph so that every graph a test builds is recorded."""
    made, real = [], ember.make_graph

    def make_graph(fun, *a, **k):
        inner = real(fun, *a, **k)

        def wrapped(*args, **kwargs):
            out = inner(*args, **kwargs)
            made.append(out[0] if isinstance(out, tuple) else out)
            return out
        return wrapped
    monkeypatch.setattr(ember, "make_graph", make_graph)
    return made


def test_roundtrip_of_the_printing_tests_graphs(monkeypatch, tmp_path):
    """Every graph the suite's printing tests print (the golden test and the IR chapter's
    blocks) round-trips."""
    import importlib.util
    import pathlib
    root = pathlib.Path(__file__).resolve().parents[2]
    made = _recording_make_graph(monkeypatch)
    spec = importlib.util.spec_from_file_location("ir_printing_tests", root / "tests/core/test_dtypes_and_ir.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.test_graph_printing_golden()
    spec = importlib.util.spec_from_file_location("docs_runner", root / "tests/docs/test_docs.py")
    docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(docs)
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):
        for line, source in docs.python_blocks((root / "docs/ir.md").read_text()):
            exec(compile("\n" * (line - 1) + source, "docs/ir.md", "exec"), ns)
    assert len(made) >= 8
    for g in made:
        _roundtrip(trace_custom_rules(g))


def test_deeply_nested_subgraphs_print_and_parse_without_recursion():
    from ember.fx.core import AbstractArray, PRIMITIVES
    from ember.fx.ir import ClosedGraph, Equation, Graph, Var
    aval = AbstractArray((2,), "float32")
    x = Var(aval)
    y = Var(aval)
    inner = ClosedGraph(Graph([], [x], [Equation(PRIMITIVES["sin"], [x], [y], {})], [y]), [])
    for _ in range(1500):    # beyond Python's recursion limit
        a, b = Var(aval), Var(aval)
        eq = Equation(PRIMITIVES["jit_call"], [a], [b], {"graph": inner, "name": "f", "backend": "cpu"})
        inner = ClosedGraph(Graph([], [a], [eq], [b]), [])
    text = str(inner)
    back = parse(text)
    assert graph_difference(inner, back) is None
    assert text.count("jit_call") == 1500
