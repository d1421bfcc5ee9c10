"""Timings of jitted programs through the CUDA executable (ember.backends.cuda.
executable) against CuPy on the same GPU: the issue #14 table's rows that
need only the executable (no eager GPU arrays): the fused chain and a sum of
1e8 float32 (GB/s counting bytes read + written), softmax 32768 x 4096, a bf16
8192^3 matmul against cupy.matmul, and a tiny call's overhead.  Medians of
CUDA-event timings after a warm-up; prints one line per row.  Without CuPy or
a GPU it says so and exits 0.

    usage: python benchmarks/gpu/executable_bench.py [--quick]
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np


def _gpu():
    try:
        import cupy as cp
        if cp.cuda.runtime.getDeviceCount() < 1:
            return None
        return cp
    except Exception as e:  # noqa: BLE001 - no CuPy / no driver
        print(f"no GPU ({type(e).__name__}: {e}); nothing to time")
        return None


def _median_ms(cp, fn, reps):
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


def main(argv):
    cp = _gpu()
    if cp is None:
        return 0
    import ember
    import ember.numpy as enp
    from ember.backends.cuda.executable import compile_graph
    from ember.backends.cuda.runtime import CupyRuntime
    quick = "--quick" in argv
    rt = CupyRuntime()
    reps = 5 if quick else 20
    n = 10 ** 7 if quick else 10 ** 8

    def exe_of(f, *host_args):
        closed = ember.make_graph(f)(*host_args)
        exe = compile_graph(closed, runtime=rt)
        dev = [rt.to_device(np.asarray(a)) for a in host_args]
        return exe, dev

    def row(name, ms, nbytes=None, ref_ms=None):
        extra = f"  {nbytes / ms / 1e6:8.1f} GB/s" if nbytes else ""
        extra += f"  cupy {ref_ms:.3f} ms ({ref_ms / ms:.2f}x)" if ref_ms else ""
        print(f"{name:40s} {ms:9.3f} ms{extra}", flush=True)

    x = np.linspace(-3, 3, n, dtype=np.float32)

    def chain(v):
        return enp.tanh(v * 1.5 + 0.25) * (1 / (1 + enp.exp(-v))) + enp.exp(-v * v)
    exe, dev = exe_of(chain, x)
    xc = dev[0]
    ref = _median_ms(cp, lambda: cp.tanh(xc * 1.5 + 0.25) * (1 / (1 + cp.exp(-xc))) + cp.exp(-xc * xc), reps)
    row(f"fused chain f32[{n}]", _median_ms(cp, lambda: exe(*dev), reps), 8 * n, ref)
    exe, dev = exe_of(lambda v: enp.sum(v), x)
    row(f"sum f32[{n}]", _median_ms(cp, lambda: exe(*dev), reps), 4 * n, _median_ms(cp, lambda: cp.sum(xc), reps))
    xc = dev = None   # free the 1e8 buffers before the next rows

    rows, cols = (4096, 4096) if quick else (32768, 4096)
    s = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)

    def softmax(v):
        e = enp.exp(v - enp.max(v, axis=-1, keepdims=True))
        return e / enp.sum(e, axis=-1, keepdims=True)
    exe, dev = exe_of(softmax, s)
    row(f"softmax f32[{rows}, {cols}]", _median_ms(cp, lambda: exe(*dev), reps), 8 * rows * cols)

    m = 2048 if quick else 8192
    a = np.random.default_rng(1).standard_normal((m, m)).astype(ember.dtypes.bfloat16)
    exe, dev = exe_of(lambda p, q: p @ q, a, a)
    ms = _median_ms(cp, lambda: exe(*dev), max(3, reps // 4))
    try:
        ad = cp.asarray(a)
        ref = _median_ms(cp, lambda: cp.matmul(ad, ad), max(3, reps // 4))
    except Exception as e:  # noqa: BLE001 - a CuPy without bfloat16
        print(f"  (cupy.matmul of bfloat16 unavailable: {type(e).__name__})")
        ref = None
    row(f"matmul bf16[{m}^3] ({2 * m ** 3 / ms / 1e9:.0f} TFLOP/s)", ms, None, ref)

    exe, dev = exe_of(lambda v: v + 1, np.ones(4, np.float32))
    for _ in range(100):
        exe(*dev)
    cp.cuda.Device().synchronize()
    calls = 2000
    t0 = time.perf_counter()
    for _ in range(calls):
        exe(*dev)
    cp.cuda.Device().synchronize()
    print(f"{'tiny call (x + 1, f32[4])':40s} {1e6 * (time.perf_counter() - t0) / calls:9.1f} us per call "
          "(host time, launches queued)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
