"""Regression tests from the bad-input / PyTorch-habit audit of ember.data."""
import numpy as np
import pytest

from ember.data import DataLoader, TensorDataset, default_collate


def _ds():
    return TensorDataset(np.arange(20, dtype=np.float32).reshape(10, 2), np.arange(10))


def test_prefetch_factor_needs_workers():
    # PyTorch raises: without workers the option would silently do nothing
    with pytest.raises(ValueError, match=r"prefetch_factor option could only be specified in "
                                         r"multiprocessing.*prefetch_factor=2"):
        DataLoader(_ds(), prefetch_factor=2)
    assert len(DataLoader(_ds(), batch_size=4, prefetch_factor=None)) == 3


def test_collate_dicts_with_different_keys():
    with pytest.raises(KeyError, match=r"sample 1 of the batch has no key 'a'"):
        default_collate([{"a": 1}, {"b": 2}])
