"""BLAS gemm through scipy's function pointers: from Python and from IR."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import llvmlite.ir as ir
import numpy as np
import pytest

from ember.backends.llvm import (KernelLauncher, blas, compile_ir, declare_kernel, emit_batched_gemm,
                                 emit_gemm_call, kernel_arg)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DTYPES = [np.float32, np.float64]
SHAPES = [(1, 1, 1), (1, 7, 1), (7, 1, 1), (1, 1, 9), (5, 7, 3), (64, 33, 17), (3, 100, 1),
          (1, 50, 40), (40, 1, 50), (8, 8, 0), (0, 5, 4), (5, 0, 4), (129, 65, 257)]


def _tol(dtype, k):
    return dict(rtol=(1e-5 if dtype == np.float32 else 1e-12) * max(1, k) ** 0.5,
                atol=(1e-5 if dtype == np.float32 else 1e-12) * max(1, k))


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_matches_numpy(dtype, m, n, k, ta, tb):
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    out = np.full((m, n), np.nan, dtype)
    blas.gemm(a, b, out, trans_a=ta, trans_b=tb)
    want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    np.testing.assert_allclose(out, want, **_tol(dtype, k))


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_gemm_strided_views_alpha_beta(dtype):
    rng = np.random.default_rng(0)
    big_a = rng.standard_normal((40, 60)).astype(dtype)
    big_b = rng.standard_normal((60, 50)).astype(dtype)
    a = big_a[3:23, 5:35]          # row stride 60, unit column stride
    b = big_b[::2, ::2][:, :20]    # neither stride is one element -> copied
    c0 = rng.standard_normal((20, 20)).astype(dtype)
    out = c0.copy()
    blas.gemm(a, b, out, alpha=2.0, beta=0.5)
    want = 2.0 * (a.astype(np.float64) @ b.astype(np.float64)) + 0.5 * c0
    np.testing.assert_allclose(out, want, **_tol(dtype, 30))
    # a transposed view is used in place with the flag flipped
    out2 = np.empty((20, 20), dtype)
    blas.gemm(np.ascontiguousarray(a.T).T, b, out2)
    np.testing.assert_allclose(out2, a.astype(np.float64) @ b.astype(np.float64), **_tol(dtype, 30))
    # Fortran-ordered and strided outputs
    a2 = np.asfortranarray(rng.standard_normal((9, 4)).astype(dtype))
    b2 = rng.standard_normal((4, 6)).astype(dtype)
    outf = np.zeros((9, 6), dtype, order="F")
    blas.gemm(a2, b2, outf)
    np.testing.assert_allclose(outf, a2 @ b2, **_tol(dtype, 4))
    outs = np.zeros((9, 12), dtype)[:, ::2]
    blas.gemm(a2, b2, outs)
    np.testing.assert_allclose(outs, a2 @ b2, **_tol(dtype, 4))


def test_gemm_k0_beta_and_errors():
    out = np.full((3, 4), np.nan, np.float32)
    blas.gemm(np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32), out)
    assert np.all(out == 0)
    out[...] = 2
    blas.gemm(np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32), out, beta=0.5)
    assert np.all(out == 1)
    with pytest.raises(TypeError):
        blas.gemm(np.zeros((2, 2)), np.zeros((2, 2), np.float32), np.zeros((2, 2)))
    with pytest.raises(ValueError):
        blas.gemm(np.zeros((2, 3)), np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(TypeError):
        blas.gemm_address(np.int32)
    np.testing.assert_allclose(blas.matmul(np.ones((2, 3)), np.ones((3, 4))), 3.0)


def _gemm_kernel_module(dtype, m, n, k, absolute=False, batched=False):
    ft = ir.FloatType() if dtype == np.float32 else ir.DoubleType()
    mod = ir.Module()
    fn, start, stop, args = declare_kernel(mod, "mm")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    A, B, C = (kernel_arg(b, args, i, ft) for i in range(3))
    g = blas.declare_gemm(mod, dtype, absolute=absolute)
    if batched:
        emit_batched_gemm(b, g, dtype, start, stop, False, True, m, n, k, 1.0, A, m * k, k, B, n * k, k,
                          0.0, C, m * n, n)
    else:
        emit_gemm_call(b, g, dtype, False, True, m, n, k, 1.0, A, k, B, k, 0.0, C, n)
    b.ret_void()
    return str(mod)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("absolute", [False, True])
def test_gemm_called_from_jit_code(dtype, absolute):
    m, n, k = 13, 17, 19
    cm = compile_ir(_gemm_kernel_module(dtype, m, n, k, absolute), ["mm"])
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(dtype)
    bt = rng.standard_normal((n, k)).astype(dtype)
    c = np.empty((m, n), dtype)
    KernelLauncher(cm["mm"], 3).prepare([a, bt, c])(0, 1)
    np.testing.assert_allclose(c, a.astype(np.float64) @ bt.T.astype(np.float64), **_tol(dtype, k))


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_batched_gemm_kernel_in_parallel(dtype):
    batch, m, n, k = 37, 8, 9, 10
    cm = compile_ir(_gemm_kernel_module(dtype, m, n, k, batched=True), ["mm"])
    rng = np.random.default_rng(4)
    a = rng.standard_normal((batch, m, k)).astype(dtype)
    bt = rng.standard_normal((batch, n, k)).astype(dtype)
    c = np.empty((batch, m, n), dtype)
    KernelLauncher(cm["mm"], 3).prepare([a, bt, c]).run(batch, min_per_thread=4)
    want = np.matmul(a.astype(np.float64), bt.transpose(0, 2, 1).astype(np.float64))
    np.testing.assert_allclose(c, want, **_tol(dtype, k))


def test_cached_blas_kernel_loads_in_fresh_process(tmp_path):
    """The object code refers to BLAS by symbol, not address: a new process
    that only loads it from the disk cache must resolve the symbol."""
    text = _gemm_kernel_module(np.float32, 4, 5, 6)
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {ROOT!r})
        import numpy as np
        from ember.backends.llvm import compile_ir, KernelLauncher
        cm = compile_ir(open(sys.argv[1]).read(), ["mm"])
        a = np.arange(24, dtype=np.float32).reshape(4, 6); bt = np.ones((5, 6), np.float32)
        c = np.empty((4, 5), np.float32)
        KernelLauncher(cm["mm"], 3).prepare([a, bt, c])(0, 1)
        assert np.allclose(c, a @ bt.T)
        print(cm.source)
    """)
    path = tmp_path / "k.ll"
    path.write_text(text)
    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp_path / "cache"))
    outs = [subprocess.run([sys.executable, "-c", script, str(path)], env=env, capture_output=True,
                           text=True, timeout=120) for _ in range(2)]
    assert [o.stdout.strip() for o in outs] == ["compiled", "disk"], [o.stderr for o in outs]
