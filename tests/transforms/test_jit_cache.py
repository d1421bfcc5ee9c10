"""The jit cache: a cached program is reused only for an identical signature."""
import math

import pytest

import numpy as np
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember.transforms.util import static_key


def test_static_int_then_float_gives_the_eager_dtype():
    f = ember.jit(lambda v, s: v * s, static_argnums=1)
    x = enp.asarray(np.arange(3, dtype=np.int32))
    assert f(x, 2).dtype == np.int32
    out = f(x, 2.0)
    assert out.dtype == (x * 2.0).dtype == np.float32
    np.testing.assert_array_equal(np.asarray(out), np.arange(3, dtype=np.float32) * 2.0)


def test_static_bool_and_int_are_different_programs():
    f = ember.jit(lambda v, s: v + 1 if type(s) is bool else v * 10, static_argnums=1)
    x = enp.asarray(np.ones(2, np.float32))
    assert f(x, 1).tolist() == [10.0, 10.0]
    assert f(x, True).tolist() == [2.0, 2.0]
    assert f.compile_count == 2


def test_static_negative_zero_is_not_zero():
    f = ember.jit(lambda v, s: v * math.copysign(1.0, s), static_argnums=1)
    x = enp.asarray(np.ones(2, np.float32))
    assert f(x, 0.0).tolist() == [1.0, 1.0]
    assert f(x, -0.0).tolist() == [-1.0, -1.0]


def test_static_tuples_are_keyed_element_by_element():
    f = ember.jit(lambda v, cfg: v * cfg[1], static_argnums=1)
    x = enp.asarray(np.arange(3, dtype=np.int32))
    assert f(x, ("a", 3)).dtype == np.int32
    out = f(x, ("a", 3.0))
    assert out.dtype == np.float32 and out.tolist() == [0.0, 3.0, 6.0]


def test_static_argnames_keyed_by_type():
    f = ember.jit(lambda v, *, s: v * s, static_argnames="s")
    x = enp.asarray(np.arange(3, dtype=np.int32))
    assert f(x, s=2).dtype == np.int32
    assert f(x, s=2.0).dtype == np.float32


def test_nan_static_hits_the_cache():
    f = ember.jit(lambda v, s: v + s, static_argnums=1)
    x = enp.asarray(np.ones(2, np.float32))
    f(x, float("nan"))
    f(x, float("nan"))
    assert f.compile_count == 1


def test_nested_static_tuples_are_keyed_at_every_depth():
    # (Python's own tuple comparison recurses in C, which bounds the depth here.)
    t = ()
    for i in range(300):
        t = (t, i)
    assert static_key(t) == static_key(t)
    u = (t, 0.0)
    assert static_key(u) != static_key((t, -0.0))


_scalars = st.one_of(st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, width=32),
                     st.sampled_from([np.int32(1), np.float32(1.0), np.float64(1.0)]))


@settings(max_examples=200, deadline=None)
@given(st.lists(_scalars, max_size=3), st.lists(_scalars, max_size=3))
def test_static_key_equal_iff_types_and_values_equal(a, b):
    same = len(a) == len(b) and all(
        type(x) is type(y) and (np.asarray(x).tobytes() == np.asarray(y).tobytes()) for x, y in zip(a, b))
    assert (static_key(tuple(a)) == static_key(tuple(b))) == same


def test_static_argnames_and_argnums_imply_each_other():
    # as in JAX: a parameter named static is static when passed positionally too
    def f(x, s):
        return x * s if s > 1 else x        # Python control flow on s: must be static
    x = enp.ones(2)
    by_name = ember.jit(f, static_argnames="s")
    assert by_name(x, 3).tolist() == [3.0, 3.0]
    assert by_name(x, s=0.5).tolist() == [1.0, 1.0]
    assert by_name.static_argnums == (1,)
    by_num = ember.jit(f, static_argnums=1)
    assert by_num(x, s=3).tolist() == [3.0, 3.0]
    assert by_num.static_argnames == ("s",)
    with pytest.raises(ValueError, match="static_argnums=2 is out of range"):
        ember.jit(f, static_argnums=2)(x, 3)
