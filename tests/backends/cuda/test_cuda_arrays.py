"""The CUDA backend's devices, arrays and eager dispatch without a GPU.

`CudaBackend(xp=numpy, compile_graph=<the reference interpreter>)`, registered as
`cuda-emulated`, runs the backend's own code (operand conversion, the eager
table, the one-op compiled fallback and its cache, put/get, jit choosing the
arguments' backend) with numpy arrays standing in for CuPy's.  The rest checks
what a machine without a GPU sees: no devices, clear errors, CuPy never imported.
"""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.array import wrap_buffer
from ember.backends import base
from ember.backends.cuda import backend as cb
from ember.backends.reference.backend import InterpretedExecutable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class EmulatedCuda(cb.CudaBackend):
    name = "cuda-emulated"
    compiled: list = []

    def __init__(self):
        def compile_graph(closed):
            EmulatedCuda.compiled.append([e.prim.name for e in closed.equations])
            return InterpretedExecutable(closed)
        super().__init__(xp=np, compile_graph=compile_graph, devices=2)


@pytest.fixture
def gpu():
    base.register_backend("cuda-emulated", EmulatedCuda)
    EmulatedCuda.compiled.clear()
    yield base.get_backend("cuda-emulated").devices()[0]
    base._FACTORIES.pop("cuda-emulated", None)
    base._BACKENDS.pop("cuda-emulated", None)


def test_eager_ops_stay_on_the_device_and_match_the_cpu(gpu):
    x = ember.device_put(enp.arange(6.0).reshape(2, 3), gpu)
    assert x.device == gpu and str(gpu) == "cuda-emulated:cuda:0"
    y = (x * 2 + 1.5).sum(axis=1)
    assert y.device == gpu
    np.testing.assert_array_equal(np.asarray(y), (np.arange(6.0).reshape(2, 3) * 2 + 1.5).sum(1))
    assert not EmulatedCuda.compiled   # every op above has a rule: nothing was compiled


def test_primitives_without_a_rule_run_as_cached_one_op_programs(gpu):
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    x = ember.device_put(a, gpu)
    for _ in range(3):
        lu, piv, perm = lax.linalg.lu(x)
    assert lu.device == gpu and np.asarray(perm).tolist() == [1, 0]
    assert EmulatedCuda.compiled == [["lu"]]   # compiled once, then from the cache
    # the device library's functions are rules too: nothing compiled for these
    s, c = enp.sort(x[0] * -1), enp.cumsum(x[0])
    assert np.asarray(s).tolist() == [-2.0, -1.0] and np.asarray(c).tolist() == [1.0, 3.0]
    assert c.device == gpu and EmulatedCuda.compiled == [["lu"]]


def test_declined_operands_fall_back(gpu):
    z = ember.device_put(np.array([1 + 1j, 0j], np.complex64), gpu)
    out = enp.expm1(z)
    assert EmulatedCuda.compiled == [["expm1"]]
    np.testing.assert_allclose(np.asarray(out), np.expm1(np.array([1 + 1j, 0j], np.complex64)), rtol=1e-6)


def test_jit_runs_on_the_arguments_backend(gpu):
    x = ember.device_put(enp.ones(3), gpu)
    out = ember.jit(lambda v: enp.sin(v) * 2)(x)
    assert out.device == gpu
    np.testing.assert_allclose(np.asarray(out), 2 * np.sin(np.ones(3, np.float32)), rtol=1e-6)
    assert EmulatedCuda.compiled and "sin" in EmulatedCuda.compiled[-1]


def test_grad_on_the_device(gpu):
    x = ember.device_put(np.array([0.5, -1.0], np.float32), gpu)
    g = ember.grad(lambda v: (v * v * v).sum())(x)
    assert g.device == gpu
    np.testing.assert_allclose(np.asarray(g), 3 * np.array([0.5, -1.0]) ** 2, rtol=1e-6)


