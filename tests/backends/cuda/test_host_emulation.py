"""The values of rendered CUDA kernels, without a GPU: the corpus's programs whose
steps are all kernels of the CUDA module run through host_emulation (the CUDA
source compiled by g++ against a shim, one emulated thread) and must match the
numpy reference as the LLVM backend must (test_native_vs_reference.assert_same:
exact operations bitwise, NaN positions and zero signs included;
transcendentals, sums and products within its tolerances).  This checks the op
table, conversions, the device helpers and the loop/index structure; the warp
shuffles, atomics under contention and CUDA's own math library need the GPU
test (test_launch_gpu.py)."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_emulation as he  # noqa: E402

if not he.available():
    pytest.skip("no g++ for the host emulation", allow_module_level=True)

from corpus import fuzz_programs, nvr, primitive_programs  # noqa: E402,F401
from ember.backends.cuda.render import render_program  # noqa: E402
from ember.backends.cuda.target import cuda_target  # noqa: E402
from ember.backends.kernels import GemmKernel, LibraryStep, schedule  # noqa: E402
from ember.fx.interpreter import run_graph_numpy  # noqa: E402

BATCH = 80
INEXACT = tuple(nvr.TRANSCENDENTAL) + ("reduce_sum", "reduce_prod", "softmax", "fuzz", "sqrt")


def _runnable(cases):
    target = cuda_target()
    out = []
    for j, (label, (closed, args)) in enumerate(cases):
        prog = schedule(closed, target)
        if any(isinstance(s, (GemmKernel, LibraryStep)) for s in prog.steps):
            continue
        mod = render_program(prog, prefix=f"p{j}_")
        if "erfinvf(" in mod.functions:
            continue
        out.append((label, closed, [np.asarray(a) for a in args], prog, mod))
    return out


def _check(cases):
    runnable = _runnable(cases)
    checked = 0
    for s in range(0, len(runnable), BATCH):
        batch = runnable[s:s + BATCH]
        lib = he.build("\n".join(m.functions for *_, m in batch))
        for label, closed, args, prog, mod in batch:
            with np.errstate(all="ignore"):
                got = he.run_on_host(lib, prog, mod, args)
                ref = run_graph_numpy(closed.graph, closed.consts_as_buffers(), args)
            try:
                nvr.assert_same(got, ref, transcendental=any(w in label for w in INEXACT))
            except AssertionError as e:
                raise AssertionError(f"{label}\n--- kernels ---\n{mod.functions}\n{e}") from None
            checked += 1
    return checked


def test_per_primitive_kernels_match_the_reference():
    assert _check(primitive_programs()) > 600


def test_random_fused_programs_match_the_reference():
    assert _check(fuzz_programs(60)) > 30
