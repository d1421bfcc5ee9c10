"""Benchmark ember.data's DataLoader.

Run from the repository root::

    python benchmarks/bench_data.py [--quick]

Three measurements, each the median of several runs:

1. Throughput of a CPU-heavy per-sample transform (a few ms of numpy work per
   sample) with num_workers=2 versus 0. Goal: >= 1.7x on 2 cores.
2. Per-batch overhead with cheap samples for num_workers 0 and 2, next to
   ``torch.utils.data.DataLoader`` when torch is importable.
3. Bytes pickled per batch (what goes through the result queue) at batch sizes
   32 / 256 / 2048, against pickling the batch itself. Goal: constant.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
import time

# ufuncs are single-threaded anyway; this keeps any BLAS call from using both
# cores in the num_workers=0 baseline and skewing the ratio.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ember.data import ArrayDataset, DataLoader, Dataset  # noqa: E402
from ember.data import shm  # noqa: E402
from ember.data.collate import _collate, _identity  # noqa: E402


class HeavyTransformDataset(Dataset):
    """Each sample costs ``work`` rounds of elementwise numpy math (~ms)."""

    def __init__(self, n: int, work: int):
        self.n = n
        self.work = work
        self.base = np.linspace(0.0, 1.0, 32 * 32, dtype=np.float64).reshape(32, 32)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = self.base + i
        for _ in range(self.work):
            x = np.sin(x) * 0.5 + np.cos(x * 1.0001) * 0.5
        return x.astype(np.float32), i


def _median_time(fn, repeats: int) -> float:
    fn()  # warm-up (first fork, resource tracker start, caches)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _drain(loader) -> int:
    n = 0
    for _ in loader:
        n += 1
    return n


def _calibrate_work(target_ms: float) -> int:
    ds = HeavyTransformDataset(1, 100)
    ds[0]
    t0 = time.perf_counter()
    for _ in range(5):
        ds[0]
    per_round = (time.perf_counter() - t0) / 5 / 100
    return max(1, int(target_ms / 1000 / per_round))


def _raw_two_process_epoch(ds) -> None:
    """Hardware ceiling: the same samples split over 2 bare processes, no loader."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    half = len(ds) // 2
    procs = [
        ctx.Process(target=_compute_range, args=(ds, lo, hi))
        for lo, hi in ((0, half), (half, len(ds)))
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join()


def _compute_range(ds, lo: int, hi: int) -> None:
    for i in range(lo, hi):
        ds[i]


def bench_heavy(repeats: int, n: int) -> None:
    work = _calibrate_work(3.0)
    ds = HeavyTransformDataset(n, work)
    t0 = time.perf_counter()
    for i in range(20):
        ds[i]
    per_sample_ms = (time.perf_counter() - t0) / 20 * 1000
    print(f"\n[1] CPU-heavy transform: {n} samples, ~{per_sample_ms:.2f} ms numpy work each, batch_size=16")
    # Runs are interleaved so that drifting machine load hits every variant alike.
    pers = DataLoader(ds, batch_size=16, num_workers=2, persistent_workers=True)
    _drain(pers)
    variants = {
        "0": lambda: _drain(DataLoader(ds, batch_size=16, num_workers=0)),
        # A fresh loader per epoch: worker start-up and shutdown included.
        "2": lambda: _drain(DataLoader(ds, batch_size=16, num_workers=2)),
        "2 (persist)": lambda: _drain(pers),
        "raw 2 procs": lambda: _raw_two_process_epoch(ds),
    }
    times: dict = {k: [] for k in variants}
    for _ in range(repeats):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"    {'num_workers':>11} {'median s/epoch':>15} {'samples/s':>10} {'vs nw=0':>8}")
    for name, t in med.items():
        print(f"    {name:>11} {t:>15.3f} {n / t:>10.0f} {med['0'] / t:>7.2f}x")
    pers = None  # shut the persistent pool down before the next benchmark
    ratio = med["0"] / med["2"]
    ceiling = med["0"] / med["raw 2 procs"]
    print(f"    ratio num_workers=2 / 0: {ratio:.2f}x (goal >= 1.7x) -> {'OK' if ratio >= 1.7 else 'BELOW GOAL'}; "
          f"bare 2-process ceiling on this machine: {ceiling:.2f}x "
          f"(loader reaches {ratio / ceiling:.0%} of it)")


