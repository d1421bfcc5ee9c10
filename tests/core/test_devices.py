"""Devices and backends: equality includes the backend, eager operations run
through the operands' device's backend, jit follows where its arguments live,
and backends are registered by name with lazy factories."""
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember.backends import base
from ember.backends.cpu import CpuBackend
from ember.backends.reference import InterpretedExecutable, ReferenceBackend


def test_device_equality_includes_the_backend():
    cpu, ref = ember.devices()[0], ember.devices("reference")[0]
    assert (str(cpu), str(ref)) == ("cpu:0", "reference:cpu:0")
    assert cpu.platform == ref.platform == "cpu" and cpu.id == ref.id == 0
    assert cpu != ref and not (cpu == ref)
    assert len({cpu, ref}) == 2
    # a second device object of the same backend is the same device, with the same hash
    twin = base.Device("cpu", 0, cpu.backend)
    assert twin == cpu and hash(twin) == hash(cpu) and {cpu: 1}[twin] == 1
    assert base.Device("cpu", 1, cpu.backend) != cpu
    assert ember.devices("cpu") == [cpu] and cpu != "cpu:0"
    # both run eager ops as the numpy impls, which the eager trace calls itself
    assert cpu._execute is None and ref._execute is None


class CountingBackend(ReferenceBackend):
    """A third backend over numpy buffers that counts its eager calls."""
    name = "counting"

    def __init__(self):
        super().__init__()
        self.calls = []

    def execute(self, prim, buffers, params, device):
        self.calls.append(prim.name)
        return super().execute(prim, buffers, params, device)


@pytest.fixture
def counting():
    base.register_backend("counting", CountingBackend)
    try:
        yield base.get_backend("counting")
    finally:
        base._FACTORIES.pop("counting", None)
        base._BACKENDS.pop("counting", None)


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(0, 4), max_size=3),
       dtype=st.sampled_from(["float32", "float64", "int32", "int8"]))
def test_eager_ops_run_through_the_operands_backend(shape, dtype):
    base.register_backend("counting", CountingBackend)
    try:
        be = base.get_backend("counting")
        dev = be.devices()[0]
        xn = (np.arange(int(np.prod(shape))) % 7).astype(dtype).reshape(shape)
        x = ember.device_put(xn, dev)
        assert x.device == dev and str(dev) == "counting:cpu:0"
        y = (x * 3 + 1).sum(axis=0) if shape else x * 3 + 1
        ref = (xn * np.array(3, dtype) + np.array(1, dtype))
        ref = ref.sum(axis=0, dtype=ref.dtype if dtype != "int8" else None) if shape else ref
        np.testing.assert_array_equal(np.asarray(y), ref.astype(y.dtype))
        assert y.device == dev
        assert dev._execute is not None   # an overridden execute is always called
        assert {"mul", "add"} <= set(be.calls)
        # the CPU backend's device did not run them
        n = len(be.calls)
        _ = enp.asarray(xn) * 3
        assert len(be.calls) == n
    finally:
        base._FACTORIES.pop("counting", None)
        base._BACKENDS.pop("counting", None)


def test_jit_follows_its_arguments_device():
    xn = np.linspace(-2, 2, 7, dtype=np.float32)
    f = ember.jit(lambda a: enp.tanh(a) * 2.0 + 1.0)
    on_ref = ember.device_put(xn, "reference:cpu:0")
    r = f(on_ref)
    assert r.device == ember.devices("reference")[0]
    assert [k[3] for k in f._cache] == ["reference"]
    entry = next(iter(f._cache.values()))
    assert isinstance(entry.graph._cache["reference"], InterpretedExecutable)
    np.testing.assert_allclose(np.asarray(r), np.tanh(xn) * 2 + 1, rtol=1e-6)
    assert f(on_ref).device == r.device  # the fast path keeps the device too
    c = f(enp.asarray(xn))
    assert c.device == ember.devices()[0]
    assert sorted(k[3] for k in f._cache) == ["cpu", "reference"]
    np.testing.assert_allclose(np.asarray(c), np.asarray(r), rtol=2e-6, atol=1e-6)


