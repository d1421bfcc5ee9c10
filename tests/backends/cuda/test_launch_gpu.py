"""Rendered CUDA kernels launched through CuPy against the numpy reference
(marked `gpu`: skips without CuPy or a device).  ember has no CUDA executable
yet, so the test launches a program's kernels itself: one CuPy array per
buffer, the kernels in program order with their launch records; programs with
a cuBLAS product or a library step are left out.  Exact operations must match
bitwise (compiled with -ftz=false so float32 subnormals survive, as on the
CPU); transcendentals, sums and products within test_native_vs_reference's
tolerances."""
import os
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy")
try:
    if cp.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("no CUDA device", allow_module_level=True)
except Exception as e:  # CuPy without a driver raises CUDARuntimeError
    pytest.skip(f"no CUDA device ({type(e).__name__})", allow_module_level=True)

from ember.backends.cuda.render import render_program  # noqa: E402
from ember.backends.cuda.target import cuda_target  # noqa: E402
from ember.backends.kernels import GemmKernel, LibraryStep, schedule  # noqa: E402
from ember.fx.interpreter import run_graph_numpy  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import test_native_vs_reference as nvr  # noqa: E402
from corpus import N_FUZZ, fuzz_programs, primitive_programs  # noqa: E402



def _options():
    # C++17 is NVRTC's default dialect and every rendered function says
    # __device__, so only -ftz=false and, where the wheel is there, its headers
    from ember.backends.cuda.nvrtc import NvrtcError, cuda_include_dir
    try:
        return ("-ftz=false", f"-I{cuda_include_dir()}")
    except NvrtcError:
        return ("-ftz=false",)


OPTIONS = _options()
INEXACT = tuple(nvr.TRANSCENDENTAL) + ("reduce_sum", "reduce_prod", "softmax", "integer_pow", "div", "rem",
                                       "sqrt", "fuzz")


def launch(closed, args):
    """Run a scheduled program's kernels on the GPU; None when it has steps that
    are not kernels of the CUDA module."""
    prog = schedule(closed, cuda_target())
    if any(isinstance(s, (GemmKernel, LibraryStep)) for s in prog.steps):
        return None
    mod = render_program(prog)
    module = cp.RawModule(code=mod.source, options=OPTIONS)
    bufs = [cp.zeros(b.shape, b.dtype) for b in prog.buffers]
    for bid, value in prog.consts:
        bufs[bid][...] = cp.asarray(np.asarray(value))
    for bid, a in zip(prog.inputs, args):
        bufs[bid][...] = cp.asarray(np.asarray(a))
    for k in mod.kernels:
        if k.grid:
            module.get_function(k.name)((k.grid,), (k.block,), tuple(bufs[b] for b in k.params))
    cp.cuda.Device().synchronize()
    return [np.asarray(o[1]) if type(o) is tuple else cp.asnumpy(bufs[o]) for o in prog.outputs]


def _cases():
    return primitive_programs() + fuzz_programs(N_FUZZ)


def test_rendered_kernels_match_the_reference_on_the_gpu():
    ran = 0
    for label, (closed, args) in _cases():
        args = [np.asarray(a) for a in args]
        with np.errstate(all="ignore"):
            got = launch(closed, args)
            if got is None:
                continue
            ref = run_graph_numpy(closed.graph, closed.consts_as_buffers(), args)
        ran += 1
        try:
            nvr.assert_same(got, ref, transcendental=any(w in label for w in INEXACT))
        except AssertionError as e:
            raise AssertionError(f"{label}: {e}") from None
    assert ran > 500
