"""jit donate_argnums: donated arrays are deleted, their buffers reused for outputs."""
import inspect
import os

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.transforms.donation import DonatedArrayError

N = 100_000   # 400 KB of float32: above the executable's output-recycling size


def _addr(a):
    return a._value.ctypes.data


def test_donated_array_cannot_be_used_again():
    f = ember.jit(lambda x, y: x * 2.0 + y, donate_argnums=0)
    x, y = enp.asarray(np.arange(4.0, dtype=np.float32)), enp.ones(4)
    line = inspect.currentframe().f_lineno + 1
    z = f(x, y)
    np.testing.assert_array_equal(np.asarray(z), np.arange(4.0) * 2 + 1)
    for use in (lambda: x + 1.0, lambda: np.asarray(x), lambda: f(x, y), lambda: x.shape, lambda: repr(x)):
        with pytest.raises(DonatedArrayError, match=r"donated to jit\(<lambda>\)") as info:
            use()
        assert f"{os.path.abspath(__file__)}:{line}" in str(info.value)
    assert isinstance(info.value, RuntimeError)
    np.testing.assert_array_equal(np.asarray(y), np.ones(4))   # not donated: still usable


def test_donated_buffer_is_reused_by_the_next_output():
    f = ember.jit(lambda x, y: x * 2.0 + y, donate_argnums=0)
    y = enp.ones(N)
    x0 = enp.asarray(np.zeros(N, np.float32))
    a0 = _addr(x0)
    x1 = f(x0, y)
    (entry,) = f._cache.values()
    exe = entry.graph._cache["cpu"]
    # x0's old buffer waits in the executable's output pool ...
    assert any(b.ctypes.data == a0 for slots in exe._state.recycled.values() for b in slots)
    x2 = f(x1, y)
    assert _addr(x2) == a0          # ... and the second call's output is written into it
    want = np.zeros(N, np.float32)
    for _ in range(2):
        want = want * 2 + 1
    np.testing.assert_array_equal(np.asarray(x2), want)
    x = x2
    for _ in range(5):
        x = f(x, y)
        want = want * 2 + 1
    np.testing.assert_array_equal(np.asarray(x), want)


def test_views_are_deleted_but_never_reused():
    base = np.zeros(2 * N, np.float32)
    x = enp.asarray(base)[:N]          # an ember view of a buffer
    f = ember.jit(lambda v: v + 1.0, donate_argnums=0)
    out = f(x)
    out2 = f(out)
    np.testing.assert_array_equal(np.asarray(out2), np.full(N, 2.0, np.float32))
    np.testing.assert_array_equal(base, 0.0)   # the user's numpy memory is untouched


def test_pytree_arguments_and_identity_outputs():
    f = ember.jit(lambda p, s: ({"w": p["w"] - s, "b": p["b"]}), donate_argnums=(0,))
    p = {"w": enp.asarray([1.0, 2.0]), "b": enp.asarray([3.0])}
    out = f(p, 0.5)
    with pytest.raises(DonatedArrayError):
        p["w"] + 0
    with pytest.raises(DonatedArrayError):
        p["b"] + 0
    assert np.asarray(out["w"]).tolist() == [0.5, 1.5] and np.asarray(out["b"]).tolist() == [3.0]


def test_numpy_inputs_and_transforms_ignore_donation():
    f = ember.jit(lambda x: enp.sin(x), donate_argnums=0)
    xn = np.ones(3, np.float32)
    f(xn)
    assert xn.tolist() == [1.0, 1.0, 1.0]
    x = enp.asarray([0.5, 1.0])
    g = ember.grad(lambda v: f(v).sum())(x)        # under grad the call is traced: nothing donated
    np.testing.assert_allclose(np.asarray(g), np.cos([0.5, 1.0]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ember.vmap(f)(x)), np.sin([0.5, 1.0]), rtol=1e-6)
    assert np.asarray(x).tolist() == [0.5, 1.0]


def test_bad_donate_argnums():
    with pytest.raises(ValueError, match="both static and donated"):
        ember.jit(lambda x, n: x * n, static_argnums=1, donate_argnums=1)
    with pytest.raises(TypeError, match="non-negative ints"):
        ember.jit(lambda x: x, donate_argnums=-1)
    with pytest.raises(TypeError, match="non-negative ints"):
        ember.jit(lambda x: x, donate_argnums="x")
