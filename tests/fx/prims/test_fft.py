"""Tests of the fft primitive: values vs numpy.fft, abstract eval vs impl, staging,
jvp/vjp vs finite differences, transposes (dot-product test) and vmap."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import dtypes as _dt
from ember import lax
from ember.fx.core import UndefinedPrimal, get_aval
from ember.fx.ir import typecheck
from ember.fx.prims.fft import FftType, fft_p
from ember.testing import check_grads, check_vmap

NP = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn, "IRFFT": np.fft.irfftn}


def _rand(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if _dt.kind(dtype) == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _operand(rng, batch, lengths, kind, real_dtype):
    if kind == "RFFT":
        return _rand(rng, batch + lengths, real_dtype)
    shape = lengths if kind != "IRFFT" else lengths[:-1] + (lengths[-1] // 2 + 1,)
    return _rand(rng, batch + shape, _dt.complex_dtype(real_dtype))


def _expected(x, kind, lengths):
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    return NP[kind](x, s=lengths, axes=axes)


def _check_abstract(x, kind, lengths):
    aval = fft_p.abstract_eval(get_aval(x), fft_type=kind, fft_lengths=lengths)
    raw = fft_p.impl(x, fft_type=kind, fft_lengths=lengths)
    assert raw.shape == aval.shape and raw.dtype == aval.dtype
    return aval


KINDS = ["FFT", "IFFT", "RFFT", "IRFFT"]
LENGTHS = [(1,), (4,), (5,), (3, 4), (2, 3, 5)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("lengths", LENGTHS, ids=str)
@pytest.mark.parametrize("real_dtype", [_dt.float32, _dt.float64], ids=str)
@pytest.mark.parametrize("batch", [(), (2,), (0, 3)], ids=str)
def test_values_vs_numpy(kind, lengths, real_dtype, batch):
    rng = np.random.default_rng(0)
    x = _operand(rng, batch, lengths, kind, real_dtype)
    aval = _check_abstract(x, kind, lengths)
    got = lax.fft(x, kind, lengths)
    assert got.shape == aval.shape and got.dtype == aval.dtype
    want_dtype = _dt.real_dtype(x.dtype) if kind == "IRFFT" else _dt.complex_dtype(x.dtype)
    assert got.dtype == want_dtype  # complex64 stays complex64
    tol = 1e-5 if real_dtype == _dt.float32 else 1e-12
    np.testing.assert_allclose(np.asarray(got), _expected(x.astype(np.complex128 if kind != "RFFT"
                                                                   else np.float64), kind, lengths),
                               rtol=tol, atol=tol * 10)


def test_fft_type_spellings():
    x = np.ones(4, np.complex64)
    for t in ("FFT", "fft", FftType.FFT):
        np.testing.assert_allclose(np.asarray(lax.fft(x, t, 4)), np.fft.fft(x))


def test_errors():
    with pytest.raises(TypeError, match="complex"):
        lax.fft(np.ones(4, np.float32), "FFT", (4,))
    with pytest.raises(TypeError, match="float32/float64"):
        lax.fft(np.ones(4, np.complex64), "RFFT", (4,))
    with pytest.raises(TypeError, match="must end in"):
        lax.fft(np.ones((2, 4), np.complex64), "FFT", (2, 5))
    with pytest.raises(TypeError, match="half spectrum"):
        lax.fft(np.ones(4, np.complex64), "IRFFT", (4,))
    with pytest.raises(TypeError, match="fewer than"):
        lax.fft(np.ones(4, np.complex64), "FFT", (1, 4, 4))
    with pytest.raises(TypeError, match="unknown fft_type"):
        lax.fft(np.ones(4, np.complex64), "DCT", (4,))
    with pytest.raises(TypeError, match="positive"):
        lax.fft(np.ones(4, np.complex64), "FFT", ())


def test_staged_graph_typechecks():
    x = np.ones((2, 3, 4), np.float32)

    def f(x):
        y = lax.fft(x, "RFFT", (3, 4))
        z = lax.fft(y, "IFFT", (3, 3))
        w = lax.fft(z, "FFT", (3,))
        return lax.fft(w, "IRFFT", (3, 4))
    g = ember.make_graph(f)(x)
    typecheck(g)
    assert [e.prim.name for e in g.equations] == ["fft"] * 4
    np.testing.assert_allclose(np.asarray(ember.jit(f)(x)), np.asarray(f(x)), rtol=1e-5, atol=1e-5)


# --- derivatives and transposes -------------------------------------------------------------

def _real_wrapped(kind, lengths):
    """A function of real arrays only (the finite-difference checks pair real values)."""
    if kind == "RFFT":
        def f(x):
            y = lax.fft(x, kind, lengths)
            return lax.real(y), lax.imag(y)
        return f

    def g(re, im):
        y = lax.fft(lax.complex(re, im), kind, lengths)
        return (lax.real(y), lax.imag(y)) if kind != "IRFFT" else y
    return g


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("lengths", [(4,), (5,), (2, 3), (3, 4)], ids=str)
def test_grads(kind, lengths):
    rng = np.random.default_rng(1)
    x = _operand(rng, (2,), lengths, kind, np.float64)
    args = (x,) if kind == "RFFT" else (x.real.copy(), x.imag.copy())
    check_grads(_real_wrapped(kind, lengths), args, order=2)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("lengths", [(1,), (2,), (4,), (5,), (3, 4), (2, 3, 5)], ids=str)
def test_transpose_dot_product(kind, lengths):
    """Re(sum(ct * T(x))) == Re(sum(T^T(ct) * x)) for the rule called directly."""
    rng = np.random.default_rng(2)
    x = _operand(rng, (2,), lengths, kind, np.float64)
    out = np.asarray(lax.fft(x, kind, lengths))
    ct = _rand(rng, out.shape, out.dtype)
    (tx,) = fft_p.transpose(ct, UndefinedPrimal(get_aval(x)), fft_type=kind, fft_lengths=lengths)
    tx = np.asarray(tx)
    assert tx.shape == x.shape and tx.dtype == x.dtype
    np.testing.assert_allclose(np.real(np.sum(tx * x)), np.real(np.sum(ct * out)),
                               rtol=1e-10, atol=1e-10)


def test_vjp_of_power_spectrum():
    """grad of sum |rfft(x)|^2 matches the closed form (Parseval with half-spectrum weights)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(6)

    def loss(x):
        y = lax.fft(x, "RFFT", (6,))
        return lax.reduce_sum(lax.add(lax.mul(lax.real(y), lax.real(y)),
                                      lax.mul(lax.imag(y), lax.imag(y))), (0,))
    g = np.asarray(ember.grad(loss)(x))
    # sum_k |X_k|^2 over the half spectrum = x^T M x with M = Re(F_h^H F_h).
    f = np.fft.rfft(np.eye(6), axis=0)
    m = np.real(f.conj().T @ f)
    np.testing.assert_allclose(g, 2 * m @ x, rtol=1e-10, atol=1e-10)


