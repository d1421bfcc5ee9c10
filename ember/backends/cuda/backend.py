"""The `cuda` backend: CuPy arrays on NVIDIA GPUs.

Devices `cuda:0 .. cuda:n-1` are the GPUs CuPy sees (`getDeviceCount()`, asked
once; a missing CuPy, driver or device means none, and `unavailable_reason()`
says which).  Buffers are CuPy arrays on their device.  Eager operations run as
CuPy calls through the table of `eager.py` (no host round trip); a primitive
without a rule, or operands a rule declines, runs as a one-op program compiled by
`executable.compile_graph`, cached per (primitive, operand types, params).
`compile` hands whole jitted graphs to the same `compile_graph`.

CuPy is imported only when this backend is first asked for its devices.
`gpu_may_be_present()` is the cheap check that `ember.default_device()` makes
first, without importing CuPy: CuPy installed, `CUDA_VISIBLE_DEVICES` not empty,
and an NVIDIA device node (`/dev/nvidia0`, or `/dev/dxg` under WSL).

Example:
    >>> from ember.backends.base import get_backend
    >>> b = get_backend("cuda")
    >>> b.name, b.host_buffers
    ('cuda', False)
"""
from __future__ import annotations

import contextlib
import glob
import importlib.util
import os

import numpy as np

from ... import dtypes as _dt
from ...fx.core import AbstractArray, get_aval
from ..base import Backend, Device
from .eager import NOT_COVERED, run_rule

_COUNT: tuple[int, str | None] | None = None   # (device count, why none), asked once


def gpu_may_be_present() -> bool:
    """Whether a CUDA GPU could be usable, decided without importing CuPy: CuPy is
    installed, `CUDA_VISIBLE_DEVICES` does not hide every device, and the NVIDIA
    driver has created a device node.  False means certainly no GPU; True means
    `device_count()` has to ask CuPy.

    Example:
        >>> isinstance(gpu_may_be_present(), bool)
        True
    """
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1", "none", "NoDevFiles"):
        return False
    if importlib.util.find_spec("cupy") is None:
        return False
    return bool(glob.glob("/dev/nvidia[0-9]*")) or os.path.exists("/dev/dxg")


def device_count() -> int:
    """The number of GPUs CuPy sees (0 without CuPy, a driver or a device); asked once.

    Example:
        >>> device_count() >= 0
        True
    """
    global _COUNT
    if _COUNT is None:
        try:
            import cupy
        except ImportError as e:
            _COUNT = (0, f"CuPy is not installed ({e})")
        else:
            try:
                n = int(cupy.cuda.runtime.getDeviceCount())
                _COUNT = (n, None if n else "CuPy sees no CUDA device")
            except Exception as e:  # CUDARuntimeError: no driver, insufficient driver, no device
                _COUNT = (0, f"CuPy found no usable CUDA device: {e}")
    return _COUNT[0]


