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
from hypothesis import given, settings, strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_emulation as he  # noqa: E402

if not he.available():
    pytest.skip("no g++ for the host emulation", allow_module_level=True)

from corpus import N_FUZZ, fuzz_programs, nvr, primitive_programs  # noqa: E402
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
    assert _check(fuzz_programs(N_FUZZ)) > 100


_DTYPES = [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16), nvr.BF16, np.dtype(np.int32),
           np.dtype(np.int8), np.dtype(np.uint16), np.dtype(bool)]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=1, max_size=3), st.integers(0, 200), st.data(),
       st.sampled_from(["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"]), st.sampled_from(_DTYPES))
def test_reductions_of_any_shape_and_axes_match_the_reference(dims, last, data, op, dtype):
    # the last extent up to 200 crosses MIN_BLOCK_ROW: both the block-per-output
    # and the thread-per-output strategies, reduced axes innermost or not
    import ember
    from ember import lax
    shape = tuple(dims[:-1]) + (last,)
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))
    if dtype == np.dtype(bool):
        op = {"reduce_sum": "reduce_or", "reduce_prod": "reduce_and"}.get(op, op)
    x = nvr._data(dtype, shape, np.random.default_rng(len(shape) * 1000 + last), special=op != "reduce_prod")
    if op == "reduce_prod" and dtype.kind == "f" or dtype == nvr.BF16 and op == "reduce_prod":
        x = (np.abs(x.astype(np.float64)) * 0.1 + 0.95).astype(dtype)
    closed = ember.make_graph(lambda v: getattr(lax, op)(v, axes))(x)
    assert _check([(f"{op}{shape}{axes}[{dtype}]", (closed, (x,)))]) == 1