def bench_overhead(repeats: int, n_batches: int) -> None:
    batch_size = 32
    n = n_batches * batch_size
    x = np.random.default_rng(0).random((n, 16)).astype(np.float32)
    y = np.arange(n)
    ds = ArrayDataset(x, y)
    print(f"\n[2] Per-batch overhead, cheap samples (16 float32 + int64 label), batch_size={batch_size}, "
          f"{n_batches} batches")
    try:
        import torch
        import torch.utils.data as tud
    except Exception:
        torch = None
    cols = ["ember nw=0", "ember nw=2"] + (["torch nw=0", "torch nw=2"] if torch else [])
    print("    " + " ".join(f"{c:>12}" for c in cols) + "   (median µs per batch, incl. worker start-up)")
    vals = []
    for nw in (0, 2):
        t = _median_time(lambda nw=nw: _drain(DataLoader(ds, batch_size=batch_size, num_workers=nw)), repeats)
        vals.append(t / n_batches * 1e6)
    if torch is not None:
        tds = tud.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
        for nw in (0, 2):
            t = _median_time(lambda nw=nw: _drain(tud.DataLoader(tds, batch_size=batch_size, num_workers=nw)),
                             repeats)
            vals.append(t / n_batches * 1e6)
    print("    " + " ".join(f"{v:>12.1f}" for v in vals))
    if torch is None:
        print("    torch: not importable, comparison columns skipped")
    else:
        print(f"    ratio ember/torch: nw=0 {vals[0] / vals[2]:.2f}x, nw=2 {vals[1] / vals[3]:.2f}x")
    steady = DataLoader(ds, batch_size=batch_size, num_workers=2, persistent_workers=True)
    _drain(steady)
    t = _median_time(lambda: _drain(steady), repeats)
    print(f"    ember nw=2 persistent workers (steady state): {t / n_batches * 1e6:.1f} µs per batch")
    steady = None


def bench_pickled_bytes() -> None:
    print("\n[3] Bytes pickled per batch through the result queue "
          "(sample = float32 image 3x32x32 + int label)")
    print(f"    {'batch':>6} {'payload bytes':>14} {'queue bytes (shm)':>18} {'pickling the batch':>19}")
    writer = shm.SegmentWriter(shm.new_prefix() + "0_")
    image = np.random.default_rng(0).random((3, 32, 32)).astype(np.float32)
    sizes = []
    try:
        for bs in (32, 256, 2048):
            batch = _collate([(image, i) for i in range(bs)], _identity)
            enc = writer.encode(batch, convert_all=True)
            # Exactly what the worker puts on the queue: (generation, task, record).
            queued = len(pickle.dumps((0, 12345, enc), protocol=pickle.HIGHEST_PROTOCOL))
            naive = len(pickle.dumps((0, 12345, batch), protocol=pickle.HIGHEST_PROTOCOL))
            payload = sum(a.nbytes for a in batch)
            shm.discard(enc)
            sizes.append(queued)
            print(f"    {bs:>6} {payload:>14,} {queued:>18,} {naive:>19,}")
    finally:
        shm.sweep(writer.prefix)
    print(f"    constant across batch sizes: {'yes' if len(set(sizes)) == 1 else 'NO'} ({sizes[0]} bytes)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples and repeats")
    args = parser.parse_args()
    repeats = 3 if args.quick else 5
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"ember.data benchmark | python {sys.version.split()[0]} | numpy {np.__version__} | "
          f"{os.cpu_count()} CPUs | 1-min load average at start {load:.2f} | medians of {repeats} runs")
    from _header import target_header
    print(target_header())
    if load > 0.5 * (os.cpu_count() or 1):
        print("  note: the machine is busy; parallel speed-ups below will be understated")
    bench_heavy(repeats, n=192 if args.quick else 384)
    bench_overhead(repeats, n_batches=100 if args.quick else 300)
    bench_pickled_bytes()


if __name__ == "__main__":
    main()