class CudaBackend(Backend):
    """Eager ops as CuPy calls, jit through `executable.compile_graph`.

    `xp` and `compile_graph` default to CuPy and the CUDA executable; the tests
    pass numpy and the reference interpreter to run this class's dispatch (operand
    conversion, table, one-op fallback and its cache) on a machine without a GPU.

    Example:
        >>> import numpy as np
        >>> from ember.fx.prims.elementwise import mul_p
        >>> b = CudaBackend(xp=np, compile_graph=lambda g: None, devices=1)
        >>> d = b.devices()[0]
        >>> str(d), b.execute(mul_p, [np.arange(3.0), 2.0], {}, d).tolist()
        ('cuda:0', [0.0, 2.0, 4.0])
    """
    name = "cuda"
    platform = "cuda"
    host_buffers = False

    def __init__(self, xp=None, compile_graph=None, devices: int | None = None):
        self._xp = xp
        self._compile_graph = compile_graph
        self._n = devices
        self._devices = None
        self._one_op_cache: dict = {}
        self._scalars: dict = {}
        self._scalar_ptrs: set = set()   # device addresses of the cached literals

    # --- devices -------------------------------------------------------------------
    @property
    def xp(self):
        """The array module of the buffers (CuPy, imported here on first use)."""
        if self._xp is None:
            import cupy
            self._xp = cupy
        return self._xp

    def devices(self) -> list[Device]:
        if self._devices is None:
            n = device_count() if self._n is None else self._n
            self._devices = [Device(self.platform, i, self) for i in range(n)]
        return self._devices

    def unavailable_reason(self) -> str | None:
        if self.devices():
            return None
        return _COUNT[1] if _COUNT is not None else None

    def _on(self, device):
        """Make `device` CuPy's current device (only when there are several)."""
        if self._xp is np or device is None or len(self.devices()) < 2:
            return contextlib.nullcontext()
        return self.xp.cuda.Device(device.id)

    # --- buffers -------------------------------------------------------------------
    def put(self, value, device):
        value = np.asarray(value)
        try:
            with self._on(device):
                return self.xp.array(value, copy=True)
        except (TypeError, ValueError) as e:
            hint = ("this CuPy has no bfloat16 arrays (CuPy 14 with NumPy >= 2 and ml_dtypes has "
                    "them); use float16/float32 on the GPU, or keep bfloat16 on the CPU"
                    if value.dtype == _dt.bfloat16 else "convert it first (e.g. x.astype('float32'))")
            raise TypeError(f"cannot place an array of {_user_type(value)} on {device}: {e}; "
                            f"{hint}") from None

    def copy_to(self, buffer, device):
        """A copy of a device array on another device of this backend (peer copy)."""
        with self._on(device):
            return self.xp.array(buffer, copy=True)

    def get(self, buffer) -> np.ndarray:
        if isinstance(buffer, np.ndarray):
            return np.array(buffer, copy=True)
        return buffer.get()

    def needs_private_copy(self, buffer) -> bool:
        # besides broadcasts: views of the shared literal cache (`_operand`), which a
        # consumer writing through DLPack would change for every later operation
        if super().needs_private_copy(buffer):
            return True
        ptr = _pointer(buffer)
        return ptr is not None and ptr in self._scalar_ptrs

    def block_until_ready(self, buffer) -> None:
        if self._xp is not np:
            with self._on(_device_of(self, buffer)):
                self.xp.cuda.get_current_stream().synchronize()

    # --- execution -----------------------------------------------------------------
    def _operand(self, v, device):
        """A device array of `v`: device arrays pass through; numpy values and Python
        scalars (the eager literals) are copied over in their abstract dtype."""
        xp = self.xp
        if isinstance(v, xp.ndarray):
            return v
        if not isinstance(v, (np.ndarray, np.generic)):
            v = np.asarray(v, dtype=get_aval(v).dtype)   # a Python float is a float32
        if v.ndim == 0:
            # eager literals (`x * 2.0`) repeat: one copy per (device, dtype, bits), shared
            # afterwards (device arrays are never written, so sharing is safe)
            key = (device.id if device is not None else 0, v.dtype.str, v.tobytes())
            hit = self._scalars.get(key)
            if hit is None:
                if len(self._scalars) > 1024:
                    self._scalars.clear()
                    self._scalar_ptrs.clear()
                with self._on(device):
                    hit = self._scalars[key] = xp.asarray(v)
                ptr = _pointer(hit)
                if ptr is not None:
                    self._scalar_ptrs.add(ptr)
            return hit
        with self._on(device):
            return xp.asarray(v)

    def execute(self, prim, buffers, params, device):
        xp = self.xp
        bufs = [self._operand(b, device) for b in buffers]
        if prim.name == "jit_call" and params.get("backend") == self.name:
            # a nested jitted call: its impl compiles the whole graph for this backend
            return prim.impl(*bufs, **params)
        with self._on(device):
            out = run_rule(xp, prim, bufs, params)
            if out is NOT_COVERED:
                return self._one_op(prim, bufs, params, device)
        return out

    def _one_op(self, prim, bufs, params, device):
        """Run `prim` as a one-equation program compiled for this backend, cached per
        (primitive, operand avals, params)."""
        avals = tuple(AbstractArray(b.shape, _dt.canonicalize(b.dtype)) for b in bufs)
        try:
            key = (prim, avals, tuple(params.items()))
            hash(key)
        except TypeError:  # unhashable params: compile without caching
            key = None
        exe = self._one_op_cache.get(key) if key is not None else None
        if exe is None:
            exe = self.compile(one_op_graph(prim, avals, params), device)
            if key is not None:
                if len(self._one_op_cache) > 4096:
                    self._one_op_cache.clear()
                self._one_op_cache[key] = exe
        outs = exe(*bufs)
        return list(outs) if prim.multiple_results else outs[0]

    def compile(self, closed_graph, device):
        compile_graph = self._compile_graph
        if compile_graph is None:
            # imported here: the CUDA executable (renderer, NVRTC) loads at the first compile
            from .executable import compile_graph
        return compile_graph(closed_graph)


def one_op_graph(prim, avals, params):
    """A ClosedGraph of one equation `prim[params](*inputs)` over inputs of `avals`.

    Example:
        >>> import numpy as np
        >>> from ember.fx.prims.elementwise import sin_p
        >>> g = one_op_graph(sin_p, (AbstractArray((3,), np.dtype("float32")),), {})
        >>> [e.prim.name for e in g.equations], [str(a) for a in g.out_avals]
        (['sin'], ['f32[3]'])
    """
    from ...fx.ir import ClosedGraph, Equation, Graph, Var
    out = prim.abstract_eval(*avals, **params)
    outs = list(out) if prim.multiple_results else [out]
    invars = [Var(a) for a in avals]
    outvars = [Var(a) for a in outs]
    eq = Equation(prim, invars, outvars, dict(params), "")
    return ClosedGraph(Graph([], invars, [eq], outvars), [])


def _device_of(backend, buffer):
    dev = getattr(buffer, "device", None)
    i = getattr(dev, "id", 0)
    devs = backend.devices()
    return devs[i] if i < len(devs) else None


def _pointer(buffer):
    """The device address of a buffer's data (CuPy's `data.ptr`, numpy's for the
    emulated backend in the tests)."""
    data = getattr(buffer, "data", None)
    ptr = getattr(data, "ptr", None)
    if ptr is None and isinstance(buffer, np.ndarray):
        ptr = buffer.__array_interface__["data"][0]
    return ptr


def _user_type(value) -> str:
    return f"{np.dtype(value.dtype).name}{list(value.shape)}"
