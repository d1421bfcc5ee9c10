"""Eager operations on the GPU: ember (CuPy calls through the eager table) against
CuPy itself and PyTorch, for a tiny op (dispatch overhead) and for 1e8-element
streaming ops (bandwidth).  Medians of interleaved repeats, each timed with a
device synchronisation; prints a table and exits 0 with a note without a GPU.

    usage: python benchmarks/gpu/bench_eager.py [--quick]
"""
from __future__ import annotations

import statistics
import sys
import time


def _timeit(fn, sync, number):
    sync()
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    sync()
    return (time.perf_counter() - t0) / number


def main(argv):
    quick = "--quick" in argv
    try:
        import cupy as cp
        if cp.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no device")
    except Exception as e:  # no CuPy, driver or device
        print(f"bench_eager: no GPU ({type(e).__name__}: {e}); nothing measured")
        return 0
    import numpy as np

    import ember
    import ember.numpy as enp
    gpu = ember.devices("cuda")[0]
    sync = cp.cuda.get_current_stream().synchronize
    try:
        import torch
        has_torch = torch.cuda.is_available()
    except Exception:
        has_torch = False
    n_big = 10 ** 7 if quick else 10 ** 8
    cases = {}
    for n, label, number in ((16, "x*2+1 tiny (us)", 2000), (n_big, f"x*2+1 {n_big:.0e} (ms)", 20),
                             (n_big, f"sum {n_big:.0e} (ms)", 20)):
        host = np.ones(n, np.float32)
        e = ember.device_put(host, gpu)
        c = cp.asarray(host)
        fns = {"ember": (lambda: e * 2.0 + 1.0) if "sum" not in label else (lambda: e.sum()),
               "cupy": (lambda: c * 2.0 + 1.0) if "sum" not in label else (lambda: c.sum())}
        if has_torch:
            t = torch.ones(n, device="cuda")
            fns["torch"] = (lambda: t * 2.0 + 1.0) if "sum" not in label else (lambda: t.sum())
        for f in fns.values():   # warm up (kernel compilation, caches)
            f()
        runs = {k: [] for k in fns}
        for _ in range(3 if quick else 7):
            for k, f in fns.items():   # interleaved, so drift hits every library alike
                runs[k].append(_timeit(f, sync, number))
        scale = 1e6 if "us" in label else 1e3
        cases[label] = {k: statistics.median(v) * scale for k, v in runs.items()}
    libs = ["ember", "cupy"] + (["torch"] if has_torch else [])
    print(f"{'case':<24}" + "".join(f"{k:>12}" for k in libs) + f"{'ember/cupy':>12}")
    for label, r in cases.items():
        print(f"{label:<24}" + "".join(f"{r[k]:>12.3f}" for k in libs) + f"{r['ember'] / r['cupy']:>12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
