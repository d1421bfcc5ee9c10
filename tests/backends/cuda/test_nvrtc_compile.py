"""The CUDA compile check (issue #14): every kernel of a corpus of jitted graphs
(the per-primitive programs of test_native_vs_reference.py over their dtypes,
reductions, scatters and gathers, and random fused programs of fuzz_programs.py)
is rendered for the CUDA target and compiled by NVRTC for sm_90, with no GPU.
Programs are compiled in batches of one translation unit each (kernel names
prefixed per program); a failing batch is recompiled program by program so the
error names the program and NVRTC's log.  Skips without cuda-bindings."""
import os
import sys
import time

import numpy as np
import pytest

pytest.importorskip("cuda.bindings.nvrtc")

import ember  # noqa: E402
from ember import lax  # noqa: E402
from ember.backends.cuda import nvrtc as cuda_nvrtc  # noqa: E402
from ember.backends.cuda.prelude import PRELUDE  # noqa: E402
from ember.backends.cuda.render import render_program  # noqa: E402
from ember.backends.cuda.target import cuda_target  # noqa: E402
from ember.backends.kernels import schedule  # noqa: E402

try:
    cuda_nvrtc.cuda_include_dir()
except cuda_nvrtc.NvrtcError as e:  # cuda-bindings without the runtime's headers
    pytest.skip(str(e), allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import fuzz_programs as fp  # noqa: E402
import test_native_vs_reference as nvr  # noqa: E402

N_FUZZ = 200
BATCH = 60


def _graph(f, *args):
    return ember.make_graph(f)(*args)


def primitive_programs():
    """(label, closed graph) for every per-primitive case of the differential
    tests, plus reductions, bool/select, scatter and gather cases."""
    rng = np.random.default_rng(0)
    out = []
    for name in nvr.UNARY:
        for d in nvr.FLOATS:
            out.append((f"{name}[{d}]", _graph(getattr(lax, name), nvr._data(d, (3, 37), rng))))
    for name in nvr.BINARY:
        for d in nvr.FLOATS:
            x, y = nvr._data(d, (5, 11), rng), nvr._data(d, (5, 11), rng)
            out.append((f"{name}[{d}]", _graph(getattr(lax, name), x, y)))
    for name in nvr.INT_BINARY:
        fn = getattr(lax, {"and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor"}.get(name, name))
        for d in nvr.INTS:
            x, y = nvr._data(d, (40,), rng), nvr._data(d, (40,), rng)
            out.append((f"{name}[{d}]", _graph(fn, x, y)))
    for name in ("neg", "abs", "sign", "bitwise_not", "population_count", "clz", "square"):
        for d in nvr.INTS:
            out.append((f"{name}[{d}]", _graph(getattr(lax, name), nvr._data(d, (9,), rng))))
    dts = nvr.FLOATS + nvr.INTS + [np.dtype(bool)]
    for src in dts:
        for dst in dts:
            out.append((f"convert[{src}->{dst}]",
                        _graph(lambda v, dst=dst: lax.convert_element_type(v, dst), nvr._data(src, (64,), rng))))
    for shape, axes in [((7,), (0,)), ((4, 9), (1,)), ((4, 9), (0,)), ((3, 4, 5), (0, 2)), ((3, 4, 5), (1,)),
                        ((0, 3), (0,)), ((3, 0), (1,)), ((2, 3), (0, 1)), ((4, 300), (1,))]:
        for op in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
            for d in (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32), np.dtype(np.float16),
                      nvr.BF16, np.dtype(np.int8), np.dtype(np.uint16)):
                out.append((f"{op}{shape}{axes}[{d}]",
                            _graph(lambda v, op=op, axes=axes: getattr(lax, op)(v, axes),
                                   nvr._data(d, shape, rng, special=False))))
    x = rng.random((5, 6)) < 0.5
    for op in ("reduce_and", "reduce_or"):
        out.append((op, _graph(lambda v, op=op: getattr(lax, op)(v, (1,)), x)))
    y = np.arange(30, dtype=np.float32).reshape(5, 6)
    out.append(("select_n", _graph(lambda p, v: lax.select_n(p, v, lax.neg(v)), x, y)))
    out.append(("integer_pow", _graph(lambda v: lax.integer_pow(v, -7) + lax.integer_pow(v, 13), y)))
    out.append(("clamp", _graph(lambda v: lax.clamp(np.float32(1), v, np.float32(9)), y)))
    import ember.numpy as enp

    def softmax(v):
        e = enp.exp(v - enp.max(v, axis=-1, keepdims=True))
        return e / enp.sum(e, axis=-1, keepdims=True)
    for d in (np.float16, np.float32):
        out.append((f"softmax[{np.dtype(d)}]", _graph(softmax, rng.standard_normal((8, 300)).astype(d))))
    idx = np.array([0, 2, 2, 4, 1], np.int32)
    for d in (np.float32, np.float64, np.int32, np.int64, np.uint32, np.int8):
        z = np.zeros(6, d)
        u = np.arange(5).astype(d)
        out.append((f"scatter_add[{np.dtype(d)}]", _graph(lambda z, u: z.at[idx].add(u), z, u)))
        out.append((f"scatter_max[{np.dtype(d)}]", _graph(lambda z, u: z.at[idx].max(u), z, u)))
        out.append((f"scatter_min[{np.dtype(d)}]", _graph(lambda z, u: z.at[idx].min(u), z, u)))
        out.append((f"scatter_mul[{np.dtype(d)}]", _graph(lambda z, u: z.at[idx].multiply(u), z, u)))
        out.append((f"scatter_set[{np.dtype(d)}]", _graph(lambda z, u: z.at[idx].set(u), z, u)))
        out.append((f"gather[{np.dtype(d)}]", _graph(lambda z: enp.take(z, idx) * 2, np.arange(6).astype(d))))
    return out


