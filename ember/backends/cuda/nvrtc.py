"""Compile CUDA C with NVRTC through `cuda.bindings.nvrtc`, with no GPU or driver:
the check that every rendered kernel compiles (CI has no GPU).

Needs the `cuda-check` extra (`cuda-bindings`, `nvidia-cuda-nvrtc`,
`nvidia-cuda-runtime`); the headers (`cuda_fp16.h`, `cuda_bf16.h`) come from
`nvidia-cuda-runtime`, whose CUDA 13 wheel installs them under
`site-packages/nvidia/cu13/include` (CUDA 12's wheels used
`nvidia/cuda_runtime/include`; `nvidia` is a namespace package, so the
directory is found through `nvidia.__path__`, never `nvidia.__file__`, which is
None).  NVRTC is told that path with `-I`: it has no default include path.

Example::

    ptx = compile_cuda('extern "C" __global__ void k(float* x) { x[0] = 1.0f; }')
    ptx.startswith(b"//")      # PTX text for sm_90
"""
from __future__ import annotations

import glob
import os

# the flags of the compile check (as CuPy's RawModule compiles): flushing float32
# subnormals (-ftz=true) is what a launch with CuPy's defaults gets; kernels that
# must match the CPU bit for bit on subnormals are compiled with -ftz=false
DEFAULT_OPTIONS = ("-ftz=true", "--device-as-default-execution-space", "-std=c++17")


class NvrtcError(RuntimeError):
    """NVRTC rejected a source (the message holds its log), or is not installed."""


def cuda_include_dir() -> str:
    """The directory holding `cuda_fp16.h` from the `nvidia-cuda-runtime` wheel.

    Example::

        os.path.exists(os.path.join(cuda_include_dir(), "cuda_bf16.h"))   # True
    """
    try:
        import nvidia
    except ImportError:
        nvidia = None
    roots = list(getattr(nvidia, "__path__", [])) if nvidia is not None else []
    for root in roots:
        for pattern in ("cu*/include", "cuda_runtime/include", "*/include"):
            for d in sorted(glob.glob(os.path.join(root, pattern))):
                if os.path.exists(os.path.join(d, "cuda_fp16.h")):
                    return d
    raise NvrtcError("the CUDA headers (cuda_fp16.h) were not found: install the cuda-check extra "
                     "(pip install -e '.[cuda-check]', which brings nvidia-cuda-runtime==13.0.*)")


def _check(result, what, log=None):
    err = result[0] if isinstance(result, tuple) else result
    from cuda.bindings import nvrtc
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        msg = f"NVRTC {what} failed: {err.name}"
        raise NvrtcError(msg + (f"\n{log}" if log else ""))
    return result[1:] if isinstance(result, tuple) else ()


def compile_cuda(source: str, arch: str = "sm_90", options=DEFAULT_OPTIONS, name: str = "ember.cu") -> bytes:
    """PTX for `source` compiled for `arch` with `options`; a compile error
    raises `NvrtcError` with NVRTC's log (file:line: error) and the hint to
    read it against the rendered source.

    Example::

        compile_cuda(render_program(schedule(g, cuda_target())).source)
    """
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise NvrtcError("cuda.bindings is not installed: pip install -e '.[cuda-check]'") from e
    opts = [f"--gpu-architecture={arch}".encode(), f"-I{cuda_include_dir()}".encode()]
    opts += [o.encode() for o in options]
    (prog,) = _check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []), "create")
    try:
        err = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]
        (size,) = _check(nvrtc.nvrtcGetProgramLogSize(prog), "log size")
        log = b" " * size
        _check(nvrtc.nvrtcGetProgramLog(prog, log), "log")
        log = log.decode(errors="replace").rstrip("\x00 \n")
        if err == nvrtc.nvrtcResult.NVRTC_ERROR_INVALID_OPTION:
            raise NvrtcError(f"NVRTC rejected the options {[o.decode() for o in opts]}: {log}\n"
                             f"hint: arch is an sm_XY name such as 'sm_90'; options are NVRTC flags")
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise NvrtcError(f"NVRTC could not compile {name} for {arch} ({err.name}); its log, whose "
                             f"line numbers are those of the rendered source:\n{log}")
        (size,) = _check(nvrtc.nvrtcGetPTXSize(prog), "PTX size")
        ptx = b" " * size
        _check(nvrtc.nvrtcGetPTX(prog, ptx), "PTX")
        return ptx.rstrip(b"\x00")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
