"""The default float setting: constructors, Python-float promotion, random samplers, the
jit cache and the jvp dtype check follow it; float32 stays the default."""
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember import config, dtypes


@pytest.fixture(autouse=True)
def _restore_default():
    yield
    dtypes.set_default_float("float32")


def test_issue_example_is_exactly_a_tenth():
    f = lambda v: enp.sum(v * enp.linspace(0., 1., 11))  # noqa: E731
    x = enp.ones(11, dtype="float64")
    # the trap the setting removes: linspace is float32 by default
    assert float(ember.grad(f)(x)[1]) == float(np.float32(0.1))
    with ember.default_float("float64"):
        assert float(ember.grad(f)(x)[1]) == 0.1
        assert float(ember.jit(ember.grad(f))(x)[1]) == 0.1


CONSTRUCTORS = {
    "zeros": lambda: enp.zeros(3),
    "ones": lambda: enp.ones((2, 2)),
    "empty": lambda: enp.empty(2),
    "full_float": lambda: enp.full((2,), 0.1),
    "linspace": lambda: enp.linspace(0.0, 1.0, 7),
    "arange_float": lambda: enp.arange(0.0, 1.0, 0.1),
    "eye": lambda: enp.eye(3),
    "tri": lambda: enp.tri(3),
    "asarray_float": lambda: enp.asarray(0.1),
    "asarray_list": lambda: enp.asarray([0.1, 0.2]),
    "array": lambda: enp.array([[1.5]]),
    "sin_of_python_float": lambda: enp.sin(0.1),
    "int_times_weak_float": lambda: enp.arange(3) * 0.1,
    "mean_of_ints": lambda: enp.mean(enp.arange(4)),
}


@pytest.mark.parametrize("name", sorted(CONSTRUCTORS))
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_constructors_follow_the_default(name, dtype):
    with ember.default_float(dtype):
        out = CONSTRUCTORS[name]()
    assert out.dtype == dtypes.canonicalize(dtype), name
    assert CONSTRUCTORS[name]().dtype == dtypes.float32


def test_values_are_numpys_float64_values():
    with ember.default_float("float64"):
        np.testing.assert_array_equal(np.asarray(enp.linspace(0.0, 1.0, 11)), np.linspace(0, 1, 11))
        np.testing.assert_array_equal(np.asarray(enp.arange(0.0, 1.0, 0.1)), np.arange(0, 1, 0.1))
        assert enp.asarray(0.1).item() == 0.1
        assert (enp.ones(()) / 3.0).item() == 1 / 3


def test_complex_follows_and_ints_stay_int32():
    with ember.default_float("float64"):
        assert enp.asarray(1 + 2j).dtype == dtypes.complex128
        assert enp.asarray(3).dtype == dtypes.int32
        assert enp.arange(3).dtype == dtypes.int32
        assert enp.zeros(2, dtype=int).dtype == dtypes.int32
        assert enp.zeros(2, dtype=float).dtype == dtypes.float64
    assert enp.asarray(1 + 2j).dtype == dtypes.complex64


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["bool", "int8", "int32", "uint8", "float16", "float32", "float64"]),
       st.sampled_from(["float32", "float64"]))
def test_weak_floats_follow_arrays_and_the_default_only_alone(dt, default):
    """A strong array decides the dtype; a Python float decides it only among weak values."""
    x = enp.ones(2, dtype=dt)
    with ember.default_float(default):
        got = (x * 0.5).dtype
        alone = enp.add(0.5, 1).dtype
    expect = np.dtype(dt) if dtypes.is_float(np.dtype(dt)) else np.dtype(default)
    assert got == expect
    assert alone == np.dtype(default)


def test_random_samplers_follow_the_default():
    k = ember.random.key(0)
    samplers = [lambda: ember.random.normal(k, (4,)), lambda: ember.random.uniform(k, (4,)),
                lambda: ember.random.exponential(k, (4,)), lambda: ember.random.gamma(k, 2.0, (4,))]
    for s in samplers:
        assert s().dtype == dtypes.float32
        with ember.default_float("float64"):
            out = s()
        assert out.dtype == dtypes.float64
        # explicit float64 gives the same bits as the default float64
        assert np.all(np.isfinite(np.asarray(out)))
    with ember.default_float("float64"):
        a = ember.random.normal(k, (4,))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(ember.random.normal(k, (4,), dtype="float64")))


