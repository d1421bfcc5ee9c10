"""Arrays, eager ops, interop and the shim on a real GPU (marked `gpu`: skips
cleanly without CuPy or a device).  Eager results are compared with numpy: exact
ops bitwise, CUDA's libm within a few ulps."""
import numpy as np
import pytest

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy")
from ember.backends.cuda.backend import device_count  # noqa: E402

if device_count() < 1:
    pytest.skip("no CUDA device", allow_module_level=True)

import ember  # noqa: E402
import ember.numpy as enp  # noqa: E402


def _has_executable():
    try:
        import ember.backends.cuda.executable  # noqa: F401
    except ImportError:
        return False
    return True


needs_executable = pytest.mark.skipif(not _has_executable(), reason="no CUDA executable in this checkout")


@pytest.fixture
def gpu():
    return ember.devices("cuda")[0]


def test_devices_and_default(gpu):
    assert str(gpu) == "cuda:0"
    assert ember.devices() == ember.devices("cuda")   # the default backend is the GPU's
    assert ember.default_device() == gpu
    assert enp.zeros(3).device == gpu
    with ember.default_device("cpu"):
        assert enp.zeros(3).device == ember.devices("cpu")[0]


def test_device_put_round_trip(gpu):
    for dt in ("float32", "float16", "int8", "bool", "float64", "complex64"):
        host = (np.arange(12) % 3).astype(dt).reshape(3, 4)
        x = ember.device_put(host, gpu)
        assert x.device == gpu and isinstance(x._value, cp.ndarray)
        np.testing.assert_array_equal(np.asarray(x), host)
        back = x.to_device("cpu")
        assert back.device == ember.devices("cpu")[0] and back.dtype == host.dtype


def test_eager_ops_match_numpy_without_host_round_trips(gpu):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 32)).astype(np.float32)
    b = rng.standard_normal((32, 16)).astype(np.float32)
    x, y = ember.device_put(a, gpu), ember.device_put(b, gpu)
    out = (x * 2 - 1) / 3
    assert isinstance(out._value, cp.ndarray)
    np.testing.assert_array_equal(np.asarray(out), (a * 2 - 1) / 3)
    np.testing.assert_allclose(np.asarray(enp.tanh(x)), np.tanh(a), rtol=4e-7, atol=1e-7)
    np.testing.assert_allclose(np.asarray(x @ y), a @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(x.sum(axis=0)), a.sum(0), rtol=1e-5, atol=1e-5)
    i = ember.device_put(np.array([7, -7, 5, 0], np.int32), gpu)
    j = ember.device_put(np.array([2, 2, 0, 0], np.int32), gpu)
    assert np.asarray(ember.lax.div(i, j)).tolist() == [3, -3, -1, -1]
    z = ember.device_put(np.array([-0.0, 0.0, np.nan], np.float32), gpu)
    m = np.asarray(enp.maximum(z, -z))
    assert not np.signbit(m[0]) and not np.signbit(m[1]) and np.isnan(m[2])


@needs_executable
def test_fallback_and_jit_on_the_gpu(gpu):
    a = np.random.default_rng(1).standard_normal(100).astype(np.float32)
    x = ember.device_put(a, gpu)
    np.testing.assert_array_equal(np.asarray(enp.sort(x)), np.sort(a))
    f = ember.jit(lambda v: enp.tanh(v * 2 + 1).sum())
    out = f(x)
    assert out.device == gpu
    np.testing.assert_allclose(float(out), np.tanh(a * 2 + 1).sum(), rtol=1e-4)
    g = ember.jit(ember.grad(lambda v: (enp.sin(v) ** 2).sum()))(x)
    np.testing.assert_allclose(np.asarray(g), np.sin(2 * a), rtol=1e-4, atol=1e-5)


def test_dlpack_with_cupy_is_zero_copy(gpu):
    c = cp.arange(6, dtype=cp.float32)
    e = ember.from_dlpack(c, copy=False)
    assert e.device == gpu and int(e._value.data.ptr) == int(c.data.ptr)
    back = cp.from_dlpack(e)
    assert int(back.data.ptr) == int(c.data.ptr)
    assert e.__dlpack_device__()[0] == 2
    view = cp.asarray(e)   # through __cuda_array_interface__
    assert int(view.data.ptr) == int(c.data.ptr)
    copied = ember.from_dlpack(c)
    assert int(copied._value.data.ptr) != int(c.data.ptr)
    assert not hasattr(ember.device_put(enp.ones(2), "cpu"), "__cuda_array_interface__")


def test_dlpack_with_torch(gpu):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    t = torch.arange(5, dtype=torch.float32, device="cuda")
    e = ember.from_dlpack(t, copy=False)
    assert e.device == gpu and np.asarray(e).tolist() == [0, 1, 2, 3, 4]
    back = torch.from_dlpack(e)
    assert back.data_ptr() == t.data_ptr()
    assert torch.as_tensor(e, device="cuda").data_ptr() == t.data_ptr()


@needs_executable
def test_module_to_cuda_and_train_step(gpu):
    from ember import nn, optim
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1)).cuda()
    assert all(p.device == gpu for p in ember.tree.tree_leaves(model.parameters()))
    step = nn.TrainStep(model, optim.Adam(model, lr=1e-2), lambda m, x, y: nn.functional.mse_loss(m(x), y))
    x = ember.device_put(np.ones((32, 4), np.float32), gpu)
    y = ember.device_put(np.zeros((32, 1), np.float32), gpu)
    losses = [float(step(x, y)) for _ in range(10)]
    assert losses[-1] < losses[0]
    model.cpu()
    assert all(p.device == ember.devices("cpu")[0] for p in ember.tree.tree_leaves(model.parameters()))


def test_save_load_of_gpu_arrays(gpu, tmp_path):
    w = ember.device_put(np.arange(6, dtype=np.float32).reshape(2, 3), gpu)
    p = str(tmp_path / "w.safetensors")
    ember.save(p, {"w": w})
    assert ember.load(p)["w"].device == gpu
    back = ember.load(p, device="cpu")["w"]
    assert back.device == ember.devices("cpu")[0]
    np.testing.assert_array_equal(np.asarray(back), np.asarray(w))


def test_pin_memory_gives_pinned_batches(gpu):
    from ember.data import ArrayDataset, DataLoader
    from ember.data.pin import pinned_allocator
    alloc = pinned_allocator()
    assert alloc is not None
    buf = alloc((4,), np.float32)
    assert cp.cuda.runtime.pointerGetAttributes(buf.ctypes.data).type == cp.cuda.runtime.memoryTypeHost
    batches = list(DataLoader(ArrayDataset(np.arange(8.0, dtype=np.float32)), batch_size=4, pin_memory=True))
    assert [np.asarray(b[0]).tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_random_is_bit_identical_to_the_cpu(gpu):
    with ember.default_device("cpu"):
        want = np.asarray(ember.random.normal(ember.random.key(3), (16,)))
    got = ember.random.normal(ember.device_put(ember.random.key(3), gpu), (16,))
    assert got.device == gpu
    np.testing.assert_array_equal(np.asarray(got), want)
