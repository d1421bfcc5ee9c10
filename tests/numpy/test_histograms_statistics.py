"""histogram, histogram2d, histogram_bin_edges, bincount, cov and corrcoef against numpy,
under jit / vmap, and their gradients against finite differences."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import ember
import ember.numpy as enp
from ember.testing import check_grads, check_vmap

floats = st.floats(-10, 10, allow_nan=False, width=64)


@settings(max_examples=25, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 40), elements=floats), st.integers(1, 12),
       st.booleans(), st.booleans())
def test_histogram_matches_numpy(x, bins, use_range, density):
    rng = (-5.0, 5.0) if use_range else None
    w = np.linspace(0.5, 2.0, x.size)
    for weights in (None, w):
        h, e = enp.histogram(x, bins, range=rng, density=density, weights=weights)
        # edges by ember's linspace may differ from numpy's in the last ulp: count with ours
        href, eref = np.histogram(x, np.asarray(e), density=density, weights=weights)
        np.testing.assert_allclose(np.asarray(e), np.histogram_bin_edges(x, bins, rng),
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(h), href, rtol=1e-12)
        if weights is None and not density:
            assert h.dtype == enp.int32


def test_histogram_edges_as_array_and_defaults():
    x = np.array([0.0, 0.5, 1.0, 1.0, 2.0, 7.0])
    h, e = enp.histogram(x, bins=[0.0, 1.0, 2.0])
    href, _ = np.histogram(x, bins=[0.0, 1.0, 2.0])
    assert h.tolist() == href.tolist() == [2, 3]
    assert enp.histogram_bin_edges(x).tolist() == pytest.approx(np.histogram_bin_edges(x).tolist())
    # an empty range is widened by 0.5 each side, as numpy does
    h, e = enp.histogram(np.ones(3), bins=2)
    assert e.tolist() == np.histogram(np.ones(3), bins=2)[1].tolist()
    with pytest.raises(TypeError, match="integer or an array of edges"):
        enp.histogram(x, bins="auto")
    with pytest.raises(ValueError, match="shape of a"):
        enp.histogram(x, weights=np.ones(2))


def test_histogram_jit_vmap_grad():
    r = np.random.default_rng(0)
    x = r.normal(size=(4, 30)).astype(np.float32)
    f = lambda v: enp.histogram(v, 6, range=(-2.0, 2.0))[0]  # noqa: E731
    for row in x:
        assert ember.jit(f)(row).tolist() == np.histogram(row, 6, range=(-2, 2))[0].tolist()
    check_vmap(f, (x,))
    assert ember.jit(lambda v: enp.histogram(v, 5)[0])(x[0]).tolist() == \
        np.histogram(x[0], 5)[0].tolist()
    # weighted counts are linear in the weights
    xs = x[0].astype(np.float64)
    check_grads(lambda w: enp.histogram(xs, 5, weights=w, density=True)[0], (np.ones(30),),
                order=1)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 30), st.integers(1, 6), st.integers(1, 6), st.booleans())
def test_histogram2d_matches_numpy(n, bx, by, weighted):
    r = np.random.default_rng(n)
    x, y = r.normal(size=n), r.normal(size=n)
    w = r.uniform(size=n) if weighted else None
    for bins in (bx, (bx, by)):
        H, xe, ye = enp.histogram2d(x, y, bins=bins, weights=w)
        Hr, _, _ = np.histogram2d(x, y, bins=[np.asarray(xe), np.asarray(ye)], weights=w)
        np.testing.assert_allclose(np.asarray(H), Hr, rtol=1e-12)
    edges = [np.linspace(-2, 2, 4), np.linspace(-1, 1, 3)]
    H, _, _ = enp.histogram2d(x, y, bins=edges, density=True, weights=w)
    Hr, _, _ = np.histogram2d(x, y, bins=edges, density=True, weights=w)
    np.testing.assert_allclose(np.asarray(H), Hr, rtol=1e-12)


def test_bincount_length_is_jittable_and_matches_numpy():
    x = np.array([0, 1, 1, 5, 3])
    w = np.array([0.5, 1.0, 2.0, 3.0, 4.0])
    assert enp.bincount(x).tolist() == np.bincount(x).tolist()
    np.testing.assert_allclose(np.asarray(enp.bincount(x, w, minlength=8)),
                               np.bincount(x, w, minlength=8))
    # length fixes the output size; values past it are dropped (JAX)
    assert ember.jit(lambda v: enp.bincount(v, length=4))(x).tolist() == [1, 2, 0, 1]
    assert ember.jit(lambda v: enp.bincount(v, length=8))(x).tolist() == \
        np.bincount(x, minlength=8).tolist()
    check_grads(lambda w: enp.bincount(x, w, length=6), (w,), order=2)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(2, 9), st.booleans(), st.booleans(),
       st.sampled_from([None, 0, 2]), st.booleans(), st.booleans())
def test_cov_matches_numpy(nvar, nobs, rowvar, bias, ddof, fw, aw):
    r = np.random.default_rng(nvar * 10 + nobs)
    m = r.normal(size=(nvar, nobs))
    y = r.normal(size=(2, nobs))
    if not rowvar:
        m, y = m.T, y.T
    kw = dict(rowvar=rowvar, bias=bias, ddof=ddof,
              fweights=r.integers(1, 4, size=nobs) if fw else None,
              aweights=r.uniform(0.1, 1, size=nobs) if aw else None)
    np.testing.assert_allclose(np.asarray(enp.cov(m, **kw)), np.cov(m, **kw), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(np.asarray(enp.cov(m, y, **kw)), np.cov(m, y, **kw), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(np.asarray(enp.corrcoef(m, y, rowvar=rowvar)),
                               np.corrcoef(m, y, rowvar=rowvar), rtol=1e-10, atol=1e-12)


def test_cov_corrcoef_shapes_complex_transforms():
    r = np.random.default_rng(1)
    v = r.normal(size=7)
    assert enp.cov(v).shape == () and float(enp.cov(v)) == pytest.approx(float(np.cov(v)))
    assert float(enp.corrcoef(v)) == 1.0
    z = r.normal(size=(2, 5)) + 1j * r.normal(size=(2, 5))
    np.testing.assert_allclose(np.asarray(enp.cov(z)), np.cov(z), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(enp.corrcoef(z)), np.corrcoef(z), rtol=1e-12)
    m = r.normal(size=(3, 6))
    np.testing.assert_allclose(np.asarray(ember.jit(enp.cov)(m)), np.cov(m), rtol=1e-12)
    check_vmap(enp.cov, (r.normal(size=(4, 3, 6)),))
    check_grads(lambda a: enp.cov(a, aweights=np.arange(1.0, 7.0)), (m,), order=2)
    check_grads(enp.corrcoef, (m,), order=1)
    # non-positive degrees of freedom are clamped to 0, as numpy does (inf / nan result)
    with np.errstate(divide="ignore", invalid="ignore"):
        for kw in ({"ddof": 2}, {"ddof": 2, "aweights": np.array([0.3, 0.9])}):
            np.testing.assert_array_equal(np.asarray(enp.cov(np.array([1.0, 3.0]), **kw)),
                                          np.cov(np.array([1.0, 3.0]), **kw))
    with pytest.raises(TypeError, match="fweights must be integers"):
        enp.cov(m, fweights=np.ones(6))
    with pytest.raises(ValueError, match="one weight per observation"):
        enp.cov(m, aweights=np.ones(5))
