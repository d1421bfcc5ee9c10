"""ember.data: datasets, samplers, collation and a multi-process DataLoader.

Names and semantics follow ``torch.utils.data``. Batches come out as ember
arrays; worker processes hand them over through shared memory.

Example::

    from ember.data import DataLoader, load_digits

    train = load_digits("train")
    loader = DataLoader(train, batch_size=64, shuffle=True, num_workers=2, seed=0)
    for images, labels in loader:
        ...
"""

from .builtin import load_digits
from .collate import default_collate, default_convert, lengths_to_mask, pad_sequence
from .datasets import (
    ArrayDataset,
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .loader import DataLoader
from .memmap import MemmapDataset, load_npz
from .samplers import (
    BatchSampler,
    BucketBatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from .worker import WorkerInfo, get_worker_info

__all__ = [
    "ArrayDataset",
    "BatchSampler",
    "BucketBatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "MemmapDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "lengths_to_mask",
    "load_digits",
    "load_npz",
    "pad_sequence",
    "random_split",
]
