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
from ember.backends.cuda import nvrtc as cuda_nvrtc  # noqa: E402
from ember.backends.cuda.prelude import PRELUDE  # noqa: E402
from ember.backends.cuda.render import render_program  # noqa: E402
from ember.backends.cuda.target import cuda_target  # noqa: E402
from ember.backends.kernels import schedule  # noqa: E402

try:
    cuda_nvrtc.cuda_include_dir()
except cuda_nvrtc.NvrtcError as e:  # cuda-bindings without the runtime's headers
    pytest.skip(str(e), allow_module_level=True)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus import N_FUZZ, fuzz_programs, primitive_programs  # noqa: E402

BATCH = 60


def _render_all(cases):
    target = cuda_target()
    rendered = []
    for j, (label, (g, _)) in enumerate(cases):
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
    g = ember.make_graph(lambda v: v * v + 1)(np.ones((4, 5), np.float32))
    mod = render_program(schedule(g, cuda_target()))
    ptx = cuda_nvrtc.compile_cuda(mod.source, options=("-ftz=false", "--device-as-default-execution-space",
                                                       "-std=c++17"))
    body = ptx.split(b".entry")[1]
    assert b"mul.rn.f32" in body and b".ftz" not in body
    ftz = cuda_nvrtc.compile_cuda(mod.source).split(b".entry")[1]
    assert b"mul.rn.ftz.f32" in ftz


def test_bad_options_and_arch_say_what_was_passed():
    with pytest.raises(cuda_nvrtc.NvrtcError, match=r"(?s)rejected the options.*sm_9'.*hint: arch is an sm_XY"):
        cuda_nvrtc.compile_cuda('extern "C" __global__ void k() {}', arch="sm_9")
    with pytest.raises(cuda_nvrtc.NvrtcError, match=r"unrecognized option -bogus"):
        cuda_nvrtc.compile_cuda('extern "C" __global__ void k() {}', options=("-bogus",))
