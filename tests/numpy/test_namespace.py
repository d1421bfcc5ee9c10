"""The namespace itself: array API inspection, dtype utilities, constants, astype, the
Array methods and operators, numpy-style errors, and graphs of a sample of functions."""
import math
import operator

import numpy as np
import pytest

import ember
import ember.dtypes as dt
import ember.numpy as enp
from ember.fx.ir import typecheck

from enp_strategies import ALL, INTS


def test_array_api_version_and_info():
    assert enp.__array_api_version__ == "2024.12"
    info = enp.__array_namespace_info__()
    caps = info.capabilities()
    assert set(caps) >= {"boolean indexing", "data-dependent shapes", "max dimensions"}
    assert info.default_dtypes() == {"real floating": dt.float32, "complex floating": dt.complex64,
                                     "integral": dt.int32, "indexing": dt.int32}
    assert info.default_device() in info.devices()
    all_dtypes = info.dtypes()
    assert "bfloat16" not in all_dtypes and all_dtypes["float64"] == dt.float64
    assert set(info.dtypes(kind="integral")) == {"int8", "int16", "int32", "int64", "uint8",
                                                 "uint16", "uint32", "uint64"}
    assert set(info.dtypes(kind=("bool", "complex floating"))) == {"bool", "complex64",
                                                                  "complex128"}
    x = enp.ones(2)
    assert x.__array_namespace__() is enp
    with pytest.raises(ValueError):
        x.__array_namespace__(api_version="1999.01")


def test_dtype_names_and_constants():
    for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float16", "bfloat16", "float32", "float64", "complex64", "complex128"):
        assert getattr(enp, name) == dt.canonicalize(name)
    assert enp.e == math.e and enp.pi == math.pi and math.isinf(enp.inf) and math.isnan(enp.nan)
    assert enp.newaxis is None
    assert enp.ones((2, 3))[:, enp.newaxis].shape == (2, 1, 3)


def test_isdtype_finfo_iinfo():
    assert enp.isdtype(enp.float32, "real floating")
    assert enp.isdtype(enp.complex64, ("integral", "complex floating"))
    assert not enp.isdtype(enp.bool, "numeric")
    assert enp.isdtype(enp.int8, enp.int8)
    with pytest.raises(ValueError):
        enp.isdtype(enp.int8, "floaty")
    for d in (enp.float16, enp.bfloat16, enp.float32, enp.float64):
        fi = enp.finfo(d)
        ref = dt.finfo(d)
        assert isinstance(fi.eps, float) and isinstance(fi.max, float)
        assert isinstance(fi.min, float) and isinstance(fi.smallest_normal, float)
        assert fi.bits == ref.bits and fi.eps == float(ref.eps) and fi.dtype == d
    assert enp.finfo(enp.complex64).dtype == enp.float32
    assert enp.finfo(enp.ones(2, dtype="float64")).bits == 64
    for d in INTS:
        ii = enp.iinfo(d)
        assert ii.max == np.iinfo(d).max and ii.min == np.iinfo(d).min and ii.bits == np.iinfo(d).bits
    with pytest.raises(TypeError):
        enp.finfo(enp.int32)
    with pytest.raises(TypeError):
        enp.iinfo(enp.float32)
    assert enp.issubdtype(enp.bfloat16, enp.floating)
    assert enp.issubdtype(enp.int8, enp.integer) and not enp.issubdtype(enp.int8, enp.floating)
    assert enp.promote_types("int8", "uint8") == dt.int16


@pytest.mark.parametrize("src", ALL)
@pytest.mark.parametrize("dst", [dt.bool_, dt.int8, dt.uint32, dt.float16, dt.float32,
                                 dt.complex128])
def test_astype(src, dst):
    a = np.array([0, 1, 2], dtype=np.float32).astype(src)
    got = enp.astype(enp.asarray(a), dst)
    assert got.dtype == dst
    with np.errstate(all="ignore"), __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore")
        want = a.astype(dst)
    np.testing.assert_array_equal(np.asarray(got), want)
    assert enp.asarray(a).astype(dst).dtype == dst