def fuzz_programs(n):
    rng = np.random.default_rng(14)
    out = []
    for i in range(n):
        prog = fp.generate(fp.RngChooser(rng), max_ops=10)
        out.append((f"fuzz {i}:\n{prog.source()}", _graph(prog.function(), *prog.inputs.values())))
    return out


def _render_all(cases):
    target = cuda_target()
    rendered = []
    for j, (label, g) in enumerate(cases):
        mod = render_program(schedule(g, target), prefix=f"p{j}_")
        rendered.append((label, mod))
    return rendered


def _compile_batches(rendered):
    """Compile every rendered program in batches; returns the PTX entry names."""
    entries = set()
    for s in range(0, len(rendered), BATCH):
        batch = rendered[s:s + BATCH]
        src = PRELUDE + "\n" + "\n".join(m.functions for _, m in batch)
        try:
            ptx = cuda_nvrtc.compile_cuda(src)
        except cuda_nvrtc.NvrtcError:
            for label, m in batch:
                try:
                    cuda_nvrtc.compile_cuda(m.source)
                except cuda_nvrtc.NvrtcError as e:
                    pytest.fail(f"the CUDA kernels of {label} do not compile:\n{e}\n--- source ---\n{m.functions}")
            raise
        text = ptx.decode()
        entries.update(line.split()[-1].rstrip("(") for line in text.splitlines()
                       if line.lstrip().startswith(".visible .entry"))
    return entries


def _check(cases):
    rendered = _render_all(cases)
    names = [k.name for _, m in rendered for k in m.kernels]
    assert len(names) >= len(cases) * 0.5   # most cases have a kernel (some are library steps only)
    assert len(set(names)) == len(names)
    entries = _compile_batches(rendered)
    missing = sorted(set(names) - entries)
    assert missing == [], f"kernels without a PTX entry: {missing[:5]}"
    return names


def test_every_per_primitive_program_compiles_for_sm_90():
    t = time.perf_counter()
    cases = primitive_programs()
    assert len(cases) > 600
    names = _check(cases)
    print(f"\n{len(cases)} per-primitive programs, {len(names)} kernels: {time.perf_counter() - t:.1f} s")


def test_random_fused_programs_compile_for_sm_90():
    t = time.perf_counter()
    cases = fuzz_programs(N_FUZZ)
    names = _check(cases)
    print(f"\n{len(cases)} random programs, {len(names)} kernels: {time.perf_counter() - t:.1f} s")


def test_a_compile_error_carries_nvrtcs_log():
    with pytest.raises(cuda_nvrtc.NvrtcError, match=r"(?s)could not compile.*undefined"):
        cuda_nvrtc.compile_cuda('extern "C" __global__ void k(float* x) { x[0] = not_declared; }')


def test_bit_identical_options_compile_too():
    # -ftz=false keeps float32 subnormals (the CPU's arithmetic); the default
    # flags flush them, as CuPy's RawModule compiles (CUDA's expf uses a
    # flushing ex2.approx either way, so the case has only + and *)
    g = _graph(lambda v: v * v + 1, np.ones((4, 5), np.float32))
    mod = render_program(schedule(g, cuda_target()))
    ptx = cuda_nvrtc.compile_cuda(mod.source, options=("-ftz=false", "--device-as-default-execution-space",
                                                       "-std=c++17"))
    body = ptx.split(b".entry")[1]
    assert b"mul.rn.f32" in body and b".ftz" not in body
    ftz = cuda_nvrtc.compile_cuda(mod.source).split(b".entry")[1]
    assert b"mul.rn.ftz.f32" in ftz