def test_jit_cache_separates_defaults():
    f = ember.jit(lambda x: x + enp.linspace(0.0, 1.0, 11))
    x = enp.zeros(11, dtype="float64")
    assert f(x)[1].item() == float(np.float32(0.1))
    assert f(x)[1].item() == float(np.float32(0.1))  # the fast path
    with ember.default_float("float64"):
        assert f(x)[1].item() == 0.1
        assert f(x)[1].item() == 0.1
    assert f(x)[1].item() == float(np.float32(0.1))
    g = ember.jit(lambda: enp.zeros(2))
    assert g().dtype == dtypes.float32
    with ember.default_float("float64"):
        assert g().dtype == dtypes.float64
    assert g().dtype == dtypes.float32


def test_the_three_spellings_and_nesting():
    config.update("default_float", "float64")
    assert config.default_float() == dtypes.float64 and ember.get_default_dtype() == dtypes.float64
    with ember.default_float("float32"):
        assert enp.zeros(1).dtype == dtypes.float32
        with ember.default_float("float16"):
            assert enp.zeros(1).dtype == dtypes.float16
        assert enp.zeros(1).dtype == dtypes.float32
    assert enp.zeros(1).dtype == dtypes.float64
    ember.set_default_dtype(enp.float32)
    assert enp.zeros(1).dtype == dtypes.float32


def test_context_restores_on_error():
    with pytest.raises(ZeroDivisionError):
        with ember.default_float("float64"):
            1 / 0
    assert enp.zeros(1).dtype == dtypes.float32


@pytest.mark.parametrize("bad", ["int32", "complex128", "f64x", 3])
def test_bad_default_is_a_clear_error(bad):
    with pytest.raises(TypeError, match="default float dtype must be one of float16, bfloat16"):
        config.update("default_float", bad)
    assert enp.zeros(1).dtype == dtypes.float32


def test_environment_variable():
    code = ("import ember.numpy as enp, ember; "
            "print(enp.zeros(1).dtype, enp.asarray(0.1).dtype, ember.config.default_float())")
    env = dict(os.environ, EMBER_DEFAULT_FLOAT="float64", PYTHONPATH=os.getcwd())
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["float64", "float64", "float64"]
    env["EMBER_DEFAULT_FLOAT"] = "int8"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "EMBER_DEFAULT_FLOAT='int8'" in r.stderr


def test_jvp_rejects_a_float32_tangent_for_a_float64_primal():
    p = {"w": enp.ones(2, dtype="float64"), "b": enp.ones((), dtype="float64")}
    t = {"w": enp.ones(2, dtype="float32"), "b": enp.ones((), dtype="float64")}
    with pytest.raises(TypeError, match=r"tangent of primals\[0\]\['w'\] has dtype float32 but "
                                        r"the primal has dtype float64") as e:
        ember.jvp(lambda q: q["w"] * q["b"], (p,), (t,))
    assert "test_default_dtype.py" in str(e.value)
    with pytest.raises(TypeError, match="float64 but the primal has dtype float32"):
        ember.jvp(enp.sin, (enp.ones(2),), (np.ones(2),))
    # matching dtypes and Python scalars (weak) are fine
    _, tout = ember.jvp(lambda x: x * 3.0, (enp.ones((), dtype="float64"),), (1.0,))
    assert tout.dtype == dtypes.float64 and tout.item() == 3.0
    _, tout = ember.jvp(lambda q: q["w"] * q["b"], (p,), ({"w": t["w"].astype("float64"), "b": t["b"]},))
    np.testing.assert_array_equal(np.asarray(tout), [2.0, 2.0])


def test_nn_layers_and_initialisers_follow_the_default():
    """PyTorch's habit: set_default_dtype(float64) makes new layers' parameters float64."""
    ember.set_default_dtype("float64")
    lin = ember.nn.Linear(3, 2)
    assert lin.weight.dtype == dtypes.float64 and lin.bias.dtype == dtypes.float64
    assert lin(enp.ones(3)).dtype == dtypes.float64
    assert ember.nn.init.normal_((2, 2), key=ember.random.key(0)).dtype == dtypes.float64
    ember.set_default_dtype("float32")
    assert ember.nn.Linear(3, 2).weight.dtype == dtypes.float32
