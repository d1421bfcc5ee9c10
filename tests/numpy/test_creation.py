"""Creation functions vs numpy."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.dtypes as dt
import ember.numpy as enp
from ember.fx.ir import typecheck

from enp_strategies import ALL, arrays, assert_close

SET = settings(max_examples=20, deadline=None)


@SET
@given(start=st.integers(-20, 20), stop=st.integers(-20, 20), step=st.integers(-5, 5).filter(bool))
def test_arange_ints(start, stop, step):
    got = enp.arange(start, stop, step)
    assert got.dtype == dt.int32
    np.testing.assert_array_equal(np.asarray(got), np.arange(start, stop, step))


@SET
@given(start=st.floats(-10, 10), stop=st.floats(-10, 10),
       step=st.floats(0.1, 3) | st.floats(-3, -0.1))
def test_arange_floats(start, stop, step):
    got = enp.arange(start, stop, step)
    want = np.arange(start, stop, step)
    assert got.dtype == dt.float32
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want.astype(np.float32), rtol=1e-5, atol=1e-5)


def test_arange_forms_and_dtypes():
    assert enp.arange(5).tolist() == list(range(5))
    assert enp.arange(2, 5).tolist() == [2, 3, 4]
    assert enp.arange(5, dtype="float64").dtype == dt.float64
    assert enp.arange(3, dtype="uint8").tolist() == [0, 1, 2]
    assert enp.arange(0).shape == (0,)
    assert enp.arange(10, 0, -3).tolist() == [10, 7, 4, 1]
    with pytest.raises(ValueError):
        enp.arange(0, 5, 0)


@pytest.mark.parametrize("d", ALL)
def test_full_zeros_ones_empty(d):
    for shape in [(), (0,), (2, 3)]:
        z = enp.zeros(shape, dtype=d)
        o = enp.ones(shape, dtype=d)
        assert z.dtype == d and z.shape == shape
        np.testing.assert_array_equal(np.asarray(z), np.zeros(shape, d))
        np.testing.assert_array_equal(np.asarray(o), np.ones(shape, d))
        assert enp.empty(shape, dtype=d).shape == shape
    assert enp.full((2,), 3, dtype=d).dtype == d


def test_default_dtypes():
    assert enp.zeros(2).dtype == dt.float32
    assert enp.full(2, 1).dtype == dt.int32
    assert enp.full(2, 1.0).dtype == dt.float32
    assert enp.full(2, True).dtype == dt.bool_
    assert enp.full(2, 1j).dtype == dt.complex64
    assert enp.full(2, np.float64(1.0)).dtype == dt.float64
    assert enp.full((2, 2), enp.asarray([1, 2])).tolist() == [[1, 2], [1, 2]]


@SET
@given(data=st.data())
def test_like_functions(data):
    d = data.draw(st.sampled_from(ALL))
    a = data.draw(arrays(d))
    x = enp.asarray(a)
    for fn, ref in ((enp.zeros_like, np.zeros_like), (enp.ones_like, np.ones_like)):
        got = fn(x)
        assert got.dtype == d and got.shape == a.shape
        np.testing.assert_array_equal(np.asarray(got), ref(a))
    assert enp.empty_like(x).shape == a.shape
    assert enp.full_like(x, 1, dtype="int8").dtype == dt.int8
    assert enp.zeros_like(x, shape=(4,)).shape == (4,)


def test_full_like_converts_fill_value():
    assert enp.full_like(enp.asarray([1, 2]), 2.7).tolist() == [2, 2]


@pytest.mark.parametrize("n,m,k", [(3, None, 0), (3, 4, 1), (4, 3, -2), (0, 2, 0), (2, 2, 5)])
def test_eye_tri_identity(n, m, k):
    np.testing.assert_array_equal(np.asarray(enp.eye(n, m, k=k)), np.eye(n, m, k=k, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(enp.tri(n, m, k, dtype="int32")),
                                  np.tri(n, m, k, dtype=np.int32))
    assert enp.eye(n, m, k=k, dtype="bool").dtype == dt.bool_
    np.testing.assert_array_equal(np.asarray(enp.identity(n, dtype="int8")), np.identity(n, np.int8))


@SET
@given(data=st.data())
def test_tril_triu(data):
    d = data.draw(st.sampled_from(ALL))
    shape = data.draw(st.tuples(st.integers(0, 3), st.integers(0, 4), st.integers(0, 4)))
    a = data.draw(arrays(d, shape))
    k = data.draw(st.integers(-4, 4))
    assert_close(enp.tril(enp.asarray(a), k=k), np.tril(a, k), d)
    assert_close(enp.triu(enp.asarray(a), k=k), np.triu(a, k), d)


@SET
@given(start=st.floats(-10, 10), stop=st.floats(-10, 10), num=st.integers(0, 12),
       endpoint=st.booleans())
def test_linspace(start, stop, num, endpoint):
    got = enp.linspace(start, stop, num, endpoint=endpoint)
    want = np.linspace(start, stop, num, endpoint=endpoint).astype(np.float32)
    assert got.dtype == dt.float32
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


def test_linspace_variants():
    np.testing.assert_array_equal(np.asarray(enp.linspace(0, 10, 5, dtype="int32")),
                                  np.linspace(0, 10, 5, dtype=np.int32))
    y, step = enp.linspace(0.0, 1.0, 5, retstep=True)
    assert float(step) == 0.25
    a = enp.linspace(enp.asarray([0.0, 1.0]), enp.asarray([1.0, 3.0]), 3)
    np.testing.assert_allclose(np.asarray(a), np.linspace([0.0, 1.0], [1.0, 3.0], 3))
    assert enp.linspace(0, 1j, 3).dtype == dt.complex64
    np.testing.assert_allclose(np.asarray(enp.logspace(0, 3, 4)), np.logspace(0, 3, 4), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(enp.geomspace(1, 1000, 4)), np.geomspace(1, 1000, 4),
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(enp.geomspace(-1, -16, 5)), np.geomspace(-1, -16, 5),
                               rtol=1e-5)


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid(indexing, sparse):
    a, b, c = np.arange(3), np.arange(2) + 5, np.arange(4) * 2
    got = enp.meshgrid(enp.asarray(a), enp.asarray(b), enp.asarray(c), indexing=indexing,
                       sparse=sparse)
    want = np.meshgrid(a, b, c, indexing=indexing, sparse=sparse)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w.astype(np.asarray(g).dtype))
    assert enp.meshgrid() == []


@pytest.mark.parametrize("k", [-2, 0, 1, 3])
def test_diag_diagflat(k):
    v = np.array([1, 2, 3], np.int32)
    np.testing.assert_array_equal(np.asarray(enp.diag(enp.asarray(v), k)), np.diag(v, k))
    m = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(np.asarray(enp.diag(enp.asarray(m), k)), np.diag(m, k))
    np.testing.assert_array_equal(np.asarray(enp.diagflat(enp.asarray(m[:1, :2]), k)),
                                  np.diagflat(m[:1, :2], k))


def test_vander_fromfunction_copy():
    x = np.array([1, 2, 3])
    np.testing.assert_array_equal(np.asarray(enp.vander(enp.asarray(x))), np.vander(x))
    np.testing.assert_array_equal(np.asarray(enp.vander(enp.asarray(x), 2, increasing=True)),
                                  np.vander(x, 2, increasing=True))
    assert enp.fromfunction(lambda i, j: i * 10 + j, (2, 3), dtype=int).tolist() == \
        [[0, 1, 2], [10, 11, 12]]
    assert enp.copy([1, 2]).tolist() == [1, 2]


def test_asarray_and_from_dlpack():
    x = enp.asarray([[1, 2], [3, 4]])
    assert x.dtype == dt.int32
    assert enp.asarray(x) is x
    assert enp.asarray(x, dtype="float32").dtype == dt.float32
    assert enp.asarray([x, x]).shape == (2, 2, 2)
    assert enp.asarray([enp.asarray(1.0), 2.0]).tolist() == [1.0, 2.0]
    n = np.arange(6, dtype=np.int16).reshape(2, 3)
    y = enp.from_dlpack(n)
    assert y.dtype == dt.int16 and y.tolist() == n.tolist()
    n[0, 0] = 99  # the ember array owns a copy
    assert y.tolist()[0][0] == 0
    z = enp.from_dlpack(y)
    assert z.tolist() == y.tolist()
    back = np.from_dlpack(y)
    np.testing.assert_array_equal(back, np.asarray(y))
    # the array API: copy=False never copies (the memory is shared read-only)
    assert np.shares_memory(np.asarray(enp.from_dlpack(n, copy=False)), n)


def test_creation_under_make_graph():
    def f(x):
        return (enp.arange(3) + enp.eye(3) @ x + enp.tril(enp.ones((3, 3))) @ x
                + enp.linspace(0, 1, 3) + enp.full((3,), 2.0))
    g = ember.make_graph(f)(enp.ones(3))
    typecheck(g)
    np.testing.assert_allclose(np.asarray(f(enp.ones(3))),
                               np.arange(3) + 1 + np.array([1, 2, 3]) + np.linspace(0, 1, 3) + 2)


# --- Python ints out of range raise (audit #12 item 2) -----------------------------

_INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@given(st.sampled_from(_INT_DTYPES), st.data())
@settings(max_examples=60, deadline=None)
def test_asarray_python_ints_in_and_out_of_range(name, data):
    info = np.iinfo(name)
    inside = st.integers(int(info.min), int(info.max))
    outside = st.one_of(st.integers(int(info.max) + 1, int(info.max) + 2 ** 70),
                        st.integers(int(info.min) - 2 ** 70, int(info.min) - 1))
    good = data.draw(st.lists(inside, min_size=1, max_size=4))
    for ctor in (enp.asarray, enp.array):
        got = ctor(good, dtype=name)
        assert got.dtype == np.dtype(name) and got.tolist() == good
    bad = data.draw(outside)
    pos = data.draw(st.integers(0, len(good)))
    nested = [good[:pos] + [bad] + good[pos:]]
    for ctor in (enp.asarray, enp.array):
        with pytest.raises(OverflowError, match=rf"Python int {bad} is out of range for dtype "
                                                rf"{name}"):
            ctor(nested, dtype=name)
        with pytest.raises(OverflowError, match=str(bad)):
            ctor(bad, dtype=name)


def test_asarray_overflow_examples_and_numpy_arrays_keep_astype():
    with pytest.raises(OverflowError, match="300 is out of range for dtype int8"):
        enp.asarray([300, -200], dtype="int8")
    with pytest.raises(OverflowError, match="256 is out of range for dtype uint8"):
        enp.array([256], dtype="uint8")
    with pytest.raises(OverflowError, match="int32"):
        enp.asarray([2 ** 40])
    assert enp.asarray([2 ** 40], dtype="int64").tolist() == [2 ** 40]
    # numpy turns these ints into float64; without a dtype they must not become float32
    with pytest.raises(OverflowError, match=str(2 ** 63)):
        enp.asarray([[2 ** 63], [-1]])
    assert enp.asarray([2.0 ** 70, 2 ** 40]).dtype == dt.float32  # a float promotes the ints
    # converting an existing numpy array keeps numpy's astype semantics
    src = np.array([300, -200])
    assert enp.asarray(src, dtype="int8").tolist() == src.astype(np.int8).tolist()


@pytest.mark.parametrize("name", ["int8", "uint8", "int16"])
def test_weak_python_ints_in_ops_and_creation_raise(name):
    info = np.iinfo(name)
    big = int(info.max) + 1
    x = enp.asarray([1, 2], dtype=name)
    for f in (lambda v: v + big, lambda v: v * big, lambda v: enp.maximum(v, big),
              lambda v: enp.where(v > 1, v, big), lambda v: v.at[0].set(big)):
        with pytest.raises(OverflowError, match=str(big)):
            f(x)
        with pytest.raises(OverflowError, match=str(big)):
            ember.jit(f)(x)
    with pytest.raises(OverflowError, match=str(big)):
        enp.full((2,), big, dtype=name)
    with pytest.raises(OverflowError, match=rf"arange: value {big} .* {name}"):
        enp.arange(big + 1, dtype=name)
    got = enp.arange(int(info.max) - 2, int(info.max) + 1, dtype=name)
    assert got.tolist() == list(range(int(info.max) - 2, int(info.max) + 1))


# --- DLPack export/import and copy= (audit #12 item 4) ------------------------------

def _unversioned(capsule):
    """A DLPack producer that only hands out the given capsule (an old-style consumer)."""
    class P:
        def __dlpack__(self, **kw):
            return capsule

        def __dlpack_device__(self):
            return (1, 0)
    return P()


def test_dlpack_export_is_read_only_or_a_copy():
    x = enp.arange(4.0)
    base = np.asarray(x)
    y = np.from_dlpack(x)  # DLPack >= 1.0: shared, flagged read-only
    assert y.tolist() == [0.0, 1.0, 2.0, 3.0] and not y.flags.writeable
    assert np.shares_memory(y, base)
    y = np.from_dlpack(x, copy=True)
    assert y.flags.writeable and not np.shares_memory(y, base)
    y[0] = 9.0
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]
    # an unversioned capsule cannot say read-only: it holds a copy
    cap = x.__dlpack__()
    assert not np.shares_memory(np.from_dlpack(_unversioned(cap)), base)
    with pytest.raises(BufferError, match="copy=False"):
        x.__dlpack__(copy=False)
    with pytest.raises(BufferError):
        x.__dlpack__(max_version=(1, 0), dl_device=(2, 0))
    with pytest.raises(BufferError, match="stream"):
        x.__dlpack__(stream=1)
    assert np.from_dlpack(x, device="cpu").tolist() == x.tolist()


def test_dlpack_of_a_broadcast_array_is_a_copy():
    z = enp.zeros((3,))
    assert 0 in np.asarray(z).strides  # zeros is a stride-0 broadcast
    y = np.from_dlpack(z)
    assert y.strides != (0,)
    assert not np.shares_memory(y, np.asarray(z))


def test_torch_cannot_write_into_a_broadcast_ember_array():
    torch = pytest.importorskip("torch")
    z = enp.zeros((3,))
    t = torch.from_dlpack(z)
    t[0] = 5.0
    assert z.tolist() == [0.0, 0.0, 0.0]
    assert t.tolist() == [5.0, 0.0, 0.0]


def test_from_dlpack_copy_and_device():
    a = np.arange(3.0)
    y = enp.from_dlpack(a)
    a[0] = 7.0
    assert y.tolist() == [0.0, 1.0, 2.0]  # copied by default
    shared = enp.from_dlpack(a, copy=False)
    assert np.shares_memory(np.asarray(shared), a)
    assert enp.from_dlpack(a, copy=True, device=enp.asarray(1).device).tolist() == a.tolist()
    with pytest.raises(BufferError, match="device"):
        enp.from_dlpack(a, device="gpu")


def test_asarray_copy_keyword():
    x = enp.asarray([1, 2])
    assert enp.asarray(x) is x and enp.asarray(x, copy=False) is x
    c = enp.asarray(x, copy=True)
    assert c is not x and not np.shares_memory(np.asarray(c), np.asarray(x))
    assert c.tolist() == [1, 2]
    a = np.arange(3)
    shared = enp.asarray(a, copy=False)
    assert np.shares_memory(np.asarray(shared), a) and a.flags.writeable
    assert not np.shares_memory(np.asarray(enp.asarray(a)), a)
    with pytest.raises(ValueError, match="copy=False"):
        enp.asarray([1, 2], copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        enp.asarray(a, dtype="int8", copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        enp.asarray(x, dtype="float32", copy=False)
    assert not np.shares_memory(np.asarray(enp.array(a)), a)


@given(n=st.integers(0, 4), m=st.integers(0, 4),
       k=st.one_of(st.integers(-6, 6), st.integers(2 ** 31, 2 ** 70), st.integers(-2 ** 70, -2 ** 31)))
@settings(max_examples=40, deadline=None)
def test_eye_any_k(n, m, k):
    np.testing.assert_array_equal(np.asarray(enp.eye(n, m, k=k)), np.eye(n, m, k=k, dtype=np.float32))


def test_eye_bad_arguments_name_eye():
    with pytest.raises(ValueError, match=r"eye: `n_rows` must be non-negative, got -1"):
        enp.eye(-1)
    with pytest.raises(ValueError, match=r"eye: `n_cols`"):
        enp.eye(2, -3)
    with pytest.raises(TypeError, match=r"eye: `k` must be an integer"):
        enp.eye(2, k=0.5)
