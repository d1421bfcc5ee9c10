"""Matrix products overflow only where the exact result does (issue #12, item 3):
non-finite elements of a float gemm are recomputed from power-of-two-scaled
operands, under jit and eagerly, so both agree on NaN and on every infinity and
its sign."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember.numpy as enp
from ember import jit

BIG = {np.float32: 3.4028235e38, np.float64: 1.7976931348623157e308}


def _exact(a, b):
    """a @ b exactly (Fractions) where every operand of the element is finite and no
    product exceeds 2**20 times the largest finite value, else None.  (Recomputed
    elements are float64 sums: cancelling products far beyond that may leave a
    float64 rounding error as large as the result; see docs/sharp-bits.md.)"""
    out = np.empty((a.shape[0], b.shape[1]), object)
    top = float(np.finfo(a.dtype).max)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            row, col = a[i], b[:, j]
            if np.isfinite(row).all() and np.isfinite(col).all():
                terms = [Fraction(float(x)) * Fraction(float(y)) for x, y in zip(row, col)]
                small = all(abs(t) <= 2 ** 20 * Fraction(top) for t in terms)
                out[i, j] = sum(terms, Fraction(0)) if small else None
            else:
                out[i, j] = None
    return out


def _check(a, b, exact=True):
    got = np.asarray(jit(lambda x, y: x @ y)(a, b))
    eager = np.asarray(enp.asarray(a) @ b)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(eager))
    np.testing.assert_array_equal(np.isinf(got) * np.sign(got), np.isinf(eager) * np.sign(eager))
    if not exact:
        return got
    ex = _exact(a, b)
    top = Fraction(float(np.finfo(a.dtype).max))
    for (i, j), e in np.ndenumerate(ex):
        if e is None:
            continue
        g = got[i, j]
        assert not np.isnan(g), (i, j, str(e))
        if np.isinf(g):
            # (rounding errors may carry a result within an ulp or so of the largest finite value over)
            assert abs(e) > top / 2 and (g > 0) == (e > 0), (i, j, str(e), g)
        elif abs(e) > 2 * top:
            raise AssertionError(f"finite {g} where the exact {e} overflows")
    return got


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_audit_example(dtype):
    big = BIG[dtype]
    a = np.full((1, 3), -big, dtype)
    b = np.array([[1.5], [-2.0], [0.0]], dtype)
    # (float64: -1.5 * big is not representable, so one rounding error remains)
    got = _check(a, b)
    np.testing.assert_allclose(got[0, 0], big * 0.5, rtol=2 * np.finfo(dtype).eps)
    # k = 2 (written out as an expression before this fix)
    got = _check(a[:, :2], b[:2])
    np.testing.assert_allclose(got[0, 0], big * 0.5, rtol=2 * np.finfo(dtype).eps)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([np.float32, np.float64]), st.integers(1, 4), st.integers(1, 6), st.integers(1, 4),
       st.integers(0, 2**32 - 1))
def test_products_with_huge_and_special_operands(dtype, m, k, n, seed):
    rng = np.random.default_rng(seed)
    big = BIG[dtype]
    pool = np.array([big, -big, big / 3, -big / 2, 1.5, -2.0, 0.0, -0.0, 1.0, np.inf, -np.inf, np.nan], dtype)
    p = np.r_[np.full(6, 0.13), np.full(4, 0.05), np.full(2, 0.01)]
    a = rng.choice(pool, size=(m, k), p=p / p.sum())
    b = rng.choice(pool, size=(k, n), p=p / p.sum())
    _check(a, b)


def test_large_blocks_recompute_only_the_overflowing_elements():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((130, 70)).astype(np.float32)
    b = rng.standard_normal((70, 140)).astype(np.float32)
    a[3, :] = 3e38
    b[:, 5] = np.where(np.arange(70) % 2 == 0, 1.01, -1.0)
    got = _check(a, b, exact=False)
    with np.errstate(over="ignore"):
        want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    # row 3 overflows except against column 5, where its terms cancel to ~9.6e37
    assert np.isfinite(got[3, 5]) and np.isinf(got[3]).sum() == np.isinf(want[3]).sum() > 100
    np.testing.assert_array_equal(np.sign(got[3]), np.sign(want[3]))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def _risky(a, b):
    """The elements contraction.`_recompute_nonfinite` recomputes: the exponents of
    their row's and column's largest finite magnitudes reach `overflow_exponent`."""
    from ember.fx.prims.contraction import _max_exponents, overflow_exponent
    ea = _max_exponents(a)                       # [..., m]
    eb = _max_exponents(np.swapaxes(b, -1, -2))  # [..., n]
    return ea[..., :, None] + eb[..., None, :] >= overflow_exponent(a.dtype, a.shape[-1])


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([np.float32, np.float64]), st.integers(1, 2), st.integers(1, 80), st.integers(1, 600),
       st.integers(1, 80), st.integers(0, 2**32 - 1), st.data())
def test_jit_recomputes_the_same_elements_as_eager(dtype, batch, m, k, n, seed, data):
    """The gemm's own report (non-finite C, the operands' largest exponents) picks
    the same elements as eager's scans: the recomputed ones agree bit for bit, with
    huge operands anywhere (several K slices, several blocks, batches)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((batch, m, k)).astype(dtype)
    b = rng.standard_normal((batch, k, n)).astype(dtype)
    big = BIG[dtype]
    for x in (a, b):
        for _ in range(data.draw(st.integers(0, 3))):
            at = tuple(data.draw(st.integers(0, s - 1)) for s in x.shape)
            x[at] = data.draw(st.sampled_from([big, -big / 3, big / 64, 2.0 ** -20 * big, np.inf, np.nan]))
    got = np.asarray(jit(lambda x, y: x @ y)(a, b))
    eager = np.asarray(enp.asarray(a) @ b)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(eager))
    redo = _risky(a, b) | ~np.isfinite(eager)
    np.testing.assert_array_equal(got[redo], eager[redo])