def test_round_trip_between_devices(gpu):
    host = np.arange(4, dtype=np.int16)
    a = ember.device_put(host, gpu)
    other = base.get_backend("cuda-emulated").devices()[1]
    b = a.to_device(other)
    back = ember.device_put(b, "cpu")
    assert (b.device, back.device) == (other, ember.devices("cpu")[0])
    assert np.asarray(back).tolist() == host.tolist() and back.dtype == np.int16
    assert ember.device_get(a).tolist() == host.tolist()
    assert float(ember.device_put(np.float32(2.5), gpu)) == 2.5


def test_default_device_context_sends_constructors_there(gpu):
    with ember.default_device(gpu):
        assert ember.default_device() == gpu
        for a in (enp.zeros(3), enp.asarray([1, 2]), enp.arange(3), ember.random.normal(ember.random.key(0), (2,))):
            assert a.device == gpu, a.device
        assert ember.jit(lambda: enp.ones(2) * 3)().device == gpu
    assert ember.default_device() == ember.devices("cpu")[0]
    assert enp.zeros(2).device == ember.devices("cpu")[0]


def test_random_bits_are_identical_on_the_device(gpu):
    k = ember.random.key(7)
    want = np.asarray(ember.random.normal(k, (5,)))
    got = ember.random.normal(ember.device_put(k, gpu), (5,))
    assert got.device == gpu
    np.testing.assert_array_equal(np.asarray(got), want)


def test_module_to_and_save_load(gpu, tmp_path):
    model = ember.nn.Linear(3, 2)
    model.to(gpu)
    assert model.weight.device == gpu and model.bias.device == gpu
    out = model(ember.device_put(enp.ones((1, 3)), gpu))
    assert out.device == gpu
    path = str(tmp_path / "m.safetensors")
    ember.save(path, model.state_dict())
    w = ember.load(path, device=gpu)
    assert w["weight"].device == gpu
    np.testing.assert_array_equal(np.asarray(w["weight"]), np.asarray(model.weight))
    model.cpu()
    assert model.weight.device == ember.devices("cpu")[0]
    assert ember.load(path, device="reference")["bias"].device == ember.devices("reference")[0]


def test_emulated_buffers_are_numpy_arrays(gpu):
    # the backend's buffers are whatever its xp makes: here numpy, on a GPU CuPy
    x = ember.device_put(enp.ones(2), gpu)
    assert type(x._value) is np.ndarray and not gpu.host_buffers


# --- what a machine without a GPU sees --------------------------------------------------

needs_no_gpu = pytest.mark.skipif(cb.device_count() > 0, reason="this machine has a GPU")


@needs_no_gpu
def test_no_gpu_devices_and_errors():
    assert ember.devices() == ember.devices("cpu")
    with pytest.raises(RuntimeError) as e:
        ember.devices("cuda")
    msg = str(e.value)
    assert "'cuda'" in msg and "cpu:0" in msg and 'pip install -e ".[gpu]"' in msg
    with pytest.raises(ValueError) as e:   # DeviceNotFoundError is both
        ember.device_put(enp.ones(2), "cuda")
    assert "device_put" in str(e.value) and "available: " in str(e.value) and ".[gpu]" in str(e.value)
    with pytest.raises(RuntimeError, match="not available"):
        ember.nn.Linear(1, 1).cuda()
    with pytest.raises(RuntimeError, match="'cuda' is not available: the cuda backend"):
        ember.devices("gpu")   # JAX's platform name
    assert "cuda" not in base.available_backends()
    assert base.get_backend("cuda").unavailable_reason()


@needs_no_gpu
def test_pin_memory_without_a_gpu_warns_and_loads():
    from ember.data import ArrayDataset, DataLoader
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = [np.asarray(b[0]).tolist() for b in DataLoader(ArrayDataset(np.arange(4.0)), batch_size=2,
                                                               pin_memory=True)]
    assert out == [[0.0, 1.0], [2.0, 3.0]]
    assert any("pin_memory" in str(w.message) and "no accelerator" in str(w.message) for w in seen)


