"""default_collate / default_convert / pad_sequence / lengths_to_mask."""

from __future__ import annotations

import collections
import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.data import default_collate, default_convert, lengths_to_mask, pad_sequence
from ember.data.collate import _collate, _identity, _is_ember_array
from _data_helpers import FakeEmberArray

Point = collections.namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Example:
    image: np.ndarray
    label: int
    name: str


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: float
    b: np.ndarray = dataclasses.field(default=None)
    c: int = dataclasses.field(default=0, init=False)


def A(x):
    return np.asarray(x)


def numpy_collate(batch):
    """The numpy core of default_collate (what workers run): exact dtypes."""
    return _collate(batch, _identity)


def test_arrays_are_stacked():
    out = default_collate([np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32)])
    assert A(out).shape == (2, 2, 3)
    np.testing.assert_array_equal(A(out)[1], 1)
    assert numpy_collate([np.zeros(2, np.float32)] * 3).dtype == np.float32


def test_python_numbers_dtypes():
    # PyTorch's rules; checked on the numpy core since the ember array core
    # may apply its own dtype policy when wrapping.
    assert numpy_collate([1, 2, 3]).dtype == np.int64
    assert numpy_collate([1.0, 2.5]).dtype == np.float64
    assert numpy_collate([True, False]).dtype == np.bool_
    assert numpy_collate([np.float32(1), np.float32(2)]).dtype == np.float32
    assert numpy_collate([np.int16(1), np.int16(2)]).dtype == np.int16
    assert A(default_collate([1, 2, 3])).tolist() == [1, 2, 3]
    assert A(default_collate([True, False])).tolist() == [True, False]


def test_strings_stay_lists():
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"a", b"b"]) == [b"a", b"b"]


def test_nested_tuple_dict_list():
    batch = [
        {"x": np.array([i, i]), "meta": (i, "s%d" % i), "seq": [i, float(i)]}
        for i in range(4)
    ]
    out = default_collate(batch)
    assert set(out) == {"x", "meta", "seq"}
    assert A(out["x"]).tolist() == [[0, 0], [1, 1], [2, 2], [3, 3]]
    assert isinstance(out["meta"], tuple)
    assert A(out["meta"][0]).tolist() == [0, 1, 2, 3]
    assert out["meta"][1] == ["s0", "s1", "s2", "s3"]
    assert isinstance(out["seq"], list)
    assert A(out["seq"][1]).tolist() == [0.0, 1.0, 2.0, 3.0]


def test_namedtuple_keeps_type():
    out = default_collate([Point(np.zeros(2), 1), Point(np.ones(2), 2)])
    assert type(out) is Point
    assert A(out.x).shape == (2, 2)
    assert A(out.y).tolist() == [1, 2]


def test_dataclass_keeps_type():
    out = default_collate([Example(np.zeros((2, 2)), i, f"n{i}") for i in range(3)])
    assert type(out) is Example
    assert A(out.image).shape == (3, 2, 2)
    assert A(out.label).tolist() == [0, 1, 2]
    assert out.name == ["n0", "n1", "n2"]


def test_frozen_dataclass_with_init_false_field():
    out = default_collate([Frozen(1.0, np.zeros(1)), Frozen(2.0, np.ones(1))])
    assert type(out) is Frozen
    assert A(out.a).tolist() == [1.0, 2.0]
    assert A(out.c).tolist() == [0, 0]


def test_defaultdict_keeps_factory():
    d1 = collections.defaultdict(list, {"a": 1})
    d2 = collections.defaultdict(list, {"a": 2})
    out = default_collate([d1, d2])
    assert isinstance(out, collections.defaultdict) and out.default_factory is list


def test_ember_like_arrays_are_collated():
    x = FakeEmberArray([1, 2])
    assert _is_ember_array(x) and not _is_ember_array(np.zeros(1))
    out = default_collate([x, FakeEmberArray([3, 4])])
    assert A(out).tolist() == [[1, 2], [3, 4]]


def test_errors():
    with pytest.raises(ValueError, match=r"equal size, but got \(2,\) at entry 0 and \(3,\) at entry 1"):
        default_collate([np.zeros(2), np.zeros(3)])
    with pytest.raises(ValueError, match="entry 0 has 2 items and entry 1 has 1"):
        default_collate([(1, 2), (1,)])
    with pytest.raises(TypeError, match="found object"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="dtype"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(ValueError, match="empty"):
        default_collate([])


def test_default_convert():
    out = default_convert({"x": np.arange(3), "s": "str", "n": 3, "t": (np.float32(2),), "u": np.array(["a"])})
    assert A(out["x"]).tolist() == [0, 1, 2]
    assert out["s"] == "str" and out["n"] == 3
    assert isinstance(out["t"], tuple) and float(A(out["t"][0])) == 2.0
    assert isinstance(out["u"], np.ndarray) and out["u"].dtype.kind == "U"
    pt = default_convert(Point(np.zeros(1), [np.ones(2)]))
    assert type(pt) is Point and A(pt.y[0]).tolist() == [1.0, 1.0]


def test_pad_sequence_right_left_and_batch_first():
    seqs = [np.array([1, 2, 3]), np.array([4]), np.array([5, 6])]
    right = A(pad_sequence(seqs, batch_first=True))
    assert right.tolist() == [[1, 2, 3], [4, 0, 0], [5, 6, 0]]
    left = A(pad_sequence(seqs, batch_first=True, padding_side="left", padding_value=-1))
    assert left.tolist() == [[1, 2, 3], [-1, -1, 4], [-1, 5, 6]]
    time_major = A(pad_sequence(seqs))
    assert time_major.shape == (3, 3)
    np.testing.assert_array_equal(time_major, right.T)


def test_pad_sequence_trailing_dims_and_errors():
    seqs = [np.ones((2, 4), np.float32), np.ones((5, 4), np.float32)]
    out = A(pad_sequence(seqs, batch_first=True, padding_value=0.5))
    assert out.shape == (2, 5, 4) and out.dtype.kind == "f"
    assert (out[0, 2:] == 0.5).all()
    assert A(pad_sequence(seqs)).shape == (5, 2, 4)
    with pytest.raises(ValueError, match="trailing"):
        pad_sequence([np.ones((2, 3)), np.ones((2, 4))])
    with pytest.raises(ValueError, match="empty"):
        pad_sequence([])
    with pytest.raises(ValueError, match="padding_side"):
        pad_sequence(seqs, padding_side="middle")


def test_lengths_to_mask():
    assert A(lengths_to_mask([3, 1, 0])).tolist() == [
        [True, True, True],
        [True, False, False],
        [False, False, False],
    ]
    assert A(lengths_to_mask([1], max_len=3)).tolist() == [[True, False, False]]
    assert A(lengths_to_mask([1, 2], padding_side="left")).tolist() == [[False, True], [True, True]]
    with pytest.raises(ValueError, match="max_len"):
        lengths_to_mask([4], max_len=2)
    with pytest.raises(ValueError):
        lengths_to_mask([-1])


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 6), min_size=1, max_size=6),
    side=st.sampled_from(["left", "right"]),
)
def test_mask_matches_padding(lengths, side):
    seqs = [np.arange(1, n + 1) for n in lengths]
    padded = A(pad_sequence(seqs, batch_first=True, padding_side=side))
    mask = A(lengths_to_mask(lengths, max_len=padded.shape[1], padding_side=side))
    assert mask.shape == padded.shape
    assert ((padded != 0) == mask).all()
    for row, n in zip(padded, lengths):
        assert sorted(row[row != 0].tolist()) == list(range(1, n + 1))
