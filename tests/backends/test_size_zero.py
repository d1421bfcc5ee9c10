"""Size-0 operands under jit, family by family, against the reference
interpreter and eager execution (issue #12, item 6): an equation with an empty
result is an empty kernel, and a fused read of an empty operand (pad,
concatenate) is a constant, never a load."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import jit, lax
from ember.backends.llvm.executable import compile_graph
from ember.fx.interpreter import run_graph_numpy

F32 = np.float32
DN = lax.ScatterDimensionNumbers((), (0,), (0,))


def _conv(x, w):
    return lax.conv_general_dilated(x, w, (1,), "SAME")


CASES = {
    # elementwise, convert, select, iota
    "neg": (lax.neg, [(0,)]),
    "exp": (lax.exp, [(2, 0)]),
    "add": (lax.add, [(0, 3), (0, 3)]),
    "max_scalar": (lambda x: lax.max(x, F32(0)), [(0,)]),
    "convert": (lambda x: lax.convert_element_type(x, np.float16), [(0, 2)]),
    "select": (lambda x: lax.select_n(x > 0, x, -x), [(3, 0)]),
    "clamp": (lambda x: lax.clamp(F32(-1), x, F32(1)), [(0,)]),
    "iota": (lambda x: lax.iota(np.int32, (0, 4), 1), [(0,)]),
    # movement
    "broadcast": (lambda x: lax.broadcast_in_dim(x, (2, 0, 3), (1, 2)), [(0, 3)]),
    "broadcast_to_empty": (lambda x: lax.broadcast_in_dim(x, (0, 3), (1,)), [(3,)]),
    "reshape": (lambda x: lax.reshape(x, (3, 0)), [(0, 3)]),
    "transpose": (lambda x: lax.transpose(x, (1, 0)), [(2, 0)]),
    "rev": (lambda x: lax.rev(x, (0,)), [(0, 2)]),
    "slice_to_empty": (lambda x: lax.slice(x, (1,), (1,)), [(4,)]),
    "slice_of_empty": (lambda x: lax.slice(x, (0, 1), (0, 3)), [(0, 3)]),
    "pad_empty": (lambda x: lax.pad(x, F32(7), ((2, 1, 0),)), [(0,)]),
    "pad_empty_interior": (lambda x: lax.pad(x, F32(7), ((1, 1, 2), (0, 0, 0))), [(0, 2)]),
    "concat_all_empty_0": (lambda x: lax.concatenate([x, x], 0), [(0,)]),
    "concat_all_empty_03": (lambda x: lax.concatenate([x, x], 0), [(0, 3)]),
    "concat_all_empty_20": (lambda x: lax.concatenate([x, x], 1), [(2, 0)]),
    "concat_mixed": (lambda x, y: lax.concatenate([x, y, x], 0), [(0, 3), (2, 3)]),
    "concat_then_pad": (lambda x: lax.pad(lax.concatenate([x, x], 0), F32(1), ((1, 1, 0),)), [(0,)]),
    "gather": (lambda x: enp.take(x, np.zeros((0,), np.int32), axis=0), [(3, 2)]),
    "gather_from_empty": (lambda x: enp.take(x, np.zeros((2,), np.int32), axis=1), [(0, 3)]),
    # reductions
    "sum_empty_axis": (lambda x: lax.reduce_sum(x, (0,)), [(0, 3)]),
    "max_empty_axis": (lambda x: lax.reduce_max(x, (1,)), [(2, 0)]),
    "prod_all": (lambda x: lax.reduce_prod(x, (0, 1)), [(0, 3)]),
    "sum_kept_empty": (lambda x: lax.reduce_sum(x, (1,)), [(0, 3)]),
    "softmax_rows": (lambda x: enp.exp(x) / enp.sum(enp.exp(x), axis=1, keepdims=True), [(0, 5)]),
    # products, convolutions, scatters
    "dot_k0": (lambda x, y: x @ y, [(3, 0), (0, 4)]),
    "dot_m0": (lambda x, y: x @ y, [(0, 5), (5, 4)]),
    "dot_k1_empty": (lambda x, y: x @ y, [(0, 1), (1, 4)]),
    "conv_batch0": (_conv, [(0, 2, 5), (3, 2, 3)]),
    "scatter_add_no_updates": (lambda x, u: lax.scatter_add(x, np.zeros((0, 1), np.int32), u, DN), [(4,), (0,)]),
    "scatter_max_no_updates": (lambda x, u: lax.scatter_max(x, np.zeros((0, 1), np.int32), u, DN), [(4,), (0,)]),
    # library steps
    "sort": (lambda x: lax.sort(x), [(0,)]),
    "cumsum": (lambda x: lax.cumsum(x, 1), [(2, 0)]),
    "reduce_window": (lambda x: lax.reduce_window_sum(x, (1,), (1,)), [(0,)]),
}


def _args(shapes):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(F32) for s in shapes]


@pytest.mark.parametrize("name", sorted(CASES))
def test_size_zero_operands(name):
    f, shapes = CASES[name]
    args = _args(shapes)
    g = ember.make_graph(f)(*args)
    got = compile_graph(g)(*args)
    ref = run_graph_numpy(g.graph, g.consts_as_buffers(), list(args))
    eager = f(*args)
    eager = list(eager) if isinstance(eager, (list, tuple)) else [eager]
    jitted = jit(f)(*args)
    jitted = list(jitted) if isinstance(jitted, (list, tuple)) else [jitted]
    for a, b, c, d in zip(got, ref, eager, jitted):
        a, b, c, d = (np.asarray(t) for t in (a, b, c, d))
        assert a.shape == b.shape == c.shape == d.shape and a.dtype == b.dtype == c.dtype == d.dtype
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(d, c)


UNARY = ["neg", "abs", "sign", "floor", "exp", "log", "tanh", "logistic", "sin", "sqrt", "erf", "is_finite",
         "square", "cbrt"]
BINARY = ["add", "sub", "mul", "div", "max", "min", "eq", "lt", "rem", "pow", "atan2"]


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0)], ids=str)
@pytest.mark.parametrize("name", UNARY + BINARY)
def test_elementwise_table_on_empty_shapes(name, shape):
    fn = getattr(lax, name)
    args = _args([shape] * (2 if name in BINARY else 1))
    g = ember.make_graph(fn)(*args)
    (got,) = compile_graph(g)(*args)
    (ref,) = run_graph_numpy(g.graph, g.consts_as_buffers(), list(args))
    assert got.shape == ref.shape == shape and got.dtype == ref.dtype