def _run(code, **env):
    full = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env=full)


def test_import_and_eager_work_never_import_cupy():
    code = ("import sys, ember, ember.numpy as enp\n"
            "y = enp.ones(3) + 1\n"
            "assert y.tolist() == [2.0, 2.0, 2.0]\n"
            "ember.jit(lambda v: v * 2)(y)\n"
            "print(ember.default_device(), 'cupy' in sys.modules)\n")
    res = _run(code, EMBER_DEFAULT_DEVICE="cpu")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["cpu:0", "False"]
    if not cb.gpu_may_be_present():   # with no device node even the default check skips CuPy
        res = _run(code)
        assert res.returncode == 0, res.stderr
        assert res.stdout.split() == ["cpu:0", "False"]


@needs_no_gpu
def test_default_device_cuda_without_a_gpu_is_a_clear_error():
    res = _run("import ember.numpy as enp\nenp.ones(2)\n", EMBER_DEFAULT_DEVICE="cuda")
    assert res.returncode != 0
    assert "EMBER_DEFAULT_DEVICE 'cuda' is not available" in res.stderr and ".[gpu]" in res.stderr


def test_cupy_without_a_driver_means_no_devices(tmp_path):
    # a stand-in CuPy whose runtime raises as CuPy does on a machine without a driver
    fake = tmp_path / "cupy"
    (fake / "cuda").mkdir(parents=True)
    (fake / "__init__.py").write_text("from . import cuda\n")
    (fake / "cuda" / "__init__.py").write_text(
        "class CUDARuntimeError(RuntimeError):\n    pass\n"
        "class runtime:\n"
        "    CUDARuntimeError = CUDARuntimeError\n"
        "    @staticmethod\n"
        "    def getDeviceCount():\n"
        "        raise CUDARuntimeError('cudaErrorInsufficientDriver: CUDA driver version is insufficient')\n")
    code = ("import ember\nfrom ember.backends.cuda import backend as cb\n"
            "print(cb.device_count(), ember.devices('cpu'))\n"
            "try:\n    ember.devices('cuda')\nexcept RuntimeError as e:\n    print('ERR', e)\n")
    res = _run(code, PYTHONPATH=str(tmp_path) + os.pathsep + ROOT)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("0 [cpu:0]")
    assert "InsufficientDriver" in res.stdout and ".[gpu]" in res.stdout


def test_gpu_extra_brings_cupy_for_cuda_13():
    import tomllib
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    assert "cupy-cuda13x" in extras["gpu"]


def _losses_on(where, model, make_opt, rows, steps, jit=True):
    """The losses of `steps` TrainSteps of `model` on `rows` examples placed on `where`."""
    from ember import nn
    step = nn.TrainStep(model, make_opt(model), lambda m, x, y: nn.functional.mse_loss(m(x), y), jit=jit)
    x = ember.device_put(enp.linspace(-1, 1, 3 * rows).reshape(rows, 3), where)
    y = ember.device_put(enp.ones((rows, 1)), where)
    return [float(step(x, y)) for _ in range(steps)]


def _cpu_and_device_losses(dev, make_opt, rows, steps, jit=True):
    import copy
    from ember import nn
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    want = _losses_on("cpu", copy.deepcopy(model), make_opt, rows, steps, jit)
    got = _losses_on(dev, model.to(dev), make_opt, rows, steps, jit)
    return model, got, want


@pytest.mark.parametrize("jit", [False, True])
def test_train_step_on_the_device(gpu, jit):
    from ember import optim
    model, got, want = _cpu_and_device_losses(gpu, lambda m: optim.Adam(m, lr=1e-2), 8, 5, jit)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert all(p.device == gpu for p in ember.tree.tree_leaves(model.parameters()))
    assert enp.zeros_like(model[0].weight).device == gpu


