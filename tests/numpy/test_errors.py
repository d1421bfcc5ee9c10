"""Bad arguments to ember.numpy functions raise ember's errors naming the function the
user called (not a raw numpy exception or an internal primitive's name)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import ember.numpy as enp
from ember.fx.core import EmberError

AXIS_FUNCS = [
    "sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin", "all", "any", "argmax",
    "argmin", "nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin", "ptp",
    "average", "median", "nanmedian", "cumsum", "cumprod", "nancumsum", "nancumprod",
    "cumulative_sum", "cumulative_prod", "count_nonzero", "sort", "argsort", "flip", "squeeze",
    "expand_dims", "roll_1", "take_0", "unique", "diff", "unstack", "repeat_2",
]


def _call(name, x, axis):
    if name == "roll_1":
        return enp.roll(x, 1, axis=axis)
    if name == "take_0":
        return enp.take(x, 0, axis=axis)
    if name == "repeat_2":
        return enp.repeat(x, 2, axis=axis)
    return getattr(enp, name)(x, axis=axis)


def _public(name):
    return name.split("_")[0] if name in ("roll_1", "take_0", "repeat_2") else name


@given(name=st.sampled_from(AXIS_FUNCS),
       shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3),
       data=st.data())
@settings(max_examples=120, deadline=None)
def test_out_of_range_axis_names_function_axis_and_shape(name, shape, data):
    nd = len(shape)
    extra = 1 if name == "expand_dims" else 0  # expand_dims' axes index the result
    bad = data.draw(st.one_of(st.integers(nd + extra, nd + 10),
                              st.integers(-nd - extra - 10, -nd - extra - 1)))
    x = enp.ones(shape)
    with pytest.raises(np.exceptions.AxisError) as info:
        _call(name, x, bad)
    err = info.value
    assert isinstance(err, EmberError), type(err)
    msg = str(err)
    assert msg.startswith(f"{_public(name)}: axis {bad} is out of bounds"), msg
    assert str(shape if not extra else nd + extra) in msg


@pytest.mark.parametrize("bad", [1.5, "0", [0.5]])
def test_non_integer_axis_is_a_type_error_naming_the_function(bad):
    with pytest.raises(TypeError, match=r"^sum: axis must be an integer"):
        enp.sum(enp.ones((2, 3)), axis=bad)


def test_sum_axis_5_example():
    with pytest.raises(np.exceptions.AxisError,
                       match=r"sum: axis 5 is out of bounds for an array of shape \(3,\) "
                             r"\(valid axes: -1 to 0\)"):
        enp.sum(enp.ones(3), axis=5)
    with pytest.raises(np.exceptions.AxisError, match=r"0-d array has no axes"):
        enp.sum(enp.asarray(1.0), axis=0)


CREATION = [
    ("zeros", lambda: enp.zeros(-1), ValueError, "negative dimensions"),
    ("ones", lambda: enp.ones((2, -1)), ValueError, "negative dimensions"),
    ("empty", lambda: enp.empty(-2), ValueError, "negative dimensions"),
    ("full", lambda: enp.full(-1, 0.0), ValueError, "negative dimensions"),
    ("zeros", lambda: enp.zeros(2.5), TypeError, "shape must be an int"),
    ("zeros_like", lambda: enp.zeros_like(enp.ones(2), shape=(-1,)), ValueError, "negative"),
    ("full_like", lambda: enp.full_like(enp.ones(2, dtype="int8"), 300), OverflowError, "300"),
    ("eye", lambda: enp.eye(-1), ValueError, "`n_rows` must be non-negative"),
    ("eye", lambda: enp.eye(2, k=1.5), TypeError, "`k` must be an integer"),
    ("tri", lambda: enp.tri(-1), ValueError, "`N` must be non-negative"),
    ("tri", lambda: enp.tri(2, -1), ValueError, "`M` must be non-negative"),
    ("indices", lambda: enp.indices((-1, 2)), ValueError, "negative dimensions"),
    ("arange", lambda: enp.arange(math.nan), ValueError, "must be finite"),
    ("arange", lambda: enp.arange(0, math.inf), ValueError, "must be finite"),
    ("geomspace", lambda: enp.geomspace(0, 1, 3), ValueError, "non-zero"),
    ("linspace", lambda: enp.linspace(0, 1, -1), ValueError, "non-negative"),
    ("percentile", lambda: enp.percentile(enp.ones(3), 150), ValueError, r"\[0, 100\]"),
    ("trace", lambda: enp.trace(enp.ones(3)), ValueError, "at least 2 dimensions"),
    ("asarray", lambda: enp.asarray([[1], [2, 3]]), TypeError, "ragged"),
]


@pytest.mark.parametrize("op,call,exc,match", CREATION, ids=[f"{c[0]}-{i}" for i, c in
                                                              enumerate(CREATION)])
def test_creation_functions_validate_their_arguments(op, call, exc, match):
    with pytest.raises(exc, match=match) as info:
        call()
    msg = str(info.value)
    assert msg.startswith(f"{op}:") or (op == "asarray" and "ember array" in msg), msg
    assert "iota" not in msg and "broadcast_in_dim" not in msg
