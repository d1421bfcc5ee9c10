"""Built-in datasets that ship with ember and work offline.

Currently the 8x8 handwritten digits (1,797 images, 10 classes): the UCI
"Optical Recognition of Handwritten Digits" test set as packaged by
scikit-learn. The data lives in ``ember/data/_files/digits.npz``; provenance
and licence (CC BY 4.0 / BSD-3) are in ``_files/DIGITS_LICENSE.txt``.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from .datasets import ArrayDataset

__all__ = ["load_digits"]

_FILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_files")


@functools.lru_cache(maxsize=1)
def _digits_raw() -> tuple[np.ndarray, np.ndarray]:
    with np.load(os.path.join(_FILES, "digits.npz")) as f:
        images, labels = f["images"], f["labels"]
    # Shared between calls through the cache, so make accidental writes fail.
    images.flags.writeable = False
    labels.flags.writeable = False
    return images, labels


def _stratified_test_indices(labels: np.ndarray, test_fraction: float, seed: int) -> np.ndarray:
    rng = np.random.Generator(np.random.PCG64(seed))
    picked = []
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        n_test = int(round(len(members) * test_fraction))
        picked.append(rng.permutation(members)[:n_test])
    return np.sort(np.concatenate(picked))


def load_digits(split: str = "train", test_fraction: float = 0.2, seed: int = 0,
                normalize: bool = True, flatten: bool = False) -> ArrayDataset:
    """The 8x8 handwritten digits as an :class:`ArrayDataset` of ``(image, label)``.

    Args:
        split: ``"train"``, ``"test"`` or ``"all"`` (1,797 samples).
        test_fraction: share of each class held out for ``"test"``; the split
            is stratified by class and fixed by ``seed`` (samples keep their
            original order within a split).
        seed: seed of the split.
        normalize: scale pixels from 0..16 to 0..1 (otherwise raw 0..16 values).
        flatten: images of shape ``(64,)`` instead of ``(8, 8)``.

    Images are float32, labels int64.

    Example::

        >>> train = load_digits("train")
        >>> test = load_digits("test")
        >>> len(train) + len(test), train[0][0].shape, train[0][0].dtype
        (1797, (8, 8), dtype('float32'))
    """
    if split not in ("train", "test", "all"):
        raise ValueError(f"split must be 'train', 'test' or 'all', got {split!r}")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    images, labels = _digits_raw()
    if split == "all":
        idx = np.arange(len(labels))
    else:
        test_idx = _stratified_test_indices(labels, test_fraction, seed)
        if split == "test":
            idx = test_idx
        else:
            mask = np.ones(len(labels), dtype=bool)
            mask[test_idx] = False
            idx = np.flatnonzero(mask)
    x = images[idx].astype(np.float32)
    if normalize:
        x /= 16.0
    if flatten:
        x = x.reshape(len(idx), 64)
    y = labels[idx].astype(np.int64)
    return ArrayDataset(x, y)