@pytest.mark.parametrize("name", ["backend", "eager", "eager_elementwise", "eager_structure",
                                  "eager_reduce", "eager_indexing", "eager_random"])
def test_docstring_examples_of_the_gpu_less_modules(name):
    # tests/test_docstring_examples.py leaves ember.backends.cuda out (much of it
    # needs NVRTC); these modules need no GPU, so their examples run here
    import doctest
    import importlib
    mod = importlib.import_module(f"ember.backends.cuda.{name}")
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0 and res.attempted > 0


def test_host_literals_are_copied_once_and_keep_their_dtype(gpu):
    b = base.get_backend("cuda-emulated")
    x = ember.device_put(np.arange(3, dtype=np.float16), gpu)
    y = x * 2.0
    assert y.dtype == np.float16 and np.asarray(y).tolist() == [0.0, 2.0, 4.0]
    before = dict(b._scalars)
    _ = x * 2.0
    assert b._scalars == before   # the literal came from the cache
    z = ember.device_put(np.array([-0.0], np.float32), gpu)
    assert np.signbit(np.asarray(enp.maximum(z, 0.0))).tolist() == [False]
    assert np.signbit(np.asarray(enp.minimum(z, -0.0) * 1.0)).tolist() == [True]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_pinned_batches_are_the_source_of_the_device_copy(gpu, monkeypatch, num_workers):
    import ember.data.pin as pin
    from ember.data import ArrayDataset, DataLoader
    blocks = []

    def fake_alloc_pinned(nbytes):   # stands in for cupy.cuda.alloc_pinned_memory
        blocks.append(bytearray(nbytes))
        return blocks[-1]

    monkeypatch.setattr(pin, "_cupy_alloc_pinned", lambda: fake_alloc_pinned)
    sources = []
    b = base.get_backend("cuda-emulated")
    real_put = b.put
    monkeypatch.setattr(b, "put", lambda v, d: sources.append(v) or real_put(v, d))
    with ember.default_device(gpu):
        out = list(DataLoader(ArrayDataset(np.arange(8.0, dtype=np.float32)), batch_size=4,
                              num_workers=num_workers, pin_memory=True))
    assert [o[0].device for o in out] == [gpu, gpu]
    assert [np.asarray(o[0]).tolist() for o in out] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    # every host-to-device copy read a pinned block, not a copy of it
    pinned = [np.frombuffer(blk, np.uint8) for blk in blocks]
    assert sources and all(any(np.shares_memory(s, p) for p in pinned) for s in sources)


def test_exports_never_expose_shared_literals_or_broadcasts(gpu):
    b = base.get_backend("cuda-emulated")
    with ember.default_device(gpu):
        z0 = enp.zeros(())        # a view of the cached literal 0.0
        z3 = enp.zeros(3)         # a broadcast of it
    literal = next(v for (dev, dt, bits), v in b._scalars.items() if dt == np.dtype("float32").str
                   and bits == np.float32(0).tobytes())
    for a in (z0, z3):
        out = np.from_dlpack(a)
        assert not np.shares_memory(out, literal)
        assert 0 not in out.strides or out.size <= 1
    x = ember.device_put(np.arange(4.0), gpu)
    assert np.shares_memory(np.from_dlpack(x), x._value)   # ordinary arrays: zero-copy


