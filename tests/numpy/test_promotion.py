"""Type promotion: the array API table, weak Python scalars, and 64-bit arrays."""
import itertools

import numpy as np
import pytest

import ember.dtypes as dt
import ember.numpy as enp

from enp_strategies import BOOL, COMPLEX, INTS, SIGNED, UNSIGNED

# The array API's promotion table (pairs within a kind; mixed kinds are implementation-defined)
_STANDARD = {
    ("int8", "int16"): "int16", ("int8", "int32"): "int32", ("int8", "int64"): "int64",
    ("int16", "int32"): "int32", ("int16", "int64"): "int64", ("int32", "int64"): "int64",
    ("uint8", "uint16"): "uint16", ("uint8", "uint32"): "uint32", ("uint8", "uint64"): "uint64",
    ("uint16", "uint32"): "uint32", ("uint16", "uint64"): "uint64",
    ("uint32", "uint64"): "uint64",
    ("int8", "uint8"): "int16", ("int8", "uint16"): "int32", ("int8", "uint32"): "int64",
    ("int16", "uint8"): "int16", ("int16", "uint16"): "int32", ("int16", "uint32"): "int64",
    ("int32", "uint8"): "int32", ("int32", "uint16"): "int32", ("int32", "uint32"): "int64",
    ("int64", "uint8"): "int64", ("int64", "uint16"): "int64", ("int64", "uint32"): "int64",
    ("float32", "float64"): "float64", ("float32", "complex64"): "complex64",
    ("float32", "complex128"): "complex128", ("float64", "complex64"): "complex128",
    ("float64", "complex128"): "complex128", ("complex64", "complex128"): "complex128",
    ("bool", "bool"): "bool",
}


@pytest.mark.parametrize("pair,expected", sorted(_STANDARD.items()))
def test_standard_promotion_table(pair, expected):
    a, b = pair
    x = enp.zeros(2, dtype=a)
    y = enp.ones(2, dtype=b)
    assert (x + y).dtype == np.dtype(expected)
    assert (y + x).dtype == np.dtype(expected)
    assert enp.result_type(a, b) == np.dtype(expected)
    assert enp.multiply(x, y).dtype == np.dtype(expected)


@pytest.mark.parametrize("d", INTS + [dt.float16, dt.bfloat16, dt.float32, dt.float64] + COMPLEX)
def test_same_dtype_is_kept(d):
    x = enp.ones(3, dtype=d)
    assert (x + x).dtype == d
    assert (x * x).dtype == d


@pytest.mark.parametrize("d", INTS)
def test_weak_python_int_keeps_integer_dtype(d):
    x = enp.ones(3, dtype=d)
    assert (x + 1).dtype == d
    assert (1 + x).dtype == d
    assert (x * 2).dtype == d
    assert (x - 1).dtype == d
    assert enp.maximum(x, 0).dtype == d


@pytest.mark.parametrize("d", [dt.float16, dt.bfloat16, dt.float32, dt.float64])
def test_weak_python_float_keeps_float_dtype(d):
    x = enp.ones(3, dtype=d)
    assert (x * 2.0).dtype == d
    assert (2.0 * x).dtype == d
    assert (x / 3).dtype == d
    assert (x + True).dtype == d


def test_weak_scalar_examples_from_the_brief():
    assert (enp.ones(2, dtype="float32") * 2.0).dtype == dt.float32
    assert (enp.ones(2, dtype="int8") + 1).dtype == dt.int8
    assert (enp.asarray(np.ones(2, np.float64)) * 2.0).dtype == dt.float64
    assert (enp.asarray(np.ones(2, np.int64)) + 1).dtype == dt.int64


def test_python_scalar_of_higher_kind_uses_default_dtype():
    assert (enp.ones(2, dtype="int8") * 1.5).dtype == dt.float32
    assert (enp.ones(2, dtype="int8") + 1j).dtype == dt.complex64
    assert (enp.ones(2, dtype="float32") + 1j).dtype == dt.complex64
    assert (enp.ones(2, dtype="float64") + 1j).dtype == dt.complex128
    assert (enp.asarray([True]) + 1).dtype == dt.int32


def test_python_defaults_and_numpy_inputs():
    assert enp.asarray(1.5).dtype == dt.float32
    assert enp.asarray(3).dtype == dt.int32
    assert enp.asarray([1j]).dtype == dt.complex64
    assert enp.asarray(np.float64(2.0)).dtype == dt.float64
    assert enp.asarray(np.arange(3)).dtype == np.arange(3).dtype
    # numpy arrays in arithmetic keep their dtype (they are not weak)
    assert (enp.ones(2, dtype="float32") + np.ones(2, np.float64)).dtype == dt.float64


def test_scalar_out_of_range_for_dtype_raises():
    with pytest.raises(OverflowError, match="int8"):
        enp.ones(2, dtype="int8") + 1000


@pytest.mark.parametrize("fn", ["sin", "exp", "sqrt", "log", "mean"])
def test_float_functions_of_integers(fn):
    f = getattr(enp, fn)
    assert f(enp.ones(2, dtype="int8")).dtype == dt.float32
    assert f(enp.ones(2, dtype="int32")).dtype == dt.float32
    assert f(enp.ones(2, dtype="int64")).dtype == dt.float64
    assert f(enp.ones(2, dtype="float64")).dtype == dt.float64


def test_divide_of_integers_is_float():
    assert (enp.ones(2, dtype="int16") / enp.ones(2, dtype="int16")).dtype == dt.float32
    assert (enp.ones(2, dtype="int16") // enp.ones(2, dtype="int16")).dtype == dt.int16


def test_can_cast_and_result_type():
    assert enp.can_cast(enp.int8, enp.int16)
    assert not enp.can_cast(enp.int16, enp.int8)
    assert not enp.can_cast(enp.float64, enp.float32)
    assert enp.can_cast(enp.ones(2, dtype="uint8"), enp.int16)
    assert enp.result_type(enp.ones(2, dtype="int8"), 1) == dt.int8
    assert enp.result_type(enp.float32, 1.0) == dt.float32
    assert enp.result_type(enp.int32, enp.float16) == dt.float16
    for a, b in itertools.combinations(SIGNED + UNSIGNED[:3] + BOOL, 2):
        assert enp.result_type(a, b) == enp.result_type(b, a)