def test_astype_float_to_bool_and_int():
    x = enp.asarray([0.0, -0.0, 0.5, np.nan])
    assert enp.astype(x, "bool").tolist() == [False, False, True, True]
    assert enp.astype(enp.asarray([-1.7, 2.9]), "int32").tolist() == [-1, 2]


def test_operators_and_methods():
    a = np.array([[1.0, -2.0], [3.0, 4.0]], np.float32)
    x = enp.asarray(a)
    ops = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
           operator.mod, operator.pow, operator.lt, operator.le, operator.gt, operator.ge,
           operator.eq, operator.ne]
    for op in ops:
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(np.asarray(op(x, 2.0)), op(a, np.float32(2.0)), rtol=1e-6)
            np.testing.assert_allclose(np.asarray(op(2.0, x)), op(np.float32(2.0), a), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(x @ x), a @ a)
    np.testing.assert_allclose(np.asarray(-x), -a)
    np.testing.assert_allclose(np.asarray(+x), a)
    np.testing.assert_allclose(np.asarray(abs(x)), abs(a))
    i = enp.asarray(np.array([5, 6], np.int32))
    assert (~i).tolist() == [-6, -7]
    assert (i & 3).tolist() == [1, 2] and (i | 1).tolist() == [5, 7] and (i ^ 1).tolist() == [4, 7]
    assert (i << 1).tolist() == [10, 12] and (i >> 1).tolist() == [2, 3]
    assert (1 << i).tolist() == [32, 64]
    assert [v.tolist() for v in divmod(i, 4)] == [[1, 1], [1, 2]]
    assert x.sum().item() == 6.0 and x.mean(axis=0).tolist() == [2.0, 1.0]
    assert x.max().item() == 4.0 and x.argmin().item() == 1
    assert x.std(ddof=1).item() == pytest.approx(np.std(a, ddof=1))
    assert x.T.tolist() == a.T.tolist() and x.mT.tolist() == a.T.tolist()
    assert x.flatten().shape == (4,) and x.ravel().shape == (4,)
    assert x.reshape(4, 1).shape == (4, 1) and x.reshape((1, 4)).shape == (1, 4)
    assert x.transpose().tolist() == a.T.tolist()
    assert x.astype("int32").dtype == dt.int32
    assert x.clip(0, 3).tolist() == np.clip(a, 0, 3).tolist()
    assert x.any().item() and not (x > 10).all().item()
    assert x.cumsum().tolist() == np.cumsum(a).tolist()
    assert enp.asarray([1 + 2j]).real.tolist() == [1.0]
    assert enp.asarray([1 + 2j]).imag.tolist() == [2.0]
    assert enp.asarray([1 + 2j]).conj().tolist() == [1 - 2j]
    assert len(x) == 2 and [r.tolist() for r in x] == a.tolist()
    assert float(x[0, 0]) == 1.0 and int(i[0]) == 5 and bool(x[1, 1] > 0)
    assert 3.0 in x
    with pytest.raises(TypeError, match=r"\.at\["):
        x[0, 0] = 5.0


def test_numpy_style_errors():
    with pytest.raises(TypeError, match=r"add: shapes \(2,\), \(3,\) cannot be broadcast"):
        enp.add(enp.ones(2), enp.ones(3))
    with pytest.raises(TypeError, match="row-major"):
        enp.reshape(enp.ones(4), (2, 2), order="F")
    with pytest.raises(TypeError, match="immutable"):
        enp.sum(enp.ones(2), out=enp.ones(()))
    with pytest.raises(np.exceptions.AxisError, match="sum: axis 2"):
        enp.sum(enp.ones((2, 2)), axis=2)
    with pytest.raises(TypeError, match="not a dtype|not supported"):
        enp.zeros(2, dtype="float128")
    with pytest.raises(TypeError, match="bitwise_and.*float32.*allowed dtypes"):
        enp.bitwise_and(enp.ones(2), 1)
    with pytest.raises(ValueError, match="reshape.*size 4.*\\(3,\\)"):
        enp.reshape(enp.ones(4), (3,))


