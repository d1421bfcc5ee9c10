"""Samplers: coverage, distributions, determinism and validation."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.data import (
    BatchSampler,
    BucketBatchSampler,
    DistributedSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)


def test_custom_sampler_subclass():
    from ember.data import Sampler

    class EveryOther(Sampler):
        def __init__(self, data_source):
            super().__init__(data_source)
            self.n = len(data_source)

        def __iter__(self):
            return iter(range(0, self.n, 2))

    assert list(BatchSampler(EveryOther(range(7)), 2, False)) == [[0, 2], [4, 6]]
    with pytest.raises(NotImplementedError):
        iter(Sampler())


def test_sequential():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    assert len(SequentialSampler(range(4))) == 4


def test_random_sampler_is_permutation_and_seeded():
    a = RandomSampler(range(50), seed=7)
    b = RandomSampler(range(50), seed=7)
    e0, e1 = list(a), list(a)
    assert sorted(e0) == list(range(50))
    assert e0 != e1, "the epoch counter must advance the shuffle"
    assert list(b) == e0 and list(b) == e1
    b.set_epoch(0)
    assert list(b) == e0
    assert list(RandomSampler(range(50), seed=8)) != e0


def test_random_sampler_generator():
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    assert list(RandomSampler(range(20), generator=g1)) == list(RandomSampler(range(20), generator=g2))


def test_random_sampler_num_samples_and_replacement():
    s = RandomSampler(range(5), num_samples=12, seed=0)
    out = list(s)
    assert len(out) == len(s) == 12
    counts = collections.Counter(out)
    assert all(counts[i] in (2, 3) for i in range(5))  # two full permutations + a prefix
    r = RandomSampler(range(3), replacement=True, num_samples=300, seed=0)
    assert set(r) == {0, 1, 2} and len(list(r)) == 300


def test_random_sampler_validation():
    with pytest.raises(TypeError, match="replacement"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="either seed or generator"):
        RandomSampler(range(3), seed=1, generator=np.random.default_rng())


def test_subset_random_sampler():
    s = SubsetRandomSampler([10, 20, 30, 40], seed=0)
    assert sorted(s) == [10, 20, 30, 40] and len(s) == 4


def test_weighted_sampler_frequencies():
    w = [1.0, 2.0, 0.0, 5.0]
    s = WeightedRandomSampler(w, num_samples=40_000, seed=123)
    counts = np.bincount(list(s), minlength=4) / 40_000
    expected = np.array(w) / sum(w)
    np.testing.assert_allclose(counts, expected, atol=0.01)
    assert counts[2] == 0


def test_weighted_sampler_without_replacement():
    s = WeightedRandomSampler([1, 1, 1, 0], num_samples=3, replacement=False, seed=0)
    assert sorted(s) == [0, 1, 2]
    with pytest.raises(ValueError, match="without replacement"):
        WeightedRandomSampler([1, 1, 0], num_samples=3, replacement=False)
    with pytest.raises(ValueError, match="non-negative"):
        WeightedRandomSampler([1, -1], num_samples=1)
    with pytest.raises(ValueError, match="1-d"):
        WeightedRandomSampler([[1, 1]], num_samples=1)


def test_batch_sampler():
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3
    assert len(BatchSampler(range(7), 3, True)) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(range(3), True, False)
    with pytest.raises(TypeError, match="drop_last"):
        BatchSampler(range(3), 2, drop_last="no")


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 60), bs=st.integers(1, 17), drop_last=st.booleans())
def test_batch_sampler_property(n, bs, drop_last):
    batches = list(BatchSampler(range(n), bs, drop_last))
    assert len(batches) == len(BatchSampler(range(n), bs, drop_last))
    flat = [i for b in batches for i in b]
    if drop_last:
        assert flat == list(range(n - n % bs)) and all(len(b) == bs for b in batches)
    else:
        assert flat == list(range(n)) and all(len(b) == bs for b in batches[:-1])


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 50), replicas=st.integers(1, 7), shuffle=st.booleans(), seed=st.integers(0, 5))
def test_distributed_sampler_covers_everything(n, replicas, shuffle, seed):
    shards = [
        list(DistributedSampler(range(n), num_replicas=replicas, rank=r, shuffle=shuffle, seed=seed))
        for r in range(replicas)
    ]
    per = -(-n // replicas)
    assert all(len(s) == per for s in shards)
    flat = [i for s in shards for i in s]
    assert set(flat) == set(range(n))  # every index is read
    counts = collections.Counter(flat)
    padding = per * replicas - n
    assert sum(c - 1 for c in counts.values()) == padding  # duplicates are exactly the padding


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 50), replicas=st.integers(1, 7))
def test_distributed_sampler_drop_last_is_disjoint(n, replicas):
    shards = [
        list(DistributedSampler(range(n), num_replicas=replicas, rank=r, shuffle=True, drop_last=True))
        for r in range(replicas)
    ]
    flat = [i for s in shards for i in s]
    assert len(flat) == len(set(flat)) == (n // replicas) * replicas


def test_distributed_sampler_epochs():
    s = DistributedSampler(range(20), num_replicas=2, rank=0, seed=1)
    first, again = list(s), list(s)
    assert first == again  # like PyTorch: no set_epoch, same order
    s.set_epoch(1)
    assert list(s) != first
    with pytest.raises(ValueError, match="Invalid rank"):
        DistributedSampler(range(4), num_replicas=2, rank=2)


def test_distributed_sampler_padding_repeats_when_tiny():
    shards = [list(DistributedSampler(range(2), num_replicas=5, rank=r, shuffle=False)) for r in range(5)]
    assert shards == [[0], [1], [0], [1], [0]]


def _padding_waste(batches, lengths):
    return sum(max(lengths[i] for i in b) * len(b) - sum(lengths[i] for i in b) for b in batches)


def test_bucket_batch_sampler_reduces_padding():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 200, size=1000)
    bucketed = list(BucketBatchSampler(lengths, batch_size=16, seed=0, bucket_size_multiplier=20))
    random_batches = list(BatchSampler(RandomSampler(range(1000), seed=0), 16, False))
    assert sorted(i for b in bucketed for i in b) == list(range(1000))
    assert len(bucketed) == 63
    assert _padding_waste(bucketed, lengths) < 0.2 * _padding_waste(random_batches, lengths)


def test_bucket_batch_sampler_epochs_and_determinism():
    lengths = np.arange(100) % 13
    a = BucketBatchSampler(lengths, batch_size=8, seed=3, bucket_size=32)
    b = BucketBatchSampler(lengths, batch_size=8, seed=3, bucket_size=32)
    assert a.bucket_size == 32
    e0, e1 = list(a), list(a)
    assert e0 == list(b) and e1 == list(b) and e0 != e1
    fixed = BucketBatchSampler(lengths, batch_size=8, shuffle=False)
    assert list(fixed) == list(fixed)


@settings(max_examples=50, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 30), min_size=0, max_size=80),
    bs=st.integers(1, 9),
    bucket=st.integers(1, 40),
    drop_last=st.booleans(),
    shuffle=st.booleans(),
)
def test_bucket_batch_sampler_property(lengths, bs, bucket, drop_last, shuffle):
    s = BucketBatchSampler(lengths, batch_size=bs, bucket_size=bucket, drop_last=drop_last, shuffle=shuffle, seed=0)
    batches = list(s)
    assert len(batches) == len(s)
    flat = [i for b in batches for i in b]
    assert len(flat) == len(set(flat))
    n = len(lengths)
    assert len(flat) == (n - n % bs if drop_last else n)
    assert sum(len(b) < bs for b in batches) <= (0 if drop_last else 1)
    for b in batches:  # sorted by length inside each batch
        ls = [lengths[i] for i in b]
        assert ls == sorted(ls)
