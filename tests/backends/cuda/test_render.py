"""Unit tests of the CUDA renderer on the generated source (no device needed):
index types, launch bounds and shapes, half-precision storage, the reduction
strategies, row kernels, atomic and serial scatters, exact literals, the
scheduler under a "grid" target, and that importing ember or the renderer
loads neither CuPy nor cuda.bindings."""
import re
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.backends.cuda.render import BLOCK, MAX_GRID, literal, render_program
from ember.backends.cuda.target import cuda_target
from ember.backends.kernels import GemmKernel, LibraryStep, MapKernel, RowKernel, schedule
from ember.backends.kernels.policy import _gemm_blocks

BF16 = np.dtype(ml_dtypes.bfloat16)


def _render(f, *args):
    prog = schedule(ember.make_graph(f)(*args), cuda_target())
    return prog, render_program(prog)


def _kernel_text(mod, name):
    src = mod.functions
    start = src.index(f" {name}(")
    return src[start:src.find("\n}\n", start)]


def test_map_kernel_is_a_64_bit_grid_stride_loop_with_launch_bounds():
    x = np.ones((3, 1000), np.float32)
    prog, mod = _render(lambda a, b: lax.tanh(a * b) + 1.0, x, x)
    (k,) = mod.kernels
    assert (k.params, k.block, k.grid) == ((0, 1, 2), BLOCK, -(-3000 // BLOCK))
    text = _kernel_text(mod, k.name)
    assert f'extern "C" __global__ void __launch_bounds__({BLOCK}) {k.name}(' in mod.functions
    assert "for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < 3000LL; " \
           "i += (long long)gridDim.x * blockDim.x)" in text
    assert "const float* __restrict__ b0" in mod.functions and "float* __restrict__ b2" in mod.functions
    assert "tanhf(" in text and "__fmul_rn(" in text
    assert re.search(r"const long long v1 = \(i\) % 1000LL;", text)


def test_large_maps_cap_the_grid_and_empty_ones_launch_nothing():
    _, mod = _render(lambda a: a + 1.0, np.ones(BLOCK * (MAX_GRID + 5), np.float32))
    assert mod.kernels[0].grid == MAX_GRID
    _, mod = _render(lambda a: a + 1.0, np.ones((0, 4), np.float32))
    assert [k.grid for k in mod.kernels] == [0]


@pytest.mark.parametrize("dtype,storage,load,store,rnd", [
    (np.dtype(np.float16), "__half", "__half2float", "__float2half_rn", "ember_round_f16"),
    (BF16, "__nv_bfloat16", "__bfloat162float", "__float2bfloat16_rn", "ember_round_bf16")])
def test_half_precision_is_stored_as_such_and_computed_in_float(dtype, storage, load, store, rnd):
    _, mod = _render(lambda a: lax.exp(a) * a, np.ones(8, dtype))
    text = mod.functions
    assert f"const {storage}* __restrict__ b0" in text and f"{storage}* __restrict__ b1" in text
    assert f"{load}(b0[" in text and f"= {store}(" in text
    # every primitive's result is rounded to the format, as on the CPU
    assert text.count(f"{rnd}(") == 2 and "const float t" in text


def test_row_reductions_take_a_block_per_output_and_fold_with_shuffles():
    _, mod = _render(lambda a: lax.reduce_sum(a, (1,)), np.ones((5, 300), np.float32))
    (k,) = mod.kernels
    text = _kernel_text(mod, k.name)
    assert k.grid == 5 and k.block == BLOCK
    assert "for (long long o = blockIdx.x; o < 5LL; o += gridDim.x)" in text
    assert "for (long long r = threadIdx.x; r < 300LL; r += blockDim.x)" in text
    assert "ember_block_fold(acc" in text and "if (threadIdx.x == 0)" in text
    assert "__shfl_down_sync(0xffffffffu" in mod.source


def test_column_and_short_row_reductions_take_a_thread_per_output():
    for x, axes in ((np.ones((300, 7), np.float32), (0,)), (np.ones((7, 5), np.float32), (1,))):
        _, mod = _render(lambda a, axes=axes: lax.reduce_max(a, axes), x)
        (k,) = mod.kernels
        text = _kernel_text(mod, k.name)
        assert "ember_block_fold" not in text and "ember_fold_max()" in text
        assert k.grid == 1 and "o += (long long)gridDim.x * blockDim.x" in text


def test_a_full_reduction_is_one_block():
    _, mod = _render(lambda a: lax.reduce_sum(a, (0, 1)), np.ones((64, 64), np.float64))
    (k,) = mod.kernels
    assert k.grid == 1 and "ember_block_fold" in _kernel_text(mod, k.name)


@pytest.mark.parametrize("dtype,acc,fold", [(np.dtype(bool), "int", "ember_fold_or"),
                                            (np.dtype(np.int8), "int", "ember_fold_sum"),
                                            (np.dtype(np.uint16), "unsigned int", "ember_fold_sum"),
                                            (np.dtype(np.float16), "float", "ember_fold_sum"),
                                            (np.dtype(np.int64), "long long", "ember_fold_sum")])
def test_accumulators_are_types_warp_shuffles_take(dtype, acc, fold):
    op = lax.reduce_or if dtype == np.dtype(bool) else lax.reduce_sum
    _, mod = _render(lambda a: op(a, (1,)), np.ones((2, 500), dtype))
    text = mod.functions
    assert re.search(rf"\n    {acc} acc\d+ = \({acc}\)", text) and f"{fold}()" in text


def test_softmax_is_one_row_kernel_with_a_barrier_between_members():
    def softmax(v):
        e = enp.exp(v - enp.max(v, axis=-1, keepdims=True))
        return e / enp.sum(e, axis=-1, keepdims=True)
    prog, mod = _render(softmax, np.ones((16, 1000), np.float32))
    (rk,) = [s for s in prog.steps if isinstance(s, RowKernel)]
    (k,) = mod.kernels
    text = _kernel_text(mod, k.name)
    assert k.grid == 16 and text.count("__syncthreads();") == len(rk.members)
    assert text.count("ember_block_fold(") == 2
    # the exp values live in the output (row aliasing): no parameter of their own
    assert len(k.params) == len(set(rk.inputs) | set(rk.outputs)) and rk.aliases


def test_scatters_combine_atomically_or_in_order():
    idx = np.array([0, 2, 2, 4], np.int32)
    cases = [(lambda z, u: z.at[idx].add(u), np.float32, "atomicAdd(&b"),
             (lambda z, u: z.at[idx].add(u), np.int64, "atomicAdd((unsigned long long*)&b"),
             (lambda z, u: z.at[idx].max(u), np.int32, "atomicMax(&b"),
             (lambda z, u: z.at[idx].max(u), np.float64, "ember_atomic_update(&b"),
             (lambda z, u: z.at[idx].multiply(u), np.float32, "ember_atomic_update(&b")]
    for f, d, call in cases:
        _, mod = _render(f, np.zeros(6, d), np.ones(4, d))
        init, scat = mod.kernels
        assert call in _kernel_text(mod, scat.name) and scat.block == BLOCK, (d, call)
    # set (last write wins) and 1-byte types run the updates in order in one thread
    for f, d in ((lambda z, u: z.at[idx].set(u), np.float32), (lambda z, u: z.at[idx].add(u), np.int8)):
        _, mod = _render(f, np.zeros(6, d), np.ones(4, d))
        scat = mod.kernels[-1]
        text = _kernel_text(mod, scat.name)
        assert (scat.grid, scat.block) == (1, 1) and "atomic" not in text
        assert "if (blockIdx.x == 0 && threadIdx.x == 0) for (long long i = 0; i < 4LL; ++i)" in text


def test_literals_are_exact():
    assert literal(-0.0, np.float32) == "-0x0.0p+0f"
    assert literal(0.1, np.float64) == (0.1).hex()
    nan = np.array(0x7FC00123, np.uint32).view(np.float32)
    assert literal(nan, np.float32) == "__int_as_float(0x7fc00123)"
    assert literal(float("-inf"), np.float64) == "__longlong_as_double(0xfff0000000000000LL)"
    assert literal(np.iinfo(np.int64).min, np.int64) == "((long long)9223372036854775808ull)"
    # half-precision constants are the float32 value of the rounded constant
    assert float.fromhex(literal(0.1, np.float16)[:-1]) == float(np.float16(0.1))
    assert literal(True, bool) == "true"


def test_products_go_to_cublas_whole_and_epilogues_are_kernels_of_their_own():
    a = np.ones((300, 200), BF16)
    prog, mod = _render(lambda x, y: lax.tanh(x @ y) + 1.0, a, a.T.copy())
    gemms = [s for s in prog.steps if isinstance(s, GemmKernel)]
    assert len(gemms) == 1 and (gemms[0].mblock, gemms[0].nblock) == (300, 300) and gemms[0].epilogue == []
    assert [type(s) for s in prog.steps].count(MapKernel) == 1 and len(mod.kernels) == 1
    assert _gemm_blocks(2, 4096, 4096, 4096, cuda_target()) == (4096, 4096)


def test_declared_library_steps_are_not_kernels():
    prog, mod = _render(lambda x: lax.digamma(lax.exp(x)) + 1.0, np.ones(5, np.float32))
    assert [type(s).__name__ for s in prog.steps] == ["MapKernel", "LibraryStep", "MapKernel"]
    assert len(mod.kernels) == 2 and "digamma" not in mod.functions
    # convolutions of gemm dtypes: the patch matrix kernel (the product is cuBLAS's);
    # others are library steps
    prog, mod = _render(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"),
                        np.ones((1, 2, 5, 5), np.float32), np.ones((3, 2, 3, 3), np.float32))
    assert [type(s).__name__ for s in prog.steps] == ["ConvKernel"] and "im2col" in mod.kernels[0].name
    prog, _ = _render(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"),
                      np.ones((1, 2, 5, 5), np.int32), np.ones((3, 2, 3, 3), np.int32))
    assert any(isinstance(s, LibraryStep) and s.eq.prim.name == "conv_general_dilated" for s in prog.steps)


def test_thousands_of_fused_primitives_render_without_recursion():
    def chain(x):
        for i in range(4000):
            x = lax.sin(x) * 0.5 if i % 2 else x + 1.0
        return x
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(400)
    try:
        _, mod = _render(chain, np.ones(4, np.float32))
    finally:
        sys.setrecursionlimit(old)
    assert mod.functions.count("sinf(") == 2000


def test_importing_ember_and_the_renderer_loads_no_cuda_library():
    code = ("import sys, ember, numpy as np; from ember import lax\n"
            "from ember.backends.cuda.render import render_program\n"
            "from ember.backends.cuda import nvrtc\n"
            "from ember.backends.cuda.target import cuda_target\n"
            "from ember.backends.cuda import executable, launch, library, runtime\n"
            "from ember.backends.kernels import schedule\n"
            "render_program(schedule(ember.make_graph(lax.exp)(np.ones(3, np.float32)), cuda_target()))\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('cupy', 'cuda')]\n"
            "assert not bad, bad\nprint('clean')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "clean" in out.stdout, out.stderr


def test_the_cuda_target_declares_what_the_renderer_cannot_lower():
    from ember.backends.cuda import ops as cuda_ops
    from ember.backends.cuda.target import LIBRARY
    assert LIBRARY == frozenset(cuda_ops.LIBRARY_STEPS)
    assert not (set(cuda_ops.LOWERINGS) & LIBRARY)


@pytest.mark.parametrize("name", ["ops", "target", "render", "prelude", "nvrtc", "runtime", "library", "launch", "module_cache",
                                  "executable"])
def test_docstring_examples_of_the_cuda_modules_run(name):
    # tests/test_docstring_examples.py leaves out modules named *.cuda*; these
    # import no CUDA library, so their examples run here
    import doctest
    import importlib
    module = importlib.import_module(f"ember.backends.cuda.{name}")
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in doctest.DocTestFinder(exclude_empty=True).find(module, module.__name__):
        runner.run(test, out=lambda s: None)
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and (result.attempted > 0 or name == "nvrtc")


def test_rendering_something_unscheduled_says_what_to_do():
    g = ember.make_graph(lax.exp)(np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"expected a scheduled Program, got ClosedGraph.*schedule\(closed, "
                                        r"cuda_target\(\)\)"):
        render_program(g)
