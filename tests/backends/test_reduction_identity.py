"""One table of reduction identities (fx.prims.reduce.reduction_identity), read by
the reference impls, the scheduler's split-reduction padding and the LLVM
renderer; and every step's uniform `inputs`/`outputs`."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember import lax
from ember.backends.kernels import ConvKernel, GemmKernel, LibraryStep, RowKernel, ScatterKernel, schedule
from ember.backends.kernels.loop_ir import const
from ember.backends.llvm.kernel_target import cpu_target
from ember.fx.prims.reduce import reduction_identity

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOATS = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]
UFUNC = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
         "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from(INTS + [np.bool_]), op=st.sampled_from(sorted(UFUNC)), data=st.data())
def test_integer_and_bool_identities_leave_every_value_unchanged(dtype, op, data):
    d = np.dtype(dtype)
    if d == np.bool_:
        x = np.array(data.draw(st.lists(st.booleans(), min_size=1, max_size=8)))
        fn = {"sum": np.logical_or, "prod": np.logical_and, "max": np.logical_or, "min": np.logical_and,
              "and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op]
    else:
        info = np.iinfo(d)
        x = np.array(data.draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=1, max_size=8)), d)
        fn = UFUNC[op]
    ident = np.array(reduction_identity(op, d)).astype(d)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(fn(ident, x).astype(d), x)


@pytest.mark.parametrize("op", ["sum", "prod", "and", "or", "xor"])
@pytest.mark.parametrize("dtype", INTS)
def test_identities_are_numpys_where_numpy_has_one(op, dtype):
    assert reduction_identity(op, dtype) == UFUNC[op].reduce(np.array([], dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_identities(dtype):
    got = {op: reduction_identity(op, dtype) for op in ("sum", "prod", "max", "min")}
    assert got == {"sum": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}
    with pytest.raises(ValueError, match="no identity for 'and' on"):
        reduction_identity("and", dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.int64])
@pytest.mark.parametrize("axes", [(0,), (1,), (0, 1)])
def test_native_bitwise_and_of_negative_integers(dtype, axes):
    # the renderer's identity for an integer `and` was INT_MAX (one bit short of
    # all ones), so reduce_and of negative values lost their sign bit
    x = np.array([[-1, -3, 7, 5], [-2, -1, -1, 6], [-1, -1, -1, -1]]).astype(dtype)
    for f in (lax.reduce_and, lax.reduce_or, lax.reduce_max, lax.reduce_min):
        got = ember.jit(lambda a: f(a * 1, axes))(x)
        np.testing.assert_array_equal(np.asarray(got), f(x, axes))


def test_split_reduction_pads_with_the_identity():
    # n0 = 3 * 2^15 + 1 has no divisor near the chunk count: the last chunk is
    # padded with the identity
    n = 3 * (1 << 15) + 1
    x = (np.arange(n) % 97 - 200).astype(np.int32)
    for f in (lax.reduce_and, lax.reduce_max, lax.reduce_min, lax.reduce_sum):
        g = ember.make_graph(lambda a: f(a * 1, (0,)))(x)
        steps = schedule(g, cpu_target()).steps
        assert len(steps) == 2 and steps[0].space[0] * steps[0].space[1] > n   # partials over a padded range
        np.testing.assert_array_equal(np.asarray(ember.jit(lambda a: f(a * 1, (0,)))(x)), f(x, (0,)))


def test_const_converts_to_its_dtype():
    assert const(1, np.float32) is const(1.0, np.float32)
    assert const(-0.0, np.float32) is not const(0.0, np.float32)
    assert const(300, np.uint8)[1] == 44 and const(True, np.int32)[1] == 1


def test_every_step_has_inputs_and_outputs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 48)).astype(np.float32)
    w = rng.standard_normal((48, 32)).astype(np.float32)
    img = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    k = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    idx = np.array([[1], [3], [1]], np.int32)

    def f(x, w, img, k, idx):
        h = lax.tanh(lax.dot_general(x, w, (((1,), (0,)), ((), ()))))
        m = lax.reduce_max(h, (1,))
        e = lax.exp(h - lax.broadcast_in_dim(m, h.shape, (0,)))
        sm = e / lax.broadcast_in_dim(lax.reduce_sum(e, (1,)), h.shape, (0,))
        c = lax.conv_general_dilated(img, k, (1, 1), ((1, 1), (1, 1)))
        dn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))
        s = lax.scatter_add(sm, idx, sm[:3], dn)
        return s, c, lax.sort(m)
    g = ember.make_graph(f)(x, w, img, k, idx)
    prog = schedule(g, cpu_target())
    kinds = {type(s) for s in prog.steps}
    assert {GemmKernel, RowKernel, ConvKernel, ScatterKernel, LibraryStep} <= kinds, kinds
    written = set(prog.inputs) | {b for b, _ in prog.consts}
    for s in prog.steps:
        assert all(type(b) is int and 0 <= b < len(prog.buffers) for b in s.inputs + s.outputs), s
        assert set(s.inputs) <= written | set(s.outputs), (type(s).__name__, s.inputs, written)
        written |= set(s.outputs)
    assert {o for o in prog.outputs if type(o) is int} <= written
    got = ember.jit(f)(x, w, img, k, idx)
    want = f(x, w, img, k, idx)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=2e-4)
