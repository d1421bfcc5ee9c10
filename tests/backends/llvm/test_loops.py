"""The hand-written loop kernels: elementwise maps and row sums."""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np
import pytest

from ember.backends.llvm import KernelLauncher, compile_ir, inspect_ir, loops, target


def _sum_module(ty, ncols, reassoc):
    m = ir.Module()
    loops.row_sum_kernel(m, "rowsum", ty, ncols, reassoc=reassoc)
    return str(m)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_reassoc_sum_vectorises_and_matches_numpy(dtype):
    ty = ir.FloatType() if dtype == np.float32 else ir.DoubleType()
    ncols = 100_003
    text = _sum_module(ty, ncols, reassoc=True)
    opt_ir, asm = inspect_ir(text)
    lanes = target.vector_bits() // (8 * np.dtype(dtype).itemsize)
    elt = "float" if dtype == np.float32 else "double"
    assert f"fadd reassoc <{lanes} x {elt}>" in opt_ir
    x = np.random.default_rng(0).random((3, ncols)).astype(dtype)
    out = np.empty(3, dtype)
    KernelLauncher(compile_ir(text, ["rowsum"])["rowsum"], 2).prepare([x, out]).run(3, 1)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(1), rtol=1e-6 if dtype == np.float32 else 1e-13)


def test_strict_sum_is_sequential():
    """Without reassoc the loop stays an in-order scalar sum: bit-identical to
    a sequential float32 accumulation."""
    f32 = ir.FloatType()
    text = _sum_module(f32, 10_000, reassoc=False)
    opt_ir, _ = inspect_ir(text)
    assert "fadd reassoc" not in opt_ir and "<16 x float>" not in opt_ir
    x = np.random.default_rng(1).standard_normal((2, 10_000)).astype(np.float32)
    out = np.empty(2, np.float32)
    KernelLauncher(compile_ir(text, ["rowsum"])["rowsum"], 2).prepare([x, out])(0, 2)
    np.testing.assert_array_equal(out, np.add.accumulate(x, axis=1, dtype=np.float32)[:, -1])


def test_sum_propagates_nan_and_inf():
    f32 = ir.FloatType()
    cm = compile_ir(_sum_module(f32, 1000, reassoc=True), ["rowsum"])
    x = np.ones((3, 1000), np.float32)
    x[0, 500] = np.nan
    x[1, 3] = np.inf
    x[2, 999] = -np.inf
    out = np.empty(3, np.float32)
    KernelLauncher(cm["rowsum"], 2).prepare([x, out])(0, 3)
    assert np.isnan(out[0]) and out[1] == np.inf and out[2] == -np.inf


def test_empty_rows_and_ranges():
    f64 = ir.DoubleType()
    cm = compile_ir(_sum_module(f64, 0, reassoc=True), ["rowsum"])
    out = np.full(4, np.nan)
    KernelLauncher(cm["rowsum"], 2).prepare([np.zeros(1), out])(0, 4)
    assert np.all(out == 0)
    m = ir.Module()
    loops.elementwise_kernel(m, "neg", 1, f64, lambda b, xs: [b.fneg(xs[0])])
    k = KernelLauncher(compile_ir(str(m), ["neg"])["neg"], 2)
    x, y = np.arange(5.0), np.full(5, 7.0)
    k.prepare([x, y])(3, 3)  # empty range: no-op
    k.prepare([x, y])(4, 2)  # inverted range: no-op
    assert np.all(y == 7.0)
    k.prepare([x, y])(1, 4)
    np.testing.assert_array_equal(y, [7.0, -1.0, -2.0, -3.0, 7.0])


def test_elementwise_two_outputs_and_types():
    f32 = ir.FloatType()
    m = ir.Module()
    loops.elementwise_kernel(m, "addsub", 2, f32, lambda b, v: [b.fadd(v[0], v[1]), b.fsub(v[0], v[1])],
                             n_outputs=2)
    with pytest.raises(ValueError):
        loops.elementwise_kernel(ir.Module(), "bad", 1, f32, lambda b, v: [v[0], v[0]])
    cm = compile_ir(str(m), ["addsub"])
    a, b = np.arange(10, dtype=np.float32), np.ones(10, np.float32)
    s, d = np.empty_like(a), np.empty_like(a)
    KernelLauncher(cm["addsub"], 4).prepare([a, b, s, d])(0, 10)
    np.testing.assert_array_equal(s, a + b)
    np.testing.assert_array_equal(d, a - b)
