"""DataLoader in the main process: batching, len(), validation, seeds, pinning."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.data import (
    BatchSampler,
    BucketBatchSampler,
    DataLoader,
    Dataset,
    RandomSampler,
    SequentialSampler,
    default_collate,
    pad_sequence,
)
from _data_helpers import RangeDataset, ShardedStream, UnsizedStream


def labels(loader):
    return [np.asarray(b[1]).tolist() for b in loader]


def test_batches_and_types():
    out = list(DataLoader(RangeDataset(10), batch_size=4))
    assert len(out) == 3
    x, y = out[0]
    assert np.asarray(x).shape == (4, 3) and np.asarray(x).dtype.kind == "f"
    assert np.asarray(y).dtype.kind == "i"
    assert labels(DataLoader(RangeDataset(10), batch_size=4)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_drop_last():
    assert labels(DataLoader(RangeDataset(10), batch_size=4, drop_last=True)) == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_batch_size_none_disables_batching():
    loader = DataLoader(RangeDataset(3), batch_size=None)
    items = list(loader)
    assert len(items) == 3 == len(loader)
    assert np.asarray(items[1][0]).shape == (3,)
    assert items[1][1] == 1  # Python ints pass through default_convert


def test_custom_collate_and_batch_sampler():
    bs = BatchSampler(SequentialSampler(range(7)), 3, False)
    loader = DataLoader(RangeDataset(7), batch_sampler=bs, collate_fn=lambda b: [s[1] for s in b])
    assert list(loader) == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(loader) == 3


def test_bucket_sampler_with_pad_collate():
    rng = np.random.default_rng(0)
    seqs = [np.arange(rng.integers(1, 30)) for _ in range(64)]

    class Seqs(Dataset):
        def __len__(self):
            return len(seqs)

        def __getitem__(self, i):
            return seqs[i]

    sampler = BucketBatchSampler([len(s) for s in seqs], batch_size=8, seed=0)
    loader = DataLoader(Seqs(), batch_sampler=sampler, collate_fn=lambda b: pad_sequence(b, batch_first=True))
    widths = [np.asarray(b).shape[1] for b in loader]
    assert len(widths) == 8 and sum(widths) < 8 * 29


def test_shuffle_seeded_and_epochs_advance():
    a = DataLoader(RangeDataset(20), batch_size=5, shuffle=True, seed=11)
    b = DataLoader(RangeDataset(20), batch_size=5, shuffle=True, seed=11)
    a0, a1 = labels(a), labels(a)
    assert a0 == labels(b) and a1 == labels(b)
    assert a0 != a1 and sorted(sum(a0, [])) == list(range(20))
    assert a.epoch == 2
    a.set_epoch(0)
    assert labels(a) == a0


def test_generator_shuffle():
    a = DataLoader(RangeDataset(20), batch_size=5, shuffle=True, generator=np.random.default_rng(1))
    b = DataLoader(RangeDataset(20), batch_size=5, shuffle=True, generator=np.random.default_rng(1))
    assert [labels(a), labels(a)] == [labels(b), labels(b)]


def test_iterable_dataset_batches():
    assert labels_plain(DataLoader(ShardedStream(7), batch_size=3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert labels_plain(DataLoader(ShardedStream(7), batch_size=3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert list(DataLoader(ShardedStream(2), batch_size=None)) == [0, 1]


def labels_plain(loader):
    return [np.asarray(b).tolist() for b in loader]


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        (dict(batch_size=4), 3),
        (dict(batch_size=4, drop_last=True), 2),
        (dict(batch_size=5), 2),
        (dict(batch_size=None), 10),
        (dict(batch_size=3, shuffle=True, seed=0), 4),
        (dict(batch_sampler=BatchSampler(range(10), 4, True)), 2),
        (dict(sampler=RandomSampler(range(10), num_samples=25, seed=0), batch_size=10), 3),
    ],
)
def test_len_map_style(kwargs, expected):
    loader = DataLoader(RangeDataset(10), **kwargs)
    assert len(loader) == expected == len(list(loader))


def test_len_iterable():
    assert len(DataLoader(ShardedStream(10), batch_size=4)) == 3
    assert len(DataLoader(ShardedStream(10), batch_size=4, drop_last=True)) == 2
    assert len(DataLoader(ShardedStream(10), batch_size=None)) == 10
    with pytest.raises(TypeError):
        len(DataLoader(UnsizedStream(10), batch_size=4))
    with pytest.raises(TypeError):
        len(iter(DataLoader(UnsizedStream(10), batch_size=4)))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), bs=st.integers(1, 12), drop_last=st.booleans(), shuffle=st.booleans())
def test_len_matches_iteration(n, bs, drop_last, shuffle):
    loader = DataLoader(RangeDataset(n), batch_size=bs, drop_last=drop_last, shuffle=shuffle, seed=0)
    batches = labels(loader)
    assert len(loader) == len(batches)
    seen = sum(batches, [])
    assert len(seen) == (n - n % bs if drop_last else n) and len(set(seen)) == len(seen)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(num_workers=-1), ValueError, "num_workers option should be a non-negative"),
        (dict(timeout=-1), ValueError, "timeout option should be non-negative"),
        (dict(persistent_workers=True), ValueError, "persistent_workers option needs num_workers > 0"),
        (dict(prefetch_factor=0, num_workers=1), ValueError, "prefetch_factor"),
        (dict(sampler=[0, 1], shuffle=True), ValueError, "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), ValueError, "batch_sampler option is mutually exclusive"),
        (dict(batch_sampler=[[0]], shuffle=True), ValueError, "batch_sampler option is mutually exclusive"),
        (dict(batch_sampler=[[0]], sampler=[0]), ValueError, "batch_sampler option is mutually exclusive"),
        (dict(batch_sampler=[[0]], drop_last=True), ValueError, "batch_sampler option is mutually exclusive"),
        (dict(batch_size=None, drop_last=True), ValueError, "batch_size=None option disables auto-batching"),
        (dict(batch_size=0), ValueError, "batch_size should be a positive integer"),
        (dict(seed=1, generator=np.random.default_rng()), ValueError, "mutually exclusive"),
        (dict(seed=-1), ValueError, "seed"),
        (dict(generator=42), TypeError, "generator"),
        (dict(collate_fn=3), TypeError, "collate_fn"),
        (dict(worker_init_fn="x"), TypeError, "worker_init_fn"),
    ],
)
def test_argument_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        DataLoader(RangeDataset(4), **kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(shuffle=True), "expected unspecified shuffle option"),
        (dict(sampler=[0]), "expected unspecified sampler option"),
        (dict(batch_sampler=[[0]]), "expected unspecified batch_sampler option"),
    ],
)
def test_iterable_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DataLoader(ShardedStream(4), **kwargs)


def test_attributes_locked_after_init():
    loader = DataLoader(RangeDataset(4), batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set"):
        loader.batch_size = 3
    loader.num_workers = 0  # unlocked attributes stay settable


def test_default_collate_identity():
    assert DataLoader(RangeDataset(4)).collate_fn is default_collate


def test_pin_memory_without_gpu_is_a_noop_and_cupy_is_lazy():
    code = (
        "import sys, numpy as np\n"
        "from ember.data import DataLoader, ArrayDataset\n"
        "ds = ArrayDataset(np.arange(6.0))\n"
        "assert [np.asarray(b[0]).tolist() for b in DataLoader(ds, batch_size=3)] == [[0, 1, 2], [3, 4, 5]]\n"
        "assert 'cupy' not in sys.modules\n"
        "out = [np.asarray(b[0]).tolist() for b in DataLoader(ds, batch_size=3, pin_memory=True)]\n"
        "assert out == [[0, 1, 2], [3, 4, 5]], out\n"
        "out = [b for b in DataLoader(ds, batch_size=3, pin_memory=True, collate_fn=lambda b: np.stack(b))]\n"
        "assert np.asarray(out[1]).ravel().tolist() == [3, 4, 5]\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=str(__import__('pathlib').Path(__file__).resolve().parents[2]))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"
