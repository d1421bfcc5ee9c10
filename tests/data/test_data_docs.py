"""The usage examples in ember.data's docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

import ember.data as ed
from ember.data import shm
from ember.data.pin import pinned_allocator
from ember.data.worker import worker_seed

MODULES = ["collate", "datasets", "samplers", "shm", "worker", "pin", "builtin", "memmap", "loader"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"ember.data.{name}")
    globs = {"np": np, **{k: getattr(ed, k) for k in ed.__all__}}
    globs.update(SegmentWriter=shm.SegmentWriter, new_prefix=shm.new_prefix, decode=shm.decode,
                 worker_seed=worker_seed, pinned_allocator=pinned_allocator)
    result = doctest.testmod(module, extraglobs=globs, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_every_public_name_is_documented():
    for name in ed.__all__:
        obj = getattr(ed, name)
        assert (obj.__doc__ or "").strip(), f"{name} has no docstring"
    for name in MODULES:
        assert importlib.import_module(f"ember.data.{name}").__doc__, f"{name}.py has no module docstring"