# A sample of functions staged with make_graph and type-checked (every graph the suite builds
# goes through typecheck).
_SAMPLE = [
    lambda x: enp.floor_divide(x, 3.0) + enp.remainder(x, -2.0),
    lambda x: enp.hypot(x, 2.0) + enp.logaddexp(x, x) + enp.copysign(x, -1.0),
    lambda x: enp.where(x > 0, enp.sqrt(enp.abs(x)), enp.exp(x)),
    lambda x: enp.isnan(x) | enp.isinf(x) | enp.signbit(x),
    lambda x: enp.clip(x, -1, 1) + enp.round(x, 2) + enp.trunc(x) + enp.sign(x),
    lambda x: enp.cumulative_sum(x, axis=1) + enp.cumulative_prod(x, axis=0),
    lambda x: enp.std(x, axis=0) + enp.var(x, axis=0, correction=1) + enp.mean(x),
    lambda x: enp.sort(x, axis=0) + enp.take_along_axis(x, enp.argsort(x, axis=1), axis=1),
    lambda x: enp.quantile(x, 0.3, axis=1),
    lambda x: x[::-1, 1:] + x[enp.asarray([0, 2, 1]), :1] + x[..., None][0, 0],
    lambda x: x.at[0].set(1.0).at[:, 1].add(2.0).at[enp.asarray([1, 1]), 0].multiply(3.0),
    lambda x: enp.pad(x, ((1, 0), (2, 1)), mode="symmetric"),
    lambda x: enp.einsum("ij,kj->ik", x, x) + enp.tensordot(x, x.T, 1),
    lambda x: enp.concat([x, x[:1]]).sum(axis=0) + enp.tile(x, (1, 2)).max(axis=1).sum(),
    lambda x: enp.diff(x, axis=0).sum() + enp.count_nonzero(x > 0) + enp.any(x > 2),
    lambda x: enp.pow(x, 2) + x ** 3 + enp.pow(2.0, x),
    lambda x: enp.isin(x, enp.asarray([1.0, 2.0])) & enp.isclose(x, 1.0),
    lambda x: enp.roll(x, 1, axis=0) + enp.rot90(x.reshape(3, 3)) + enp.tril(x.reshape(3, 3)),
]


@pytest.mark.parametrize("k", range(len(_SAMPLE)))
def test_sample_graphs_typecheck(k):
    f = _SAMPLE[k]
    x = enp.asarray(np.arange(9, dtype=np.float32).reshape(3, 3) - 4.0)
    g = ember.make_graph(f)(x)
    typecheck(g)
    out = ember.jit(f)(x)
    eager = f(x)
    np.testing.assert_allclose(np.asarray(out).astype(np.float64),
                               np.asarray(eager).astype(np.float64), rtol=1e-5, atol=1e-5)


def test_transforms_compose_with_namespace_functions():
    x = enp.asarray([0.3, -1.2, 2.0])
    g = ember.grad(lambda v: enp.sum(enp.hypot(v, 1.0) + enp.logaddexp(v, 0.5)))(x)
    xs = np.asarray(x, np.float64)
    want = xs / np.hypot(xs, 1.0) + 1 / (1 + np.exp(0.5 - xs))
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5)
    y = ember.vmap(lambda r: enp.sort(r)[::-1][:2])(enp.asarray(np.arange(6.0).reshape(2, 3)))
    assert y.tolist() == [[2.0, 1.0], [5.0, 4.0]]
    from ember.testing import check_grads
    check_grads(lambda v: enp.var(v) + enp.quantile(v, 0.4), (np.array([0.3, -1.2, 2.0, 0.7]),),
                order=1, modes=("rev",))
