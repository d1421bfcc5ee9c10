"""Compiled CUDA modules, cached on disk: PTX from NVRTC (`nvrtc.compile_cuda`,
through cuda.bindings) keyed by source, arch, options, NVRTC version and
ember's version, written atomically, so a program compiles once per machine.

Why our own cache and not `cupy.RawModule(code=...)`'s: CuPy appends
`-ftz=true` to every NVRTC compile, which flushes float32 subnormals, while
ember's kernels keep them (as the CPU backend and the reference do).  The
runtime loads the cached PTX with `cupy.RawModule(path=...)`; where
cuda.bindings is missing it falls back to CuPy's compile (subnormals flushed,
said in its docstring).

Example:
    >>> key = cache_key("extern \\"C\\" __global__ void k() {}", "sm_90", OPTIONS, (13, 0))
    >>> len(key)
    40
"""
from __future__ import annotations

import hashlib
import os
import tempfile

# no denormal flush (bit-exact float32 subnormals), device code by default,
# the dialect the renderer writes
OPTIONS = ("-ftz=false", "--device-as-default-execution-space", "-std=c++17")


def cache_dir() -> str:
    """Where PTX files live: the `cuda` folder of $EMBER_CACHE_DIR (default
    ~/.cache/ember, as the LLVM backend's `llvm` folder; a temporary directory
    if that is not writable).

    Example:
        >>> os.path.isabs(cache_dir())
        True
    """
    base = os.environ.get("EMBER_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "ember")
    d = os.path.join(base, "cuda")
    try:
        os.makedirs(d, exist_ok=True)
    except OSError:
        d = os.path.join(tempfile.gettempdir(), f"ember-cuda-{os.getuid()}")
        os.makedirs(d, exist_ok=True)
    return d


def cache_key(source: str, arch: str, options, nvrtc_version) -> str:
    """The file name stem of a compiled module: a hash of everything that changes the PTX."""
    from ... import __version__ as ember_version
    h = hashlib.sha256()
    for part in (source, arch, "\0".join(options), repr(tuple(nvrtc_version)), str(ember_version)):
        h.update(part.encode())
        h.update(b"\1")
    return h.hexdigest()[:40]


def nvrtc_version() -> tuple:
    """(major, minor) of the NVRTC that cuda.bindings loads."""
    from cuda.bindings import nvrtc
    err, major, minor = nvrtc.nvrtcVersion()
    return int(major), int(minor)


def compiled_ptx_path(source: str, arch: str, options=OPTIONS) -> str:
    """The path of `source`'s PTX for `arch`, compiling it on a miss (NvrtcError
    with NVRTC's log on a compile error; ImportError without cuda.bindings)."""
    from .nvrtc import compile_cuda
    version = nvrtc_version()
    path = os.path.join(cache_dir(), cache_key(source, arch, options, version) + ".ptx")
    if os.path.exists(path):
        return path
    ptx = compile_cuda(source, arch=arch, options=options)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(ptx)
        os.replace(tmp, path)   # atomic: a concurrent reader sees all or nothing
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