def test_weak_types_and_python_scalars_on_the_device(gpu):
    x = ember.device_put(np.array([1.0, 2.0], np.float16), gpu)
    y = x + 1.0
    assert (y.dtype, y.weak_type, y.device) == (np.float16, False, gpu)
    i = ember.device_put(np.array([7, -7], np.int8), gpu)
    assert (i // 2).dtype == np.int8 and np.asarray(i // 2).tolist() == [3, -4]   # numpy's floor division
    with ember.default_device(gpu):
        w = ember.lax.mul(2.0, 3.0)
        assert (w.weak_type, w.device, float(w)) == (True, gpu, 6.0)
        assert (w + np.float16(1)).dtype == np.float16   # a weak value takes the other's dtype


class _MakesArrays:
    """A dataset building ember arrays in __getitem__ (in the worker processes)."""
    def __len__(self):
        return 4

    def __getitem__(self, i):
        a = enp.ones(2) * i
        return a, str(a.device)


def test_loader_workers_keep_to_the_cpu_and_batches_reach_the_device(gpu):
    from ember.data import DataLoader
    with ember.default_device(gpu):
        batches = list(DataLoader(_MakesArrays(), batch_size=2, num_workers=2))
    assert [d for b in batches for d in b[1]] == ["cpu:0"] * 4   # no CUDA in forked workers
    assert all(b[0].device == gpu for b in batches)
    assert np.asarray(batches[1][0]).tolist() == [[2.0, 2.0], [3.0, 3.0]]


def test_numpy_conversion_copies_back_and_refuses_copy_false(gpu):
    x = ember.device_put(np.arange(3, dtype=np.int32), gpu)
    h = np.asarray(x)
    assert h.tolist() == [0, 1, 2] and not np.shares_memory(h, x._value)   # a host copy
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="copies it to the host"):
        np.asarray(x, copy=False)


# --- with the real CUDA executable on the host-emulated runtime ----------------------

@pytest.fixture
def exe_gpu():
    """`CudaBackend` with `executable.compile_graph` over the tests' emulated runtime
    (numpy buffers, kernels built by g++): the one-op fallback, jit and grad run the
    executable as they do on a GPU."""
    import shutil
    if shutil.which("g++") is None:
        pytest.skip("no g++ for the host emulation")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from emulated_runtime import EmulatedRuntime
    from ember.backends.cuda.executable import compile_graph
    rt = EmulatedRuntime()

    class WithExecutable(cb.CudaBackend):
        name = "cuda-emulated-exe"

        def __init__(self):
            super().__init__(xp=np, compile_graph=lambda g: compile_graph(g, runtime=rt), devices=1)

    base.register_backend("cuda-emulated-exe", WithExecutable)
    yield base.get_backend("cuda-emulated-exe").devices()[0], rt
    base._FACTORIES.pop("cuda-emulated-exe", None)
    base._BACKENDS.pop("cuda-emulated-exe", None)


def test_fallback_jit_and_grad_through_the_cuda_executable(exe_gpu):
    dev, rt = exe_gpu
    a = np.array([3.0, 1.0, -2.0, 0.5], np.float32)
    x = ember.device_put(a, dev)
    s = enp.sort(x)                                   # no eager rule: a one-op program
    assert s.device == dev and np.asarray(s).tolist() == sorted(a.tolist())
    out = ember.jit(lambda v: enp.tanh(v * 2 + 1).sum())(x)
    assert out.device == dev
    np.testing.assert_allclose(float(out), np.tanh(a * 2 + 1).sum(), rtol=1e-5)
    g = ember.jit(ember.grad(lambda v: (enp.sin(v) ** 2).sum()))(x)
    np.testing.assert_allclose(np.asarray(g), np.sin(2 * a), rtol=1e-5, atol=1e-6)
    assert rt.launches > 0


def test_train_step_through_the_cuda_executable(exe_gpu):
    from ember import optim
    dev, _ = exe_gpu
    _, got, want = _cpu_and_device_losses(dev, lambda m: optim.SGD(m, lr=0.1), 4, 3)
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_bfloat16_kept_as_bits_reads_back_as_bfloat16(gpu):
    # what the executable returns for bfloat16 on a CuPy without bfloat16 arrays
    from ember.fx.core import AbstractArray
    vals = np.array([1.0, -2.5, np.inf], np.dtype("bfloat16"))
    a = wrap_buffer(vals.view(np.uint16), gpu, AbstractArray((3,), np.dtype("bfloat16")))
    back = np.asarray(a)
    assert back.dtype == np.dtype("bfloat16") and back.astype(np.float32).tolist() == [1.0, -2.5, np.inf]
