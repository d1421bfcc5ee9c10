"""The device runtime a `CudaExecutable` runs on: the few operations a compiled
program needs from a GPU, behind one small interface, so that the executable
(executable.py) is the same code whether the buffers live on an NVIDIA GPU
(`CupyRuntime`, the real backend) or in host memory with the kernels compiled
by g++ (the test suite's host-emulation runtime, tests/backends/cuda/).

`DeviceRuntime` (the interface):
  empty(shape, dtype) / asarray(x)      a device buffer (asarray: no copy when it is one)
  arena(nbytes) / view(arena, off, shape, dtype)   one allocation carved into buffers
  in_arena(buffer, arena)               whether a buffer is (a view of) that allocation
  to_device(host) / to_host(buffer, dtype)   copies in / out
  load_module(cuda_module) -> {kernel name: handle}   (inside `with rt.batch():`
                                        many modules are compiled as one)
  launch(handle, grid, block, args)     one kernel over device buffers
  gemm(a, b, out)                       out[...] = a @ b (batched, broadcasting views)
  library_namespace                     a numpy-like module over device buffers (cupy)
  synchronize()

CuPy is imported only inside `CupyRuntime`, when one is made.

Example:
    >>> issubclass(CupyRuntime, DeviceRuntime)
    True
"""
from __future__ import annotations

import contextlib
import dataclasses

import numpy as np

from ... import dtypes as _dt

_HALF = (np.dtype(np.float16), np.dtype(_dt.bfloat16))


class DeviceRuntime:
    """The interface (see the module docstring); every method is overridden by
    an implementation.  `name` appears in error messages.

    Example:
        >>> DeviceRuntime.name
        'device'
    """
    name = "device"
    # a numpy-compatible namespace over device buffers (library steps use it)
    library_namespace = np

    def empty(self, shape, dtype):
        """A new uninitialised device buffer."""
        raise TypeError(f"{type(self).__name__} does not implement empty()")

    def asarray(self, x):
        """`x` as a device buffer (no copy when it already is one)."""
        raise TypeError(f"{type(self).__name__} does not implement asarray()")

    def arena(self, nbytes: int):
        """One device allocation of `nbytes` bytes (uint8)."""
        return self.empty((max(int(nbytes), 1),), np.uint8)

    def view(self, arena, offset: int, shape, dtype):
        """A buffer of `shape`/`dtype` inside `arena` at byte `offset`."""
        raise TypeError(f"{type(self).__name__} does not implement view()")

    def in_arena(self, buf, arena) -> bool:
        """Whether `buf` lies in (a view of) `arena`'s memory."""
        return isinstance(buf, np.ndarray) and np.may_share_memory(buf, arena)

    def to_device(self, host):
        """A device copy of a host (numpy) array."""
        raise TypeError(f"{type(self).__name__} does not implement to_device()")

    def to_host(self, buf, dtype=None) -> np.ndarray:
        """A host (numpy) copy of a device buffer (`dtype`: the buffer's logical
        dtype, for a runtime that stores some dtype as another's bits)."""
        raise TypeError(f"{type(self).__name__} does not implement to_host()")

    def load_module(self, module) -> dict:
        """Compile a `render.CudaModule` once; {kernel name: launch handle}.
        Inside `batch()` the dict is filled when the batch ends."""
        handles: dict = {}
        pending = getattr(self, "_pending", None)
        if pending is not None:
            pending.append((module, handles))
        else:
            self._load_into([(module, handles)])
        return handles

    @contextlib.contextmanager
    def batch(self):
        """Compile every module loaded inside as one translation unit when the
        block ends (each program's kernels renamed apart): one compiler run for
        many small programs (the test suites').  Executables made inside must
        not be called before it ends.

        Example:
            >>> rt = DeviceRuntime()
            >>> with rt.batch():
            ...     pass
        """
        self._pending = []
        try:
            yield self
        finally:
            pending, self._pending = self._pending, None
            if pending:
                self._load_into(pending)

    def _load_into(self, pending):
        if len(pending) == 1:
            module, handles = pending[0]
            handles.update(self._load_functions(module.functions, list(module.kernels)))
            return
        self._batches = getattr(self, "_batches", 0) + 1
        texts, kernels, renames = [], [], []
        for j, (module, handles) in enumerate(pending):
            text, ren = module.functions, {}
            for k in module.kernels:
                new = f"m{self._batches}_{j}_{k.name}"
                # a kernel's name occurs once in its module: in its signature
                assert text.count(f" {k.name}(") == 1, k.name
                text = text.replace(f" {k.name}(", f" {new}(")
                ren[k.name] = new
                kernels.append(dataclasses.replace(k, name=new))
            texts.append(text)
            renames.append((handles, ren))
        loaded = self._load_functions("\n".join(texts), kernels)
        for handles, ren in renames:
            handles.update({old: loaded[new] for old, new in ren.items()})
            handles["__module__"] = loaded.get("__module__")

    def _load_functions(self, functions: str, kernels: list) -> dict:
        """Compile kernel functions (a module's `functions`, after the prelude);
        {kernel name: handle} for `kernels` (their `CudaKernel` records)."""
        raise TypeError(f"{type(self).__name__} does not implement _load_functions()")

    def launch(self, handle, grid: int, block: int, args: tuple):
        """Run one kernel on `grid` blocks of `block` threads over device buffers."""
        raise TypeError(f"{type(self).__name__} does not implement launch()")

    def gemm(self, a, b, out):
        """out[...] = a @ b for device views (batch dims broadcast; half precision
        accumulates in float32 and rounds once, as the reference)."""
        raise TypeError(f"{type(self).__name__} does not implement gemm()")

    def synchronize(self):
        """Wait for the device's queued work."""


