"""ember's own packed gemm (backends/llvm/packed_gemm.py) against float64 numpy:
every layout and stride, every edge of every blocking loop, every register-tile
shape the host configurations use, and NaN/inf propagation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import lax
from ember.backends.llvm import packed_gemm
from ember.backends.llvm.codegen import render_program
from ember.backends.llvm.kernel_target import cpu_target
from ember.backends.kernels import schedule

DTYPES = [np.float32, np.float64]


def _tol(dtype, k):
    eps = 1e-5 if dtype == np.float32 else 1e-12
    return dict(rtol=eps * max(1, k) ** 0.5, atol=eps * max(1, k))


def _operand(rng, rows, cols, dtype, layout):
    """A rows x cols view: 'c' contiguous, 't' the transpose of a contiguous array,
    's' every other column of a wider one, 'r' rows reversed (a negative stride)."""
    if layout == "c":
        return rng.standard_normal((rows, cols)).astype(dtype)
    if layout == "t":
        return rng.standard_normal((cols, rows)).astype(dtype).T
    if layout == "s":
        return rng.standard_normal((rows, 2 * cols + 1)).astype(dtype)[:, 1::2]
    return rng.standard_normal((rows, cols)).astype(dtype)[::-1]


def _check(m, n, k, dtype, la="c", lb="c", config=None, seed=0):
    rng = np.random.default_rng(seed)
    a = _operand(rng, m, k, dtype, la)
    b = _operand(rng, k, n, dtype, lb)
    out = np.full((m, n), np.nan, dtype)           # every element must be written
    packed_gemm.matmul_into(a, b, out, config)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out, want, **_tol(dtype, k))


# register tiles of the host configurations (AVX-512, AVX2, 128-bit) and odd ones:
# non-power-of-two rows take the element-wise packing path; tiny blocks put an edge
# in every loop (N panels, K slices, M blocks, strips) at small sizes
def _configs(dtype):
    host = packed_gemm.host_config(dtype)
    lanes = 16 if dtype == np.float32 else 8
    half = lanes // 2
    return {
        "host": host,
        "avx2": packed_gemm.GemmConfig(dtype, lanes=half, mr=4, nv=3),
        "sse": packed_gemm.GemmConfig(dtype, lanes=half // 2, mr=4, nv=2),
        "rows6": packed_gemm.GemmConfig(dtype, lanes=lanes, mr=6, nv=2, unroll=1),
        "tiny-blocks": dataclasses.replace(host, kc=7, mc=2 * host.mr, nc=2 * host.nr + 1),
    }


SHAPES = [(1, 1, 1), (0, 5, 3), (5, 0, 3), (4, 6, 0), (1, 70, 1), (70, 1, 33), (8, 48, 16),
          (9, 49, 17), (17, 95, 31), (33, 16, 300), (130, 100, 257)]


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("config", ["host", "avx2", "sse", "rows6", "tiny-blocks"])
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_every_tile_shape_and_edge(dtype, config, m, n, k):
    cfg = _configs(dtype)[config]
    for la, lb in (("c", "c"), ("t", "t")):
        _check(m, n, k, dtype, la, lb, cfg, seed=m * 7 + n * 3 + k)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("la", ["c", "t", "s", "r"])
@pytest.mark.parametrize("lb", ["c", "t", "s", "r"])
def test_every_operand_layout(dtype, la, lb):
    # whole strips (fast packing paths) and a ragged edge, K above one slice
    _check(150, 101, 300, dtype, la, lb, seed=3)
    _check(150, 101, 300, dtype, la, lb, _configs(dtype)["tiny-blocks"], seed=4)


@settings(max_examples=40, deadline=None)
@given(m=st.integers(0, 80), n=st.integers(0, 120), k=st.integers(0, 80),
       dtype=st.sampled_from(DTYPES), la=st.sampled_from("ctsr"), lb=st.sampled_from("ctsr"),
       config=st.sampled_from(["host", "avx2", "tiny-blocks"]))
def test_random_shapes_layouts_and_tiles(m, n, k, dtype, la, lb, config):
    _check(m, n, k, dtype, la, lb, _configs(dtype)[config], seed=m + n + k)


def test_large_square_products():
    for dtype in DTYPES:
        _check(520, 530, 540, dtype, "c", "c", seed=9)
        _check(520, 530, 540, dtype, "t", "t", seed=10)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_nan_and_inf_propagate_like_numpy(dtype):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((40, 30)).astype(dtype)
    b = rng.standard_normal((30, 50)).astype(dtype)
    a[3, 7] = np.nan
    a[5, 2] = np.inf
    b[4, 11] = -np.inf
    b[9, 13] = np.nan
    b[2, :] = 0.0            # inf * 0 = nan in row 5
    out = np.empty((40, 50), dtype)
    packed_gemm.matmul_into(a, b, out)
    with np.errstate(invalid="ignore"):
        want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(out), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(out), np.isneginf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(out[finite], want[finite], **_tol(dtype, 30))


def test_an_empty_sum_writes_zeros():
    out = np.full((3, 4), np.nan, np.float32)
    packed_gemm.matmul_into(np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32), out)
    np.testing.assert_array_equal(out, 0.0)


def test_bad_arguments_are_reported():
    f32 = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match="float32 and float64"):
        packed_gemm.matmul_into(np.zeros((2, 3), np.int32), np.zeros((3, 2), np.int32), np.zeros((2, 2), np.int32))
    with pytest.raises(TypeError, match="one dtype"):
        packed_gemm.matmul_into(f32, np.zeros((3, 2)), np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="shape mismatch"):
        packed_gemm.matmul_into(f32, np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        packed_gemm.matmul_into(f32, np.zeros((3, 4), np.float32), np.zeros((4, 2), np.float32).T)
    with pytest.raises(ValueError, match="2-d"):
        packed_gemm.matmul_into(np.zeros(3, np.float32), np.zeros((3, 2), np.float32), np.zeros(2, np.float32))
    with pytest.raises(TypeError, match="float32 and float64"):
        packed_gemm.host_config(np.float16)


def test_host_configuration_fits_the_vector_registers():
    for dtype in DTYPES:
        cfg = packed_gemm.host_config(dtype)
        assert cfg.nr % cfg.lanes == 0 and cfg.lanes * np.dtype(dtype).itemsize in (16, 32, 64)
        # accumulators + B vectors + one broadcast within the register file
        regs = 32 if cfg.lanes * np.dtype(dtype).itemsize == 64 else 16
        assert cfg.mr * cfg.nv + cfg.nv + 1 <= regs


def _product_graph():
    x = np.ones((4, 5), np.float32)
    return ember.make_graph(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))))(x, x.T)


def test_programs_call_the_packed_gemm_by_default(monkeypatch):
    monkeypatch.delenv("EMBER_GEMM", raising=False)
    text, _ = render_program(schedule(_product_graph(), cpu_target()), "m")
    assert packed_gemm.SYMBOLS[np.dtype(np.float32)] in text and "sgemm" not in text


def test_ember_gemm_blas_routes_products_to_scipy(monkeypatch):
    from ember.backends.llvm import blas
    if not blas.available():
        pytest.skip("no scipy BLAS")
    monkeypatch.setenv("EMBER_GEMM", "blas")
    text, _ = render_program(schedule(_product_graph(), cpu_target()), "m")
    assert blas.SYMBOLS[np.dtype(np.float32)] in text and "ember_gemm" not in text
    from ember.backends.llvm.executable import compile_graph
    g = _product_graph()
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)
    (got,) = compile_graph(g)(a, b)
    np.testing.assert_allclose(np.asarray(got), a @ b, rtol=1e-5, atol=1e-5)


# -- the report: non-finite C from the registers, operand exponents from the packing ----

HUGE = {np.float32: 3.0e38, np.float64: 1.5e308}


def _edge_widths(cfg):
    # a last strip for each kernel (one vector, two, ...), partial and whole, and
    # whole strips only
    return sorted({cfg.nr + (v - 1) * cfg.lanes + 1 for v in range(1, cfg.nv + 1)}
                  | {cfg.nr + v * cfg.lanes for v in range(1, cfg.nv)} | {cfg.nr})


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("config", ["host", "avx2", "sse", "rows6", "tiny-blocks"])
def test_a_nonfinite_element_is_reported_from_every_tile_position(dtype, config):
    """One overflowing element of C at each (row, col) position, for shapes with a
    partial M strip and each narrow N-edge kernel, with one K slice or several and
    the overflow in the first or the last: the kernel reports it, and reports
    nothing without it."""
    cfg = _configs(dtype)[config]
    rng = np.random.default_rng(11)
    m = 2 * cfg.mr + 1
    for n, k in [(n, k) for n in _edge_widths(cfg) for k in (37, 520)]:
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        out = np.empty((m, n), dtype)
        report = packed_gemm.matmul_report(a, b, out, cfg)
        assert not report.nonfinite and np.isfinite(out).all()
        for i in range(m):
            for j in range(n):
                p = 3 if (i + j) % 2 else k - 2          # the first K slice or the last
                saved_a, saved_b = a[i, p], b[p].copy()
                a[i, p] = HUGE[dtype]
                b[p] = 0.0
                b[p, j] = 4.0                           # only (i, j) overflows
                report = packed_gemm.matmul_report(a, b, out, cfg)
                bad = ~np.isfinite(out)
                assert report.nonfinite and bad[i, j] and bad.sum() == 1, (n, i, j, np.argwhere(bad))
                a[i, p], b[p] = saved_a, saved_b
        a[m - 1, k - 1] = np.nan                          # a NaN operand
        report = packed_gemm.matmul_report(a, b, out, cfg)
        assert report.nonfinite and np.isnan(out[m - 1]).all()


def _frexp_max(x):
    finite = np.abs(x[np.isfinite(x)]).astype(np.float64)
    return max(int(np.frexp(finite.max())[1]), 0) if finite.size else 0


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 40), n=st.integers(1, 60), k=st.integers(0, 40),
       dtype=st.sampled_from(DTYPES), la=st.sampled_from("ctsr"), lb=st.sampled_from("ctsr"),
       config=st.sampled_from(["host", "avx2", "sse", "rows6", "tiny-blocks"]),
       scale=st.integers(-1100, 1100), data=st.data())
def test_the_report_has_the_operands_largest_exponents(m, n, k, dtype, la, lb, config, scale, data):
    """Each packing path (vector copies, register transposes, element by element)
    sees every element: the reported exponents are those of the largest finite
    magnitudes (infinities and NaNs left out), wherever they are."""
    rng = np.random.default_rng(m * n + k)
    a = _operand(rng, m, k, dtype, la)
    b = _operand(rng, k, n, dtype, lb)
    top = np.finfo(dtype).maxexp - 1
    for x in (a, b):
        if x.size:
            i = data.draw(st.integers(0, x.shape[0] - 1))
            j = data.draw(st.integers(0, x.shape[1] - 1))
            x[i, j] = np.ldexp(1.5, max(min(scale, top), -top))
            if data.draw(st.booleans()):
                x[data.draw(st.integers(0, x.shape[0] - 1)), data.draw(st.integers(0, x.shape[1] - 1))] = \
                    data.draw(st.sampled_from([np.inf, -np.inf, np.nan]))
    out = np.empty((m, n), dtype)
    with np.errstate(all="ignore"):
        report = packed_gemm.matmul_report(a, b, out, _configs(dtype)[config])
    assert (report.a_exponent, report.b_exponent) == (_frexp_max(a), _frexp_max(b))
    assert report.nonfinite == (not np.isfinite(out).all())


def test_the_avx512_kernels_compile_for_znver4():
    """This machine may lack AVX-512: check its kernels' IR and object code anyway."""
    import llvmlite.binding as llvm
    from ember.backends.llvm import target
    target.initialize()
    configs = [packed_gemm.GemmConfig(np.float32, lanes=16, mr=8, nv=3),
               packed_gemm.GemmConfig(np.float64, lanes=8, mr=8, nv=3)]
    mod = llvm.parse_assembly(packed_gemm.build_ir(configs))
    mod.verify()
    tm = llvm.Target.from_default_triple().create_target_machine(cpu="znver4", opt=1)
    asm = tm.emit_assembly(mod)
    assert "zmm" in asm and "ember_gemm_f32:" in asm and "ember_gemm_f64:" in asm
    assert tm.emit_object(mod)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("config", ["host", "avx2", "sse", "tiny-blocks"])
def test_a_rows_bits_do_not_depend_on_how_many_rows_are_multiplied(dtype, config):
    # narrow N-edge kernels walk two strips of A together where one has few
    # accumulators; each element is still summed in k order alone
    cfg = _configs(dtype)[config]
    rng = np.random.default_rng(12)
    for n in sorted(_edge_widths(cfg)):
        for k in (5, 64, 600):
            a = rng.standard_normal((5 * cfg.mr + 3, k)).astype(dtype)
            b = rng.standard_normal((k, n)).astype(dtype)
            full = packed_gemm.matmul_into(a, b, np.empty((a.shape[0], n), dtype), cfg)
            for lo, hi in ((0, cfg.mr), (cfg.mr, 2 * cfg.mr + 1), (3, a.shape[0])):
                part = packed_gemm.matmul_into(a[lo:hi], b, np.empty((hi - lo, n), dtype), cfg)
                np.testing.assert_array_equal(part, full[lo:hi], err_msg=f"n={n} k={k} rows {lo}:{hi}")
