"""Datasets: ArrayDataset, Subset, Concat/Chain, random_split, digits, npz/memmap."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember.data.datasets as datasets_mod
from ember.data import (
    ArrayDataset,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    MemmapDataset,
    Subset,
    TensorDataset,
    load_digits,
    load_npz,
    random_split,
)
from _data_helpers import ShardedStream, UnsizedStream


def test_array_dataset():
    x = np.arange(12).reshape(4, 3)
    y = np.arange(4)
    ds = ArrayDataset(x, y)
    assert TensorDataset is ArrayDataset
    assert len(ds) == 4
    a, b = ds[2]
    assert a.tolist() == [6, 7, 8] and int(b) == 2
    assert ds[-1][1] == 3
    assert ds.tensors is ds.arrays
    items = ds.__getitems__([3, 0])
    assert [int(t[1]) for t in items] == [3, 0]
    with pytest.raises(ValueError, match="Size mismatch"):
        ArrayDataset(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError):
        ArrayDataset()


def test_array_dataset_subclass_getitem_wins_over_getitems():
    class Doubled(ArrayDataset):
        def __getitem__(self, i):
            return (self.arrays[0][i] * 2,)

    assert [int(t[0]) for t in Doubled(np.arange(4)).__getitems__([1, 3])] == [2, 6]


def test_array_dataset_accepts_array_likes():
    class Arrayish:
        def __array__(self, dtype=None, copy=None):
            return np.arange(5)

    ds = ArrayDataset(Arrayish(), [1, 2, 3, 4, 5])
    assert int(ds[4][0]) == 4 and int(ds[4][1]) == 5


def test_dataset_add_and_concat():
    a = ArrayDataset(np.arange(3))
    b = ArrayDataset(np.arange(10, 14))
    c = a + b
    assert isinstance(c, ConcatDataset)
    assert len(c) == 7
    assert [int(c[i][0]) for i in range(7)] == [0, 1, 2, 10, 11, 12, 13]
    assert int(c[-1][0]) == 13 and int(c[-7][0]) == 0
    with pytest.raises(IndexError):
        c[7]
    with pytest.raises(IndexError):
        c[-8]
    with pytest.raises(ValueError, match="empty"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="IterableDataset"):
        ConcatDataset([a, ShardedStream(3)])


def test_chain_dataset():
    ch = ShardedStream(3) + ShardedStream(2)
    assert isinstance(ch, ChainDataset)
    assert list(ch) == [0, 1, 2, 0, 1] and len(ch) == 5
    with pytest.raises(TypeError):
        len(ChainDataset([UnsizedStream(2)]))
    with pytest.raises(TypeError, match="IterableDataset"):
        ChainDataset([ArrayDataset(np.arange(2))])


def test_base_dataset_raises():
    with pytest.raises(NotImplementedError):
        Dataset()[0]


def test_subset():
    ds = ArrayDataset(np.arange(10) * 10)
    s = Subset(ds, [5, 1, 9])
    assert len(s) == 3
    assert [int(s[i][0]) for i in range(3)] == [50, 10, 90]
    assert [int(t[0]) for t in s.__getitems__([2, 0])] == [90, 50]
    assert s[[0, 1]][0].tolist() == [50, 10]


def test_random_split_fractions_round_robin_remainder():
    ds = ArrayDataset(np.arange(10))
    parts = random_split(ds, [0.3, 0.3, 0.4], seed=0)
    # floor gives 3, 3, 4 = 10: no remainder.
    assert [len(p) for p in parts] == [3, 3, 4]
    parts = random_split(ArrayDataset(np.arange(11)), [0.25, 0.25, 0.25, 0.25], seed=0)
    # floor gives 2 each; the 3 left over go to splits 0, 1, 2.
    assert [len(p) for p in parts] == [3, 3, 3, 2]


def test_random_split_is_seeded_and_disjoint():
    ds = ArrayDataset(np.arange(100))
    a = random_split(ds, [80, 20], seed=1)
    b = random_split(ds, [80, 20], seed=1)
    c = random_split(ds, [80, 20], seed=2)
    assert a[0].indices == b[0].indices and a[0].indices != c[0].indices
    assert sorted(a[0].indices + a[1].indices) == list(range(100))
    g = np.random.default_rng(5)
    assert len(random_split(ds, [0.5, 0.5], generator=g)[0]) == 50


def test_random_split_errors():
    ds = ArrayDataset(np.arange(10))
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(ds, [5, 4], seed=0)
    with pytest.raises(ValueError):
        random_split(ds, [-1, 11], seed=0)
    assert [len(p) for p in random_split(ArrayDataset(np.arange(2)), [0.1, 0.9], seed=0)] == [1, 1]
    with pytest.warns(UserWarning, match="index 1 is 0"):
        parts = random_split(ArrayDataset(np.arange(1)), [0.1, 0.9], seed=0)
    assert [len(p) for p in parts] == [1, 0]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 200), k=st.integers(1, 6), seed=st.integers(0, 2**32))
def test_random_split_fraction_property(n, k, seed):
    fracs = [1.0 / k] * k
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parts = random_split(ArrayDataset(np.arange(n)), fracs, seed=seed)
    sizes = [len(p) for p in parts]
    assert sum(sizes) == n and max(sizes) - min(sizes) <= 1
    assert sizes == sorted(sizes, reverse=True)  # remainder goes to the first splits
    assert sorted(i for p in parts for i in p.indices) == list(range(n))


def test_load_digits_splits():
    train, test, full = load_digits("train"), load_digits("test"), load_digits("all")
    assert len(full) == 1797 and len(train) + len(test) == 1797
    x, y = full.arrays
    assert x.shape == (1797, 8, 8) and x.dtype == np.float32 and y.dtype == np.int64
    assert 0.0 <= x.min() and x.max() == 1.0
    assert np.bincount(y).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    # Stratified: every class is ~20 % of the test set's share.
    ty = test.arrays[1]
    assert np.all(np.abs(np.bincount(ty, minlength=10) - 0.2 * np.bincount(y)) <= 1)
    # Reproducible and disjoint.
    assert np.array_equal(load_digits("test").arrays[0], test.arrays[0])
    train_rows = {r.tobytes() + bytes([int(c)]) for r, c in zip(*train.arrays)}
    test_rows = {r.tobytes() + bytes([int(c)]) for r, c in zip(*test.arrays)}
    assert len(train_rows & test_rows) < 5  # only exact duplicate images can coincide
    other = load_digits("test", seed=1)
    assert not np.array_equal(other.arrays[0], test.arrays[0])


def test_load_digits_options():
    flat = load_digits("all", flatten=True)
    raw = load_digits("all", normalize=False)
    assert flat.arrays[0].shape == (1797, 64)
    assert raw.arrays[0].max() == 16.0
    np.testing.assert_allclose(flat.arrays[0].reshape(-1, 8, 8) * 16, raw.arrays[0])
    assert len(load_digits("test", test_fraction=0.5)) in range(890, 910)
    with pytest.raises(ValueError):
        load_digits("validation")
    with pytest.raises(ValueError):
        load_digits(test_fraction=1.0)
    assert datasets_mod.load_digits is load_digits  # also reachable as ember.data.datasets.load_digits


def test_digits_through_loader():
    loader = DataLoader(load_digits("test"), batch_size=100, shuffle=True, seed=0)
    shapes = [np.asarray(x).shape for x, _ in loader]
    assert shapes[0] == (100, 8, 8) and sum(s[0] for s in shapes) == len(load_digits("test"))


def test_memmap_dataset(tmp_path):
    x = np.random.default_rng(0).random((50, 4)).astype(np.float32)
    y = np.arange(50)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    ds = MemmapDataset(tmp_path / "x.npy", tmp_path / "y.npy")
    assert len(ds) == 50
    assert isinstance(ds.arrays[0], np.memmap)
    np.testing.assert_array_equal(ds[7][0], x[7])
    assert type(ds[7][0]) is np.ndarray
    blob = pickle.dumps(ds)
    assert len(blob) < 2000, "pickling must send paths, not data"
    ds2 = pickle.loads(blob)
    np.testing.assert_array_equal(ds2[49][0], x[49])
    np.save(tmp_path / "short.npy", np.arange(3))
    with pytest.raises(ValueError, match="Size mismatch"):
        MemmapDataset(tmp_path / "x.npy", tmp_path / "short.npy")


def test_load_npz_memory_maps_stored_members(tmp_path):
    x = np.arange(60, dtype=np.int16).reshape(20, 3)
    xf = np.asfortranarray(np.random.default_rng(1).random((20, 2)))
    y = np.arange(20, dtype=np.int64)
    np.savez(tmp_path / "d.npz", x=x, xf=xf, y=y)
    ds = load_npz(tmp_path / "d.npz", keys=["y", "x", "xf"])
    assert all(isinstance(a, np.memmap) for a in ds.arrays)
    yy, xx, ff = ds[5]
    assert int(yy) == 5 and xx.tolist() == x[5].tolist() and np.allclose(ff, xf[5])
    assert len(pickle.dumps(ds)) < 2000
    assert [k.shape for k in load_npz(tmp_path / "d.npz").arrays] == [(20, 3), (20, 2), (20,)]
    single = load_npz(tmp_path / "d.npz", keys="y")
    assert len(single.arrays) == 1
    with pytest.raises(KeyError, match="nope"):
        load_npz(tmp_path / "d.npz", keys=["nope"])


def test_load_npz_compressed_and_no_mmap(tmp_path):
    x = np.arange(30).reshape(10, 3)
    np.savez_compressed(tmp_path / "c.npz", x=x, y=np.arange(10))
    ds = load_npz(tmp_path / "c.npz")
    assert not isinstance(ds.arrays[0], np.memmap)
    assert ds[3][0].tolist() == [9, 10, 11]
    np.savez(tmp_path / "s.npz", x=x)
    assert not isinstance(load_npz(tmp_path / "s.npz", mmap=False).arrays[0], np.memmap)
