"""default_collate's dtype comes from every sample (expected dtypes from torch 2.x's
torch.utils.data.default_collate, except where the docstring says ember differs)."""
import numpy as np
import pytest

from ember.data import default_collate


def _np(x):
    return np.asarray(x)


@pytest.mark.parametrize("batch,dtype,values", [
    ([2.5, 1], "float64", [2.5, 1.0]),          # torch: float64
    ([1, 2.5], "float64", [1.0, 2.5]),          # torch float32 (int first); ember: all samples decide
    ([True, 2], "int64", [1, 2]),               # torch: int64
    ([1.5, True], "float64", [1.5, 1.0]),       # torch: float64
    ([True, False], "bool", [True, False]),
])
def test_python_numbers_use_every_sample(batch, dtype, values):
    out = _np(default_collate(batch))
    assert out.dtype == np.dtype(dtype) and out.tolist() == values


@pytest.mark.parametrize("dtypes,expected", [
    (("float32", "float64"), "float64"),        # torch.stack promotes
    (("int32", "float32"), "float32"),          # torch: float32 (numpy would say float64)
    (("float64", "int64"), "float64"),
    (("uint8", "int8"), "int16"),
    (("int64", "float16"), "float16"),
])
def test_arrays_of_different_dtypes_promote_like_torch(dtypes, expected):
    batch = [np.arange(3).astype(d) for d in dtypes]
    out = _np(default_collate(batch))
    assert out.dtype == np.dtype(expected)
    assert out.tolist() == [[0, 1, 2]] * 2


@pytest.mark.parametrize("batch,dtype,values", [
    ([np.float32(1), np.float64(2)], "float64", [1.0, 2.0]),
    ([np.int64(1), np.float32(2.5)], "float32", [1.0, 2.5]),
    ([1, np.float32(2.5)], "float32", [1.0, 2.5]),       # a Python number does not widen
    ([np.float32(2.5), 1], "float32", [2.5, 1.0]),
])
def test_numpy_scalars_and_python_numbers(batch, dtype, values):
    out = _np(default_collate(batch))
    assert out.dtype == np.dtype(dtype) and out.tolist() == values


def test_int_first_no_longer_truncates_a_later_float():
    assert _np(default_collate([{"y": 1}, {"y": 0.75}])["y"]).tolist() == [1.0, 0.75]


@pytest.mark.parametrize("batch,match", [
    ([1, "a"], "entry 0 of the batch is a Python int but entry 1 is str"),
    ([np.zeros(2), "a"], "entry 0 of the batch is an array but entry 1 is str"),
    ([np.zeros(2), None], "entry 1 is NoneType"),
])
def test_mixed_kinds_raise_clearly(batch, match):
    with pytest.raises(TypeError, match=match):
        default_collate(batch)
