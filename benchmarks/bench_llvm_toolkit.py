"""Benchmarks for the native CPU toolkit (ember.backends.llvm) against numpy.

Run:  python benchmarks/bench_llvm_toolkit.py [--repeat N] [--ulp-table]

Sections (medians of --repeat runs, min in brackets):
  * fused chain tanh(x*a+b)*sigmoid(x)+exp(-x*x) over 1e7 float32, one
    hand-written kernel, 1 and 2 threads, vs numpy (unfused, 1 thread)
  * sum of 1e7 float32 (row-sum kernel with a reassoc fadd) vs numpy
  * sgemm 1024^3 through blas.gemm vs numpy.matmul, OpenBLAS on 1 thread
    (and on 2 threads in a subprocess), and ember's own packed gemm on 1 thread
  * overhead of a prepared kernel call on a tiny kernel
  * compile time: cold (O3 + codegen) vs disk-cache hit
  * --ulp-table: the measured error table of mathlib (vs mpmath, correctly rounded)

The machine's second vCPU may be busy; two-thread numbers are best effort.
"""

from __future__ import annotations

import os
import sys

# BLAS thread count must be fixed before numpy/scipy load OpenBLAS
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import llvmlite.ir as ir  # noqa: E402

from ember.backends.llvm import (KernelLauncher, ThreadPool, compile_ir, compiler,  # noqa: E402
                                 loops, mathlib)

F32 = ir.FloatType()
A, B = 0.7, 0.1


def timeit(fn, repeat):
    fn()  # warm up (page faults, lazy init)
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)), float(min(ts))


def row(label, med, best, unit="ms", note=""):
    scale = 1e3 if unit == "ms" else 1e6
    print(f"  {label:<44s} {med * scale:10.2f} {unit}  [{best * scale:8.2f}]  {note}")


def chain_body(b, xs):
    x = xs[0]
    t = mathlib.emit(b, "tanh", [b.fadd(b.fmul(x, ir.Constant(F32, A)), ir.Constant(F32, B))], F32)
    s = mathlib.emit(b, "logistic", [x], F32)
    e = mathlib.emit(b, "exp", [b.fneg(b.fmul(x, x))], F32)
    return [b.fadd(b.fmul(t, s), e)]


def chain_ir(tag=""):
    m = ir.Module()
    loops.elementwise_kernel(m, "chain", 1, F32, chain_body)
    return f"; {tag}\n{m}"


