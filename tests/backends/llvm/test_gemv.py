"""The packed gemm's unpacked paths: one column (`packed_gemm._Builder.gemv`, a
vector dot per row of A) and short contractions (`short_k`, k <= SHORT_K: broadcast
multiply-adds per row).  Values against float64 numpy (short_k: the packed path's
bits), and the report (non-finite flag, operand exponents) equal to what the packed
path gives, for every shape and stride that takes them or falls back; jitted
matrix-vector products keep the overflow guarantee (docs/sharp-bits.md).  Also on
forced AVX2 / SSE2 targets."""
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember.backends.llvm import packed_gemm as pg


def _operands(rng, m, k, dtype, scale):
    a = (rng.standard_normal((m, k)) * rng.choice(scale, (m, k))).astype(dtype)
    w = (rng.standard_normal((k, 1)) * 3).astype(dtype)
    return a, w


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 70), k=st.integers(1, 90), dtype=st.sampled_from(["float32", "float64"]),
       layout=st.sampled_from(["rows", "transposed_a", "strided_b"]), special=st.sampled_from([None, "inf", "nan"]),
       seed=st.integers(0, 999))
def test_one_column_values_and_report_match_the_packed_path(m, k, dtype, layout, special, seed):
    rng = np.random.default_rng(seed)
    a, w = _operands(rng, m, k, dtype, [1e-3, 1.0, 1e4])
    if special:
        a[rng.integers(m), rng.integers(k)] = np.inf if special == "inf" else np.nan
    if layout == "transposed_a":
        a = np.asfortranarray(a)               # column-major A: the packed path
    if layout == "strided_b":
        w = np.concatenate([w, w], 1)[:, :1]   # a column with row stride 2: the packed path
    out = np.empty((m, 1), dtype)
    rep = pg.matmul_report(a, w, out)
    wide = np.empty((m, 2), dtype)
    ref_rep = pg.matmul_report(a, np.concatenate([w, w], 1), wide)   # two columns: always packed
    assert rep == ref_rep
    np.testing.assert_array_equal(np.isfinite(out[:, 0]), np.isfinite(wide[:, 0]))
    fin = np.isfinite(out[:, 0])
    exact = a.astype(np.float64) @ w.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(w.astype(np.float64))
    eps = np.finfo(dtype).eps
    assert np.all(np.abs(out[fin, 0] - exact[fin, 0]) <= 2 * k * eps * scale[fin, 0] + 1e-300)


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 40), k=st.integers(1, pg.SHORT_K + 1), n=st.integers(1, 70),
       dtype=st.sampled_from(["float32", "float64"]), a_layout=st.sampled_from(["C", "F"]),
       special=st.sampled_from([None, "inf", "nan", "huge"]), seed=st.integers(0, 999))
