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

from corpus import N_FUZZ, fuzz_programs, layernorm, nvr, primitive_programs, softmax  # noqa: E402
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


# --- blocks of real threads: folds, barriers and contended atomics as written -----------

LAUNCH = (3, 64)   # at most 3 blocks (grid-stride loops wrap) of 2 warps


def _check_threaded(cases):
    runnable = _runnable(cases)
    lib = he.build("\n".join(m.functions for *_, m in runnable), [k for *_, m in runnable for k in m.kernels])
    for label, closed, args, prog, mod in runnable:
        with np.errstate(all="ignore"):
            got = he.run_on_host(lib, prog, mod, args, launch=LAUNCH)
            ref = run_graph_numpy(closed.graph, closed.consts_as_buffers(), args)
        try:
            nvr.assert_same(got, ref, transcendental=any(w in label for w in INEXACT))
        except AssertionError as e:
            raise AssertionError(f"{label} (threaded)\n--- kernels ---\n{mod.functions}\n{e}") from None
    return len(runnable)


def test_block_folds_row_kernels_and_atomics_on_threads():
    import ember
    import ember.numpy as enp
    from ember import lax
    rng = np.random.default_rng(3)
    cases = []

    def case(label, f, *args):
        cases.append((label, (ember.make_graph(f)(*args), args)))

    for d in (np.float32, np.float16, nvr.BF16):
        x = rng.standard_normal((5, 700)).astype(d)
        case(f"softmax[{np.dtype(d)}]", softmax, x)
        case(f"layernorm[{np.dtype(d)}] reduce_sum", layernorm, x)
    for d in (np.float32, np.float64, np.int32, np.int8, nvr.BF16):
        x = nvr._data(d, (4, 333), rng, special=False)
        for op in ("reduce_sum", "reduce_max", "reduce_min"):
            case(f"{op}[{np.dtype(d)}]", lambda v, op=op: getattr(lax, op)(v, (1,)), x)
            case(f"{op} full[{np.dtype(d)}]", lambda v, op=op: getattr(lax, op)(v, (0, 1)), x)
    nan_rows = np.array([[np.nan] + [1.0] * 299, [-0.0] * 150 + [0.0] * 150, [-0.0] * 300], np.float32)
    case("reduce_max nan/zeros", lambda v: lax.reduce_max(v, (1,)), nan_rows)
    case("reduce_min nan/zeros", lambda v: lax.reduce_min(v, (1,)), nan_rows)
    # every update hits one of three elements: the atomics contend
    idx = (np.arange(500) % 3).astype(np.int32)
    for d, ops in ((np.float32, ("add", "max", "min", "multiply")), (np.float64, ("add", "max")),
                   (np.int32, ("add", "max", "min", "multiply")), (np.uint32, ("add", "min")),
                   (np.int64, ("add", "max"))):
        u = (nvr._data(d, (500,), rng, special=False) % 7 + 1).astype(d) if np.dtype(d).kind in "iu" else \
            (rng.random(500) * 0.02 + 0.99).astype(d)
        for op in ops:
            label = f"scatter_{op}[{np.dtype(d)}]" + (" reduce_sum" if op in ("add", "multiply") else "")
            case(label, lambda z, u, op=op: getattr(z.at[idx], op)(u), np.ones(3, d), u)
    case("map exp", lambda v: enp.exp(v) * 2, rng.standard_normal(1000).astype(np.float32))
    assert _check_threaded(cases) == len(cases)
