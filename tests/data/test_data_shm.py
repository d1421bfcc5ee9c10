"""Shared-memory batch transport (ember.data.shm)."""

from __future__ import annotations

import collections
import os
import pickle
from multiprocessing.shared_memory import SharedMemory

import numpy as np
import pytest

from ember.data import shm
from ember.data.collate import _collate, _identity
from _data_helpers import assert_clean, shm_snapshot

Pair = collections.namedtuple("Pair", ["a", "b"])


@pytest.fixture
def writer():
    before = shm_snapshot()
    w = shm.SegmentWriter(shm.new_prefix() + "0_")
    yield w
    shm.sweep(w.prefix)
    assert_clean(before)


def roundtrip(writer, batch, convert_all=False, **kw):
    enc = writer.encode(batch, convert_all=convert_all)
    assert enc.segment is None or enc.segment.startswith(writer.prefix)
    out = shm.decode(enc, **kw)
    assert not shm.list_segments(writer.prefix), "decode must unlink the segment"
    return enc, out


def test_roundtrip_nested(writer):
    batch = {
        "x": np.arange(24, dtype=np.float32).reshape(2, 3, 4),
        "pair": Pair(np.array([1, 2], np.int8), ["s", "t"]),
        "scalar": np.float64(3.5),
        "zero": np.zeros((0, 5)),
        "zero_d": np.array(7),
        "strided": np.arange(20)[::3],
        "fortran": np.asfortranarray(np.arange(6).reshape(2, 3)),
        "strings": np.array(["ab", "c"]),
        "objects": np.array([None, {"k": 1}], dtype=object),
        "masked": np.ma.masked_array([1, 2], mask=[0, 1]),
        "plain": 5,
    }
    _, out = roundtrip(writer, batch)
    for key in ("x", "zero", "zero_d", "strided", "fortran", "strings"):
        np.testing.assert_array_equal(out[key], batch[key])
        assert out[key].dtype == batch[key].dtype
    assert type(out["pair"]) is Pair and out["pair"].b == ["s", "t"]
    assert out["scalar"] == 3.5 and out["plain"] == 5
    assert out["objects"][1] == {"k": 1}
    assert isinstance(out["masked"], np.ma.MaskedArray) and out["masked"].mask.tolist() == [False, True]
    assert out["x"].flags.writeable and out["x"].flags.c_contiguous


def test_structured_and_extension_dtypes(writer):
    rec = np.zeros(3, dtype=[("a", "<i4"), ("b", "<f8", (2,))])
    rec["a"] = [1, 2, 3]
    batch = [rec]
    try:
        import ml_dtypes

        batch.append(np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16))
    except ImportError:
        pass
    _, out = roundtrip(writer, batch)
    assert out[0].dtype == rec.dtype and out[0]["a"].tolist() == [1, 2, 3]
    if len(batch) == 2:
        assert out[1].dtype == batch[1].dtype and out[1].astype(np.float32).tolist() == [1.5, -2.0]


def test_no_arrays_means_no_segment(writer):
    enc, out = roundtrip(writer, ["a", 1, None])
    assert enc.segment is None and out == ["a", 1, None]


def test_flags_control_ember_conversion(writer):
    marked = []

    def to_ember(a):
        marked.append(a.shape)
        return ("E", a)

    batch = {"num": np.zeros(2), "str": np.array(["x"])}
    _, out = roundtrip(writer, batch, convert_all=False, to_ember=to_ember)
    assert marked == [] and isinstance(out["num"], np.ndarray)
    _, out = roundtrip(writer, batch, convert_all=True, to_ember=to_ember)
    assert marked == [(2,)] and out["num"][0] == "E" and isinstance(out["str"], np.ndarray)


def test_custom_allocator_is_used(writer):
    calls = []

    def alloc(shape, dtype):
        calls.append((shape, dtype))
        return np.empty(shape, dtype)

    _, out = roundtrip(writer, (np.ones((2, 2)), np.arange(3)), alloc=alloc)
    assert [c[0] for c in calls] == [(2, 2), (3,)]
    assert out[0].sum() == 4


@pytest.mark.parametrize("batch_size", [32, 256, 2048])
def test_metadata_size_is_independent_of_batch_size(writer, batch_size):
    samples = [(np.ones((3, 16, 16), np.float32), i) for i in range(batch_size)]
    batch = _collate(samples, _identity)
    enc = writer.encode(batch, convert_all=True)
    size = len(pickle.dumps((0, 0, enc), protocol=pickle.HIGHEST_PROTOCOL))
    shm.discard(enc)
    reference = writer.encode(_collate(samples[:32], _identity), convert_all=True)
    ref_size = len(pickle.dumps((0, 0, reference), protocol=pickle.HIGHEST_PROTOCOL))
    shm.discard(reference)
    assert size == ref_size < 1024
    assert batch[0].nbytes >= 32 * 3 * 16 * 16 * 4


def test_discard_and_sweep(writer):
    enc = writer.encode(np.ones(10), convert_all=False)
    assert shm.list_segments(writer.prefix) == [enc.segment]
    shm.discard(enc)
    assert shm.list_segments(writer.prefix) == []
    for _ in range(3):
        writer.encode(np.ones(4), convert_all=False)
    # A segment whose creator died before sizing it (size 0) is swept too.
    raw = SharedMemory(name=writer.prefix + "ffffff", create=True, size=1)
    raw.close()
    os.truncate(os.path.join("/dev/shm", raw.name.lstrip("/")), 0)
    assert len(shm.list_segments(writer.prefix)) == 4
    assert shm.sweep(writer.prefix) == 4
    assert shm.list_segments(writer.prefix) == []


def test_sweep_refuses_broad_prefix():
    with pytest.raises(ValueError):
        shm.sweep(shm.SHM_PREFIX)
    with pytest.raises(ValueError):
        shm.sweep("psm_")


def test_names_are_short_and_owned():
    prefix = shm.new_prefix()
    assert prefix.startswith(shm.owner_prefix())
    assert len(prefix + "9_" + "f" * 6) <= 30


def test_messages_longer_than_one_pipe_write_are_spilled(writer):
    small = (0, 3, "ok")
    wire = writer.message(small)
    assert isinstance(wire, bytes) and len(wire) <= shm.ATOMIC_MESSAGE_BYTES
    assert shm.receive(wire) == small
    big = (1, 4, "x" * 10_000)
    wire = writer.message(big)
    assert isinstance(wire, shm.Spilled) and wire.segment.startswith(writer.prefix)
    assert len(pickle.dumps(wire)) <= shm.ATOMIC_MESSAGE_BYTES
    assert shm.receive(wire) == big
    assert not shm.list_segments(writer.prefix), "receive must unlink the spill segment"