def round_trip_gemm(xp, a, b, out):
    """The gemm of a runtime whose namespace `xp` has `matmul`: half precision
    widened exactly to float32 (what the reference computes), others as they
    are; written into `out` (a view, possibly strided).

    Example:
        >>> a = np.ones((2, 3), np.float16); out = np.empty((2, 2), np.float16)
        >>> round_trip_gemm(np, a, np.ones((3, 2), np.float16), out).tolist()
        [[3.0, 3.0], [3.0, 3.0]]
    """
    d = np.dtype(out.dtype)
    if a.shape[-1] == 0:   # an empty contraction: zeros (no library call on empty operands)
        out[...] = 0
    elif d in _HALF:
        res = xp.matmul(a.astype(np.float32), b.astype(np.float32)).astype(d)
        out[...] = res
    elif out.flags.c_contiguous and a.ndim == out.ndim == b.ndim:
        xp.matmul(a, b, out=out)
    else:
        out[...] = xp.matmul(a, b)
    return out


def bf16_bits_gemm(xp, a_bits, b_bits):
    """The bfloat16 product of operands given as their uint16 bits, as bits:
    widened exactly to float32 (bits << 16), multiplied in float32, rounded
    once to nearest even (a NaN stays a quiet NaN): the reference's arithmetic,
    for a namespace that has no bfloat16 arrays.

    Example:
        >>> one = np.full((1, 2), 0x3f80, np.uint16)             # bfloat16 1.0
        >>> hex(int(bf16_bits_gemm(np, one, one.T)[0, 0]))       # 1*1 + 1*1 = 2.0
        '0x4000'
    """
    a32 = (a_bits.astype(np.uint32) << 16).view(np.float32)
    b32 = (b_bits.astype(np.uint32) << 16).view(np.float32)
    c = xp.matmul(a32, b32).view(np.uint32)
    nan = (c & 0x7fffffff) > 0x7f800000
    rounded = ((c + 0x7fff + ((c >> 16) & 1)) >> 16).astype(np.uint16)
    return xp.where(nan, ((c >> 16) | 0x40).astype(np.uint16), rounded)