def test_short_contractions_give_the_packed_paths_bits_and_report(m, k, n, dtype, a_layout, special, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(dtype, order=a_layout)
    w = rng.standard_normal((k, n)).astype(dtype)
    if special:
        a[rng.integers(m), rng.integers(k)] = {"inf": np.inf, "nan": np.nan, "huge": np.finfo(dtype).max}[special]
    out, ref = np.empty((m, n), dtype), np.empty((m, n), dtype)
    rep = pg.matmul_report(a, w, out)
    ref_rep = pg.matmul_report(a, np.asfortranarray(w), ref)    # B by columns: always packed
    assert rep == ref_rep
    np.testing.assert_array_equal(out, ref)


def test_jitted_matrix_vector_products_keep_the_overflow_guarantee():
    big = np.float32(-3.4e38)
    a = np.array([[big, big, big], [1.0, 2.0, 3.0]], np.float32)
    w = np.array([[1.5], [-2.0], [0.0]], np.float32)
    got = np.asarray(ember.jit(lambda a, w: a @ w)(a, w))
    np.testing.assert_allclose(got[:, 0], [1.7e38, -2.5], rtol=1e-6)
    # an infinity only where the exact result overflows, NaN only from the operands
    a2 = np.array([[3e38, 3e38], [np.inf, 1.0], [np.nan, 0.0]], np.float32)
    got = np.asarray(ember.jit(lambda a, w: a @ w)(a2, np.array([[1.0], [1.0]], np.float32)))
    assert got[0, 0] == np.inf and got[1, 0] == np.inf and np.isnan(got[2, 0])


def test_a_one_column_mlp_head_matches_numpy():
    rng = np.random.default_rng(4)
    for dt in (np.float32, np.float64):
        x, w = rng.standard_normal((300, 64)).astype(dt), rng.standard_normal((64, 1)).astype(dt)
        got = np.asarray(ember.jit(lambda x: np.tanh(1.0) * ember.numpy.tanh(x) @ w)(x))
        tol = 1e-5 if dt == np.float32 else 1e-12
        np.testing.assert_allclose(got, np.tanh(1.0) * np.tanh(x.astype(np.float64)) @ w, rtol=tol, atol=tol)


_SUBPROCESS = r"""
import numpy as np
from ember.backends.llvm import packed_gemm as pg
rng = np.random.default_rng(0)
for dt in ("float32", "float64"):
    for m, k in ((1000, 64), (7, 3), (5, 13), (1, 1), (33, 100)):
        a = rng.standard_normal((m, k)).astype(dt)
        w = rng.standard_normal((k, 1)).astype(dt)
        out, wide = np.empty((m, 1), dt), np.empty((m, 2), dt)
        assert pg.matmul_report(a, w, out) == pg.matmul_report(a, np.concatenate([w, w], 1), wide)
        np.testing.assert_allclose(out, a.astype(np.float64) @ w, rtol=1e-4 if dt == "float32" else 1e-12,
                                   atol=1e-4 if dt == "float32" else 1e-12)
    for m, k, n in ((1003, 3, 64), (5, 4, 13), (4, 1, 9)):
        a, w = rng.standard_normal((m, k)).astype(dt), rng.standard_normal((k, n)).astype(dt)
        out, ref = np.empty((m, n), dt), np.empty((m, n), dt)
        assert pg.matmul_report(a, w, out) == pg.matmul_report(a, np.asfortranarray(w), ref)
        np.testing.assert_array_equal(out, ref)
print("ok", pg.describe())
"""


@pytest.mark.parametrize("cpu", ["haswell", "x86-64"])
def test_forced_targets(cpu):
    r = subprocess.run([sys.executable, "-c", _SUBPROCESS], env=dict(os.environ, EMBER_CPU=cpu),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-3000:]


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 23), k=st.integers(1, 40), dtype=st.sampled_from(["float32", "float64"]),
       seed=st.integers(0, 999))
def test_one_column_rows_have_the_bits_they_have_alone(m, k, dtype, seed):
    # the gemv walks rows in groups: a row's sum must not depend on its group
    rng = np.random.default_rng(seed)
    a, w = _operands(rng, m, k, dtype, [1e-3, 1.0, 1e4])
    out = pg.matmul_into(a, w, np.empty((m, 1), dtype))
    alone = np.concatenate([pg.matmul_into(a[i:i + 1], w, np.empty((1, 1), dtype)) for i in range(m)])
    np.testing.assert_array_equal(out, alone)


def test_an_infinite_operand_still_reports_the_largest_finite_exponent():
    # the running max is a float max; an infinity sends it to the exact rescan
    for dtype in ("float32", "float64"):
        a = np.full((9, 70), 3.0, dtype)
        a[4, 5], a[2, 66] = np.inf, -40.0
        w = np.full((70, 1), 0.5, dtype)
        w[3, 0] = -np.inf
        rep = pg.matmul_report(a, w, np.empty((9, 1), dtype))
        assert (rep.nonfinite, rep.a_exponent, rep.b_exponent) == (True, 6, 0)
        wide = np.concatenate([w, w], 1)
        assert pg.matmul_report(a, wide, np.empty((9, 2), dtype)) == rep


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("k", [2, 3, 64])
def test_a_nan_beside_the_largest_element_leaves_its_exponent(dtype, k):
    # a NaN must not replace the value it is compared with in the running max
    a = np.full((5, k), 0.25, dtype)
    a[:, 0], a[:, 1] = 5.0, np.nan
    for n in (1, 4, 8):      # gemv, short_k (k <= SHORT_K) or packed
        w = np.ones((k, n), dtype)
        rep = pg.matmul_report(a, w, np.empty((5, n), dtype))
        assert (rep.nonfinite, rep.a_exponent, rep.b_exponent) == (True, 3, 1), (n, rep)