def bench_chain(repeat):
    print("fused chain tanh(x*a+b)*sigmoid(x)+exp(-x*x), 1e7 float32")
    cm = compile_ir(chain_ir(), ["chain"])
    x = np.random.default_rng(0).standard_normal(10 ** 7).astype(np.float32)
    y = np.empty_like(x)
    call = KernelLauncher(cm["chain"], 2).prepare([x, y])
    for n in (1, 2):
        pool = ThreadPool(n)
        med, best = timeit(lambda: call.run(x.size, 1 << 16, align=64, pool=pool), repeat)
        pool.shutdown()
        row(f"ember kernel, {n} thread{'s' if n > 1 else ''}", med, best)
    a, b = np.float32(A), np.float32(B)

    def np_chain():
        return np.tanh(x * a + b) * (1 / (1 + np.exp(-x))) + np.exp(-x * x)

    med, best = timeit(np_chain, max(3, repeat // 2))
    row("numpy (unfused)", med, best)
    out = np.empty_like(x)
    med, best = timeit(lambda: np.copyto(out, x), repeat)
    row("memory floor: copy 1e7 float32 (numpy)", med, best)
    err = np.abs(y.astype(np.float64) - np_chain().astype(np.float64)).max()
    print(f"  max |ember - numpy| = {err:.2e}")


def bench_sum(repeat):
    print("sum of 1e7 float32")
    n, rows = 10 ** 7, 64
    m = ir.Module()
    loops.row_sum_kernel(m, "rowsum", F32, n // rows, reassoc=True)
    loops.row_sum_kernel(m, "rowsum_strict", F32, n // rows, reassoc=False)
    cm = compile_ir(str(m), ["rowsum", "rowsum_strict"])
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    part = np.empty(rows, np.float32)
    for name, label in (("rowsum", "reassoc"), ("rowsum_strict", "strict fadd")):
        call = KernelLauncher(cm[name], 2).prepare([x, part])
        for t in ((1, 2) if name == "rowsum" else (1,)):
            pool = ThreadPool(t)
            med, best = timeit(lambda: (call.run(rows, 4, pool=pool), float(part.sum())), repeat)
            pool.shutdown()
            row(f"ember {label}, {t} thread{'s' if t > 1 else ''}", med, best)
    med, best = timeit(lambda: x.sum(), repeat)
    row("numpy x.sum()", med, best)
    call = KernelLauncher(cm["rowsum"], 2).prepare([x, part])
    call(0, rows)
    print(f"  relative difference vs float64 sum: "
          f"{abs(float(part.astype(np.float64).sum()) / x.astype(np.float64).sum() - 1):.1e}")


_GEMM_SNIPPET = """
import os, sys, time, numpy as np
sys.path.insert(0, {root!r})
from ember.backends.llvm import blas, packed_gemm
n = 1024
a = np.random.default_rng(0).random((n, n), dtype=np.float32)
b = np.random.default_rng(1).random((n, n), dtype=np.float32)
c = np.empty((n, n), np.float32)
def t(f):
    f(); ts = []
    for _ in range({repeat}):
        s = time.perf_counter(); f(); ts.append(time.perf_counter() - s)
    return np.median(ts), min(ts)
m1, b1 = t(lambda: blas.gemm(a, b, c))
m2, b2 = t(lambda: np.matmul(a, b))
err = float(np.abs(c - a @ b).max())
m3, b3 = t(lambda: packed_gemm.matmul_into(a, b, c))
print(m1, b1, m2, b2, m3, b3, max(err, float(np.abs(c - a @ b).max())))
"""


def bench_gemm(repeat):
    print("sgemm 1024 x 1024 x 1024")
    for threads in ("1", "2"):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=threads)
        out = subprocess.run([sys.executable, "-c", _GEMM_SNIPPET.format(root=ROOT, repeat=repeat)],
                             env=env, capture_output=True, text=True, timeout=600)
        if out.returncode:
            print("  failed:", out.stderr[-500:])
            continue
        m1, b1, m2, b2, m3, b3, err = map(float, out.stdout.split())
        flops = 2 * 1024 ** 3
        row(f"ember blas.gemm, OpenBLAS {threads} thread(s)", m1, b1, note=f"{flops / m1 / 1e9:6.1f} GFLOP/s")
        row(f"numpy matmul,   OpenBLAS {threads} thread(s)", m2, b2, note=f"{flops / m2 / 1e9:6.1f} GFLOP/s")
        if threads == "1":
            row("ember packed_gemm, 1 thread", m3, b3, note=f"{flops / m3 / 1e9:6.1f} GFLOP/s")


def bench_overhead(repeat):
    print("call overhead (tiny kernel: 1 element)")
    m = ir.Module()
    loops.elementwise_kernel(m, "tiny", 1, F32, lambda b, xs: [b.fadd(xs[0], ir.Constant(F32, 1.0))])
    cm = compile_ir(str(m), ["tiny"])
    x, y = np.ones(16, np.float32), np.empty(16, np.float32)
    launcher = KernelLauncher(cm["tiny"], 2)
    call = launcher.prepare([x, y])
    n = 200_000

    def loop_call():
        for _ in range(n):
            call(0, 1)

    def loop_run():
        for _ in range(n):
            call.run(1)

    def loop_prepare():
        for _ in range(n // 10):
            launcher.prepare([x.ctypes.data, y.ctypes.data])(0, 1)

    med, best = timeit(loop_call, max(3, repeat // 2))
    row("prepared call(start, stop)", med / n, best / n, unit="us")
    med, best = timeit(loop_run, max(3, repeat // 2))
    row("prepared call.run(total) (inline path)", med / n, best / n, unit="us")
    med, best = timeit(loop_prepare, max(3, repeat // 2))
    row("prepare([int addresses]) + call", med / (n // 10), best / (n // 10), unit="us")


def bench_compile(repeat):
    print("compile time, fused-chain kernel")
    old = os.environ.get("EMBER_CACHE_DIR")
    with tempfile.TemporaryDirectory() as d:
        os.environ["EMBER_CACHE_DIR"] = d
        texts = [chain_ir(tag=f"cold {i} {time.time()}") for i in range(repeat + 1)]
        it = iter(texts)
        med, best = timeit(lambda: compile_ir(next(it), ["chain"]), repeat)
        row("cold: parse + O3 + MCJIT codegen + store", med, best)

        def hit():
            compiler.clear_memory_cache()
            cm = compile_ir(texts[0], ["chain"])
            assert cm.source == "disk"

        med, best = timeit(hit, repeat)
        row("disk-cache hit: load object into new engine", med, best)
        med, best = timeit(lambda: compile_ir(texts[0], ["chain"]), repeat)
        row("in-process memo hit", med, best)
    if old is None:
        os.environ.pop("EMBER_CACHE_DIR", None)
    else:
        os.environ["EMBER_CACHE_DIR"] = old


def ulp_table():
    sys.path.insert(0, os.path.join(ROOT, "tests", "backends", "llvm"))
    import mathlib_cases as mc

    def apply(name, dtype, args):
        ty = F32 if np.dtype(dtype) == np.float32 else ir.DoubleType()
        m = ir.Module()
        nargs = mathlib.MATH_FUNCTIONS[name].nargs
        loops.elementwise_kernel(m, "k", nargs, ty, lambda b, xs: [mathlib.emit(b, name, xs, ty)])
        out = np.empty_like(args[0])
        KernelLauncher(compile_ir(str(m), ["k"])["k"], nargs + 1).prepare(list(args) + [out])(0, out.size)
        return out

    print(f"{'function':10s} {'f32 ulp':>8s} {'f64 ulp':>8s}   "
          f"(max over 2^18 + 2^12 points and the hard regions per dtype, vs mpmath)")
    for name in sorted(mathlib.MATH_FUNCTIONS):
        res = []
        for dt in (np.float32, np.float64):
            worst = 0.0
            # mpmath is the reference (~15 us a point), hence the modest sample
            for n, seed in ((1 << 12, 0), (1 << 18, 7)):
                args = mc.inputs(name, dt, n, seed)
                got, ref = apply(name, dt, args), mc.reference(name, args)
                worst = max(worst, float(mc.ulp_error(got, ref, dt).max()))
            res.append(worst)
        print(f"{name:10s} {res[0]:8.3f} {res[1]:8.3f}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--ulp-table", action="store_true", help="print the measured mathlib error table")
    p.add_argument("--only", default="", help="comma list of sections: chain,sum,gemm,overhead,compile")
    args = p.parse_args()
    from _header import target_header
    print(target_header())
    if args.ulp_table:
        ulp_table()
        return
    print(f"cpus={os.cpu_count()}  OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}  "
          f"repeat={args.repeat}  (median [min])")
    sections = {"chain": bench_chain, "sum": bench_sum, "gemm": bench_gemm,
                "overhead": bench_overhead, "compile": bench_compile}
    chosen = args.only.split(",") if args.only else list(sections)
    for name in chosen:
        sections[name](args.repeat)


if __name__ == "__main__":
    main()