class CupyRuntime(DeviceRuntime):
    """The real backend: CuPy arrays as buffers on the current device, kernels
    compiled by NVRTC into PTX cached on disk (module_cache.py: keyed by source,
    arch, options, NVRTC and ember versions) and loaded by `cupy.RawModule`
    (an identical module is loaded once per process), products through
    cuBLAS (`cupy.matmul`), library steps through CuPy's functions.

    Example::

        rt = CupyRuntime()
        buf = rt.to_device(np.ones(3, np.float32))
    """
    name = "cuda (CuPy)"
    # DESIGN.md 6: what RawModule passes; no denormal flush, so float32
    # subnormals survive as on the CPU (-ftz=false)
    OPTIONS = ("-ftz=false", "--device-as-default-execution-space", "-std=c++17")
    _modules: dict = {}

    def __init__(self):
        import cupy  # noqa: PLC0415 - CuPy only when a GPU runtime is made
        self.cp = cupy
        self.library_namespace = cupy
        try:
            cupy.empty(1, _dt.bfloat16)
            self._bf16 = np.dtype(_dt.bfloat16)
        except Exception:  # noqa: BLE001 - a CuPy without bfloat16 arrays: keep the bits
            self._bf16 = np.dtype(np.uint16)

    def _storage(self, dtype):
        d = np.dtype(dtype)
        return self._bf16 if d == _dt.bfloat16 else d

    def empty(self, shape, dtype):
        return self.cp.empty(tuple(shape), self._storage(dtype))

    def asarray(self, x):
        if isinstance(x, self.cp.ndarray):
            return x if x.flags.c_contiguous else self.cp.ascontiguousarray(x)
        return self.to_device(np.asarray(x))

    def view(self, arena, offset, shape, dtype):
        return self.cp.ndarray(tuple(shape), self._storage(dtype), memptr=arena.data + int(offset))

    def in_arena(self, buf, arena):
        # views made with memptr= have no .base; they share the allocation object
        data = getattr(buf, "data", None)
        return getattr(data, "mem", None) is arena.data.mem

    def to_device(self, host):
        h = np.ascontiguousarray(host)
        if h.dtype == _dt.bfloat16 and self._bf16 != h.dtype:
            h = h.view(np.uint16)
        return self.cp.asarray(h)

    def to_host(self, buf, dtype=None):
        h = self.cp.asnumpy(buf)
        if dtype is not None and np.dtype(dtype) == _dt.bfloat16 and h.dtype == np.uint16:
            h = h.view(_dt.bfloat16)
        return h

    def _load_functions(self, functions, kernels):
        """Compile through module_cache (NVRTC with -ftz=false, PTX cached on
        disk) and load the PTX; without cuda.bindings, or if the driver rejects
        that PTX, CuPy's own compile (which adds -ftz=true: float32 subnormals
        flush to zero in those kernels)."""
        from .prelude import PRELUDE  # noqa: PLC0415
        dev = self.cp.cuda.Device()
        source = PRELUDE + "\n" + functions
        key = (source, dev.id)
        raw = self._modules.get(key)
        if raw is None:
            raw = self._modules[key] = self._compile(source, f"sm_{dev.compute_capability}")
        out = {k.name: raw.get_function(k.name) for k in kernels}
        out["__module__"] = raw
        return out

    def _compile(self, source, arch):
        from . import module_cache  # noqa: PLC0415
        from .nvrtc import NvrtcError, cuda_include_dir  # noqa: PLC0415
        try:
            path = module_cache.compiled_ptx_path(source, arch)
        except ImportError:
            path = None
        if path is not None:
            try:
                return self.cp.RawModule(path=path)
            except Exception:  # noqa: BLE001 - a driver older than this NVRTC's PTX: CuPy compiles
                pass
        options = self.OPTIONS
        try:
            options = options + (f"-I{cuda_include_dir()}",)
        except NvrtcError:
            pass   # CuPy's own CUDA headers
        return self.cp.RawModule(code=source, options=options)

    def launch(self, handle, grid, block, args):
        handle((grid,), (block,), args)

    def gemm(self, a, b, out):
        cp = self.cp
        if np.dtype(out.dtype) == np.uint16 and a.shape[-1]:   # bfloat16 kept as its bits
            out[...] = bf16_bits_gemm(cp, a, b)
            return out
        return round_trip_gemm(cp, a, b, out)

    def synchronize(self):
        self.cp.cuda.get_current_stream().synchronize()


def default_runtime() -> DeviceRuntime:
    """The runtime of the current CUDA device (CuPy); a clear error without one.

    Example::

        rt = default_runtime()      # RuntimeError on a machine without CuPy or a GPU
    """
    try:
        rt = CupyRuntime()
        n = rt.cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - no CuPy, no driver, no device
        raise RuntimeError(f"the CUDA backend needs CuPy and an NVIDIA GPU ({type(e).__name__}: {e}); "
                           "hint: pip install cupy-cuda13x, or compile for the CPU backend "
                           "(jit(..., backend='cpu'))") from None
    if n < 1:
        raise RuntimeError("the CUDA backend found no CUDA device; hint: use the CPU backend (backend='cpu')")
    return rt