def test_jit_explicit_backend_wins():
    xn = np.arange(4.0, dtype=np.float32)
    f = ember.jit(lambda a: a * a, backend="reference")
    out = f(enp.asarray(xn))
    assert [k[3] for k in f._cache] == ["reference"]
    np.testing.assert_array_equal(np.asarray(out), xn * xn)


def test_jit_arguments_on_two_backends_is_a_clear_error(counting):
    f = ember.jit(lambda a, b: a + b)
    a = ember.device_put(np.ones(2, np.float32), "reference")
    b = enp.ones(2)
    with pytest.raises(ValueError) as e:
        f(a, b)
    msg = str(e.value)
    assert "jit(<lambda>)" in msg and "`a` on reference:cpu:0" in msg and "`b` on cpu:0" in msg
    assert "device_put" in msg and "test_devices.py" in msg
    # by keyword and nested, the pytree path names the leaf
    g = ember.jit(lambda p: p["w"] * p["v"])
    with pytest.raises(ValueError, match=r"`p\['v'\]` on counting:cpu:0"):
        g({"w": a, "v": ember.device_put(np.ones(2, np.float32), counting.devices()[0])})


def test_device_put_names_and_errors():
    x = enp.arange(3)
    assert ember.device_put(x, "reference").device == ember.devices("reference")[0]
    assert ember.device_put(x, "reference:cpu:0").device == ember.devices("reference")[0]
    back = ember.device_put(ember.device_put(x, "reference"), "cpu:0")
    assert back.device == ember.devices()[0] and back.tolist() == [0, 1, 2]
    w = ember.device_put(2.0, "reference")
    assert w.dtype == np.float32 and w.tolist() == 2.0
    with pytest.raises(ValueError, match="unknown device 'tpu:0'; available: .*cpu:0"):
        ember.device_put(x, "tpu:0")
    with pytest.raises(TypeError, match="device must be an ember Device or its name"):
        ember.device_put(x, 0)


def test_backend_registry_is_lazy_and_by_name():
    assert isinstance(base.get_backend("cpu"), CpuBackend)
    assert base.get_backend("reference") is base.get_backend("reference")
    with pytest.raises(ValueError, match="unknown backend 'nope'; available: .*'cpu'"):
        base.get_backend("nope")
    # `import ember` and eager work load no code generator; the first compile does
    code = ("import sys, ember, ember.numpy as enp\n"
            "x = enp.ones(3) + 1\n"
            "print('llvmlite' in sys.modules, 'ember.backends.llvm' in sys.modules)\n"
            "ember.jit(lambda v: v * 2)(x)\n"
            "print('llvmlite' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "True"]


@settings(max_examples=25, deadline=None)
@given(data=st.lists(st.one_of(st.integers(-100, 100), st.floats(-1e3, 1e3)), max_size=6),
       np_dtype=st.sampled_from([None, "int8", "int64", "float64", "float16"]))
def test_from_host_matches_numpy_with_ember_defaults(data, np_dtype):
    from ember._host import from_host
    if np_dtype is None:
        a = from_host(data)
        want = np.array(data)
        kind = want.dtype.kind if data else "f"
        want = want.astype({"i": np.int32, "f": np.float32}[kind])
    else:
        src = np.array(data).astype(np_dtype)
        a = from_host(src)
        want = src
    assert a.dtype == want.dtype and a.shape == want.shape and a.device == ember.devices()[0]
    np.testing.assert_array_equal(np.asarray(a), want)
    assert not np.asarray(a).flags.writeable


def test_from_host_errors_name_the_value_and_dtype():
    from ember._host import from_host
    with pytest.raises(OverflowError, match="Python int 300 is out of range for dtype int8"):
        from_host([1, 300], np.dtype("int8"))
    with pytest.raises(TypeError, match="ragged nested sequences"):
        from_host([[1, 2], [3]])
    with pytest.raises(ValueError, match="copy=False, but its dtype int64 differs"):
        from_host(np.arange(2), np.dtype("float32"), copy=False)
