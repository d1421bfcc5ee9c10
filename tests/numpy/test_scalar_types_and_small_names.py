"""`enp.float32(...)`-style constructors that are still dtypes, `enp.ndarray`, positional
tril/triu k, nbytes/itemsize, comparisons with lists, frexp/ldexp, nan_to_num and interp."""
import pickle

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import ember
import ember.dtypes as dt
import ember.numpy as enp
from ember.testing import check_grads

NAMES = ["bool", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
         "uint64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("name", NAMES)
def test_scalar_type_constructs_and_is_a_dtype(name):
    t = getattr(enp, name)
    d = dt.canonicalize("bool" if name == "bool_" else name)
    x = t(1)
    assert isinstance(x, ember.Array) and x.dtype == d and x.shape == ()
    assert t([1, 0]).dtype == d and t([1, 0]).shape == (2,)
    assert np.asarray(t([1, 0])).tolist() == np.asarray([1, 0], dtype=d).tolist()
    # every place the plain dtype worked
    assert np.dtype(t) == d and x.dtype == t and t == d and d == t and t == d.name
    assert hash(t) == hash(d) and {d: 1}[t] == 1
    assert enp.zeros(3, dtype=t).dtype == d and enp.ones(2).astype(t).dtype == d
    assert enp.asarray(np.ones(2)).astype(t).dtype == d
    assert np.zeros(2, dtype=t).dtype == d
    assert t.itemsize == d.itemsize and t.name == d.name
    assert pickle.loads(pickle.dumps(t)) is t
    assert enp.dtype(t) == d


def test_scalar_types_under_jit_and_in_dtype_utilities():
    f = ember.jit(lambda x: enp.float32(x) * 2)
    y = f(np.float64(1.5))
    assert y.dtype == enp.float32 and float(y) == 3.0
    assert enp.bfloat16(1.5).dtype == ml_dtypes.bfloat16
    assert enp.issubdtype(enp.bfloat16, enp.floating)
    assert enp.isdtype(enp.float32, "real floating") and not enp.isdtype(enp.int8, "bool")
    assert enp.finfo(enp.float16).bits == 16 and enp.iinfo(enp.int8).max == 127
    assert enp.promote_types(enp.int8, enp.uint8) == enp.int16
    assert enp.result_type(enp.float32, 1.0) == enp.float32
    assert enp.can_cast(enp.int8, enp.int16)
    assert ember.grad(lambda x: enp.float64(x) ** 2)(3.0) == 6.0
    assert ember.lax.convert_element_type(enp.ones(2), enp.int8).dtype == dt.int8
    assert enp.float32 != enp.float64 and enp.float32 != "int8"


def test_ndarray_isinstance():
    assert isinstance(enp.ones(2), enp.ndarray)
    assert not isinstance(np.ones(2), enp.ndarray) and not isinstance(1.0, enp.ndarray)
    seen = []
    ember.jit(lambda x: seen.append(isinstance(x, enp.ndarray)) or x)(enp.ones(2))
    ember.grad(lambda x: seen.append(isinstance(x, enp.ndarray)) or x.sum())(enp.ones(2))
    ember.vmap(lambda x: seen.append(isinstance(x, enp.ndarray)) or x)(enp.ones(2))
    assert seen == [True, True, True]
    with pytest.raises(TypeError, match="isinstance checks"):
        enp.ndarray((2,))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(-6, 6))
def test_tril_triu_positional_k(n, m, k):
    a = np.arange(n * m, dtype=np.float32).reshape(n, m)
    assert enp.tril(a, k).tolist() == np.tril(a, k).tolist()
    assert enp.triu(a, k).tolist() == np.triu(a, k).tolist()
    assert enp.tril(a, k=k).tolist() == np.tril(a, k=k).tolist()


def test_nbytes_itemsize_also_on_tracers():
    x = enp.ones((3, 4), dtype="float16")
    assert (x.nbytes, x.itemsize) == (24, 2) == (np.ones((3, 4), np.float16).nbytes, 2)
    seen = []
    ember.jit(lambda x: seen.append((x.nbytes, x.itemsize)) or x)(enp.ones(5, dtype="float64"))
    assert seen == [(40, 8)]


