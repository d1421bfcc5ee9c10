"""Tests of `ember.numpy.fft`: values vs numpy.fft for every function with `n`/`s`,
`axis`/`axes` and `norm`, dtypes, staging, derivatives and vmap."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.numpy as enp
from ember import lax
from ember.fx.ir import typecheck
from ember.testing import check_grads, check_vmap

FFT = enp.fft
NORMS = [None, "backward", "ortho", "forward"]


def _rand(rng, shape, complex_=False, dtype=np.float64):
    x = rng.standard_normal(shape)
    if complex_:
        x = x + 1j * rng.standard_normal(shape)
        return x.astype(np.complex64 if dtype == np.float32 else np.complex128)
    return x.astype(dtype)


def _close(got, want, dtype=np.float64, scale=1.0):
    t = (1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10) * scale
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=t, atol=t)


ONE_AXIS = [("fft", True), ("ifft", True), ("rfft", False), ("irfft", True), ("hfft", True),
            ("ihfft", False)]


@pytest.mark.parametrize("name,complex_in", ONE_AXIS)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [None, 3, 8])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_axis_functions(name, complex_in, norm, n, axis):
    rng = np.random.default_rng(0)
    x = _rand(rng, (5, 6, 2), complex_in)
    got = getattr(FFT, name)(x, n=n, axis=axis, norm=norm)
    want = getattr(np.fft, name)(x, n=n, axis=axis, norm=norm)
    _close(got, want, scale=10)


@pytest.mark.filterwarnings("ignore:`axes` should not be `None`:DeprecationWarning")
@pytest.mark.parametrize("name,complex_in", [("fftn", True), ("ifftn", True), ("rfftn", False),
                                             ("irfftn", True), ("fft2", True), ("ifft2", True),
                                             ("rfft2", False), ("irfft2", True)])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("s,axes", [(None, None), ((4, 3), None), (None, (0, 2)),
                                    ((2, 7), (2, 0)), ((3, 4), (1, 2))])
def test_n_dim_functions(name, complex_in, norm, s, axes):
    rng = np.random.default_rng(1)
    x = _rand(rng, (4, 5, 6), complex_in)
    kw = dict(s=s, norm=norm)
    if axes is not None:
        kw["axes"] = axes
    elif name.endswith("2"):
        kw["axes"] = (-2, -1)
    if name.endswith("2") and s is None and axes is None:
        kw.pop("s")
    got = getattr(FFT, name)(x, **kw)
    want = getattr(np.fft, name)(x, **kw)
    _close(got, want, scale=10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtypes_follow_input(dtype):
    rng = np.random.default_rng(2)
    x = _rand(rng, (8,), dtype=dtype)
    cd = np.complex64 if dtype == np.float32 else np.complex128
    assert FFT.fft(x).dtype == cd and FFT.rfft(x).dtype == cd
    assert FFT.irfft(FFT.rfft(x)).dtype == dtype
    assert FFT.ihfft(x).dtype == cd and FFT.hfft(FFT.ihfft(x)).dtype == dtype
    _close(FFT.irfft(FFT.rfft(x)), x, dtype)
    assert FFT.fft(np.arange(4, dtype=np.int32)).dtype == np.complex64
    assert FFT.fft(np.ones(4, np.float16)).dtype == np.complex64
    with pytest.raises(TypeError, match="real input"):
        FFT.rfft(np.ones(4, np.complex64))


def test_errors_and_edge_cases():
    with pytest.raises(ValueError, match="norm"):
        FFT.fft(np.ones(4), norm="bad")
    with pytest.raises(ValueError, match="data points"):
        FFT.fft(np.ones(4), n=0)
    with pytest.raises(ValueError, match="repeated"):
        FFT.fftn(np.ones((2, 2)), axes=(0, 0))
    x = np.zeros((0, 4))
    _close(FFT.fft(x), np.fft.fft(x))
    _close(FFT.rfftn(np.ones((3, 0, 4)), axes=(2,)), np.fft.rfftn(np.ones((3, 0, 4)), axes=(2,)))
    _close(FFT.fftn(np.ones((2, 3)), axes=()), np.ones((2, 3)))


def test_freqs_and_shifts():
    for n in (1, 4, 7):
        for d in (1.0, 0.1):
            _close(FFT.fftfreq(n, d), np.fft.fftfreq(n, d).astype(np.float32), np.float32)
            _close(FFT.rfftfreq(n, d), np.fft.rfftfreq(n, d).astype(np.float32), np.float32)
    assert FFT.fftfreq(4, dtype=np.float64).dtype == np.float64
    _close(FFT.fftfreq(5, enp.asarray(np.float32(0.5))), np.fft.fftfreq(5, 0.5), np.float32)
    x = np.arange(30.0).reshape(5, 6)
    for axes in (None, 0, 1, (0, 1), (-1,)):
        np.testing.assert_array_equal(np.asarray(FFT.fftshift(x, axes)), np.fft.fftshift(x, axes))
        np.testing.assert_array_equal(np.asarray(FFT.ifftshift(x, axes)), np.fft.ifftshift(x, axes))


def test_staged_graph_typechecks():
    x = np.ones((3, 8), np.float32)

    def f(x):
        return (FFT.rfft(x, n=6), FFT.fftn(x, s=(4, 10)), FFT.irfftn(FFT.rfftn(x)),
                FFT.fftshift(x), FFT.hfft(FFT.ihfft(x), n=8, norm="ortho"))
    g = ember.make_graph(f)(x)
    typecheck(g)
    for a, b in zip(ember.jit(f)(x), f(x)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)


def test_grads():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 6))

    def power(x):
        y = FFT.rfft(x, n=8, norm="ortho")
        return lax.real(lax.mul(y, lax.conj(y)))
    check_grads(power, (x,), order=2)
    check_grads(lambda v: FFT.irfft(FFT.rfft(v, axis=0), n=5, axis=0), (x,), order=1)

    def complex_path(re, im):
        y = FFT.fftn(lax.complex(re, im), s=(4, 5), norm="forward")
        z = FFT.ifft(y, axis=0)
        return lax.real(z), lax.imag(z)
    check_grads(complex_path, (x, x[::-1].copy()), order=1)
    check_grads(lambda v: FFT.hfft(FFT.ihfft(v), n=6), (x,), order=1)
    check_grads(lambda v: FFT.fftshift(v, axes=1), (x,), order=1)


def test_vmap():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4, 6))
    check_vmap(lambda v: FFT.rfft(v, n=5), (x,), in_axes=1, atol=1e-10, rtol=1e-10)
    check_vmap(lambda v: FFT.fftn(v), (x,), in_axes=2, atol=1e-10, rtol=1e-10)
    check_vmap(lambda v: FFT.fftshift(v), (x,), in_axes=0, atol=1e-10, rtol=1e-10)


@settings(max_examples=15, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple),
       data=st.data(), norm=st.sampled_from(NORMS))
def test_hypothesis_fftn_rfftn(shape, data, norm):
    rng = np.random.default_rng(sum(shape))
    nd = len(shape)
    k = data.draw(st.integers(1, nd))
    axes = tuple(data.draw(st.permutations(range(nd)))[:k])
    s = tuple(data.draw(st.integers(1, 6)) for _ in range(k))
    x = rng.standard_normal(shape)
    _close(FFT.fftn(x, s=s, axes=axes, norm=norm), np.fft.fftn(x, s=s, axes=axes, norm=norm),
           scale=10)
    _close(FFT.rfftn(x, s=s, axes=axes, norm=norm), np.fft.rfftn(x, s=s, axes=axes, norm=norm),
           scale=10)
    y = np.fft.rfftn(x, axes=axes)
    _close(FFT.irfftn(y, s=s, axes=axes, norm=norm), np.fft.irfftn(y, s=s, axes=axes, norm=norm),
           scale=10)