# --- vmap -------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_vmap(kind, axis):
    rng = np.random.default_rng(4)
    lengths = (3, 4)
    x = np.moveaxis(_operand(rng, (2,), lengths, kind, np.float64), 0, axis)
    check_vmap(lambda v: lax.fft(v, kind, lengths), (x,), in_axes=axis, atol=1e-12, rtol=1e-12)


def test_batch_rule_keeps_leading_dim():
    x = np.ones((2, 3, 4), np.complex64)
    out, d = fft_p.batch(3, [x], [1], fft_type="FFT", fft_lengths=(4,))
    assert d == 1 and np.asarray(out).shape == (2, 3, 4)
    out, d = fft_p.batch(4, [x], [2], fft_type="FFT", fft_lengths=(2, 3))
    assert d == 0 and np.asarray(out).shape == (4, 2, 3)


# --- properties ------------------------------------------------------------------------------

@settings(max_examples=15, deadline=None)
@given(batch=st.lists(st.integers(0, 3), max_size=2).map(tuple),
       lengths=st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple),
       kind=st.sampled_from(KINDS), real_dtype=st.sampled_from([_dt.float32, _dt.float64]))
def test_hypothesis_values_and_roundtrip(batch, lengths, kind, real_dtype):
    rng = np.random.default_rng(len(batch) * 10 + sum(lengths))
    x = _operand(rng, batch, lengths, kind, real_dtype)
    _check_abstract(x, kind, lengths)
    got = np.asarray(lax.fft(x, kind, lengths))
    tol = 1e-4 if real_dtype == _dt.float32 else 1e-10
    wide = x.astype(np.float64 if kind == "RFFT" else np.complex128)
    np.testing.assert_allclose(got, _expected(wide, kind, lengths), rtol=tol, atol=tol)
    if kind == "RFFT":
        back = np.asarray(lax.fft(got, "IRFFT", lengths))
        np.testing.assert_allclose(back, x, rtol=tol, atol=tol)
    if kind == "FFT":
        back = np.asarray(lax.fft(got, "IFFT", lengths))
        np.testing.assert_allclose(back, x, rtol=tol, atol=tol)