def test_compare_with_list_and_tuple():
    x = enp.asarray([1, 2, 3])
    assert (x == [1, 5, 3]).tolist() == [True, False, True]
    assert (x != (1, 5, 3)).tolist() == [False, True, False]
    assert (x < [2, 2, 2]).tolist() == [True, False, False]
    assert (x >= [[3], [1]]).tolist() == (np.array([1, 2, 3]) >= [[3], [1]]).tolist()
    assert ([1, 5, 3] == x).tolist() == [True, False, True]  # reflected
    got = ember.jit(lambda x: x == [1.0, 0.0, 3.0])(x)
    assert got.tolist() == [True, False, True]
    assert (x == None) is False  # noqa: E711


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_frexp_ldexp_match_numpy_bitwise(dtype):
    d = dt.canonicalize(dtype)
    fi = ml_dtypes.finfo(d)
    vals = [0.0, -0.0, 1.0, -3.0, 0.75, 1e-3, float(fi.tiny), float(fi.smallest_subnormal),
            3 * float(fi.smallest_subnormal), float(fi.max), -float(fi.max), np.inf, -np.inf,
            np.nan]
    x = np.array(vals, d)
    ref_m, ref_e = np.frexp(x.astype(np.float64))  # exact in float64 for every narrower type
    for f in (enp.frexp, ember.jit(enp.frexp)):
        m, e = f(x)
        assert m.dtype == d and e.dtype == enp.int32
        assert np.array_equal(np.asarray(m).astype(np.float64), ref_m, equal_nan=True)
        assert np.asarray(e).tolist() == ref_e.tolist()
    back = enp.ldexp(*enp.frexp(x))
    assert np.array_equal(np.asarray(back).astype(np.float64), x.astype(np.float64),
                          equal_nan=True)


@settings(max_examples=25, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 10),
                  elements=st.floats(-1e300, 1e300, allow_nan=False)),
       hnp.arrays(np.int32, st.integers(1, 10), elements=st.integers(-60, 60)))
def test_frexp_ldexp_hypothesis(x, e):
    m, ex = enp.frexp(x)
    rm, re = np.frexp(x)
    assert np.array_equal(np.asarray(m), rm) and np.array_equal(np.asarray(ex), re)
    n = min(len(x), len(e))
    x32 = np.clip(x[:n], -1e30, 1e30).astype(np.float32)
    got = enp.ldexp(x32, e[:n])
    np.testing.assert_array_equal(np.asarray(got), np.ldexp(x32, e[:n]))


def test_frexp_gradient():
    x = np.array([3.0, -10.0, 0.3])
    check_grads(lambda x: enp.frexp(x)[0], (x,), order=2)
    np.testing.assert_allclose(np.asarray(ember.grad(lambda x: enp.frexp(x)[0].sum())(x)),
                               2.0 ** -np.frexp(x)[1])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64"])
def test_nan_to_num_matches_numpy(dtype):
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -2.0], dtype)
    if dtype == "complex64":
        x = x + 1j * np.array([np.inf, np.nan, 1.0, -np.inf, 0.0], np.float32)
    for kw in ({}, {"nan": 7.0}, {"posinf": 3.0, "neginf": -4.0},
               {"nan": 1.0, "posinf": 2.0, "neginf": 3.0}):
        got = enp.nan_to_num(x, **kw)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(np.asarray(got), np.nan_to_num(x, **kw))
    assert enp.nan_to_num(np.arange(3)).tolist() == [0, 1, 2]
    assert ember.jit(enp.nan_to_num)(x).tolist() == np.nan_to_num(x).tolist()


def test_nan_to_num_bfloat16_and_grad():
    x = np.array([np.nan, np.inf, -np.inf, 1.5], ml_dtypes.bfloat16)
    got = np.asarray(enp.nan_to_num(x, nan=7.0)).astype(np.float64)
    big = float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    assert got.tolist() == [7.0, big, -big, 1.5]
    g = ember.grad(lambda v: enp.nan_to_num(v * 1.0).sum())(np.array([1.0, np.nan]))
    assert np.asarray(g).tolist() == [1.0, 0.0]


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 8), st.integers(1, 10))
def test_interp_matches_numpy(n, k):
    r = np.random.default_rng(n * 11 + k)
    xp = np.sort(r.uniform(-3, 3, size=n))
    fp = r.normal(size=n)
    x = r.uniform(-4, 4, size=k)
    np.testing.assert_allclose(np.asarray(enp.interp(x, xp, fp)), np.interp(x, xp, fp),
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(enp.interp(x, xp, fp, left=-9.0, right=9.0)),
                               np.interp(x, xp, fp, left=-9.0, right=9.0), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(enp.interp(x, xp, fp, period=2.5)),
                               np.interp(x, xp, fp, period=2.5), rtol=1e-10, atol=1e-12)
