"""Mixed precision and data parallelism on the digits MLP and the char transformer.

    python benchmarks/bench_amp_distributed.py            # precision table + 1 vs N ranks
    python benchmarks/bench_amp_distributed.py --ranks 4  # N ranks (needs mpiexec)

Part 1 times the training step (median ms over the steps after the first,
which compiles) and the final test accuracy / validation loss for fp32, bf16
and fp16 (with loss scaling). Part 2 runs the data-parallel digits step on 1
and N ranks (`mpiexec -n N` of this file in worker mode), compiled with the
bucket all-reduces overlapped with the backward pass and blocking
(EMBER_OVERLAP_COLLECTIVES), for each `--bucket-bytes`: samples/s, the share
of the step a bare all-reduce of the same gradients takes, and the time the
step spent blocked waiting for its reductions (what the overlap did not hide).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from _header import target_header  # noqa: E402 (puts the repo on sys.path)

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))


def precision_table():
    import train_digits
    import char_transformer
    rows = []
    for prec in ("fp32", "bf16", "fp16"):
        d = train_digits.main(["--epochs", "10", "--no-plot", "--precision", prec,
                               "--out-dir", f"/tmp/ember_bench_amp/{prec}"])
        c = char_transformer.main(["--steps", "60", "--eval-every", "30", "--d-model", "64",
                                   "--n-layer", "2", "--n-head", "4", "--block-size", "32",
                                   "--batch-size", "16", "--eval-windows", "16", "--warmup", "10",
                                   "--sample-chars", "0", "--no-plot", "--precision", prec])
        rows.append((prec, d["ms_per_step"], d["test_accuracy"], c["ms_per_step"], c["val_loss"]))
    print("\n| precision | digits ms/step | digits test acc | char-transformer ms/step | val loss |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]:.1f} | {r[2]:.4f} | {r[3]:.1f} | {r[4]:.3f} |")


def worker(steps: int, batch: int, bucket_bytes: int, hidden: int):
    """One rank: the data-parallel digits step compiled with overlapped and with
    blocking bucket all-reduces (two TrainSteps from the same initialisation, timed
    alternately so both see the same machine load), the time each step spends
    blocked waiting for the reductions (the communication not hidden), and a bare
    all-reduce of the gradients."""
    import ember.numpy as enp
    from ember import config, distributed as dist, nn, optim
    from ember.data import load_digits
    import train_digits
    comm = dist.init()
    r, n = comm.rank, comm.size
    train = load_digits("train")
    x, y = train.arrays
    per = batch // n
    modes = ("overlapped", "blocking")
    runs = {}
    for mode in modes:
        config.update("overlap_collectives", mode == "overlapped")   # read when the step compiles
        nn.manual_seed(0)
        model = train_digits.build_model("mlp", hidden, 0.0)
        step = nn.TrainStep(model, optim.AdamW(model, lr=1e-3),
                            lambda m, a, b: nn.functional.cross_entropy(m(a), b), distributed=True,
                            bucket_bytes=bucket_bytes)
        runs[mode] = (step, [], [])
    wait = lambda: getattr(comm, "wait_seconds", 0.0)  # noqa: E731
    for i in range(steps):
        lo = (i * batch + r * per) % (len(x) - per)
        xs, ys = enp.asarray(x[lo:lo + per]), enp.asarray(y[lo:lo + per])
        for mode in (modes if i % 2 else modes[::-1]):
            step, times, waits = runs[mode]
            comm.barrier()      # every rank starts the step together: no skew carried over
            w0, t = wait(), time.perf_counter()
            float(step(xs, ys))
            times.append(time.perf_counter() - t)
            waits.append(wait() - w0)
    model = runs["blocking"][0].model
    grads = {k: enp.zeros_like(v) for k, v in model.named_parameters()}
    reduce = dist.data_parallel(lambda g: dist.all_reduce_gradients(g, "batch", bucket_bytes=bucket_bytes))
    reduce(grads)
    ar = []
    for _ in range(steps):
        comm.barrier()
        t = time.perf_counter()
        reduce(grads)
        ar.append(time.perf_counter() - t)
    ar_s = statistics.median(ar)
    from ember.distributed._gradients import buckets
    from ember.fx.core import get_aval
    n_buckets = len(buckets([get_aval(v) for v in grads.values()], bucket_bytes))
    for mode in modes:
        step, times, waits = runs[mode]
        step_s, wait_s = statistics.median(times[1:]), statistics.median(waits[1:])
        spread = (statistics.quantiles(times[1:], n=4) if len(times) > 4 else [step_s, step_s, step_s])
        if r == 0:
            print(json.dumps({"ranks": n, "batch": batch, "bucket_bytes": bucket_bytes, "buckets": n_buckets,
                              "mode": mode, "step_ms": 1e3 * step_s, "q1_ms": 1e3 * spread[0],
                              "q3_ms": 1e3 * spread[2], "min_ms": 1e3 * min(times[1:]),
                              "min_waited_ms": 1e3 * min(waits[1:]), "samples_per_s": batch / step_s,
                              "allreduce_ms": 1e3 * ar_s, "allreduce_share": ar_s / step_s,
                              "exposed_ms": 1e3 * wait_s, "exposed_share": wait_s / step_s}))


def scaling_table(ranks: int, steps: int, batch: int, bucket_sizes, hidden: int):
    mpiexec = shutil.which("mpiexec")
    env = dict(os.environ, EMBER_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    results = []
    for n in (1, ranks):
        for bucket_bytes in bucket_sizes:
            cmd = ([mpiexec, "-n", str(n)] if mpiexec and n > 1 else []) + [
                sys.executable, __file__, "--worker", "--steps", str(steps), "--batch", str(batch),
                "--bucket-bytes", str(bucket_bytes), "--hidden", str(hidden)]
            if n > 1 and not mpiexec:
                print(f"(no mpiexec: skipping {n} ranks; pip install -e '.[distributed]')")
                continue
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
            lines = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
            if not lines:
                print(out.stdout[-2000:], out.stderr[-2000:])
            results.extend(lines)
    print(f"\ndata-parallel digits MLP step (hidden {hidden}), global batch {batch}, EMBER_NUM_THREADS=1 per rank, "
          f"{steps} steps per mode (modes alternate step by step, a barrier before each); "
          "median ms [quartiles], min; samples/s from the median")
    print("| ranks | bucket_bytes (buckets) | all-reduce | step ms | min ms | samples/s | bare all-reduce ms | "
          "all-reduce share | waited ms (not hidden), min | waited share |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['ranks']} | {r['bucket_bytes']} ({r['buckets']}) | {r['mode']} | {r['step_ms']:.2f} "
              f"[{r['q1_ms']:.2f}-{r['q3_ms']:.2f}] | {r['min_ms']:.2f} | {r['samples_per_s']:.0f} | "
              f"{r['allreduce_ms']:.2f} | {100 * r['allreduce_share']:.0f}% | {r['exposed_ms']:.2f}, "
              f"{r['min_waited_ms']:.2f} | {100 * r['exposed_share']:.0f}% |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=256, help="the MLP's hidden width")
    ap.add_argument("--bucket-bytes", type=int, nargs="*", default=[25 << 20, 16 << 10],
                    help="bucket sizes to run (default: DDP's 25 MiB, one bucket for this model, "
                         "and 16 KiB, several)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--skip-precision", action="store_true")
    args = ap.parse_args()
    if args.worker:
        worker(args.steps, args.batch, args.bucket_bytes[0], args.hidden)
        return
    print(target_header())
    print(f"machine load (1/5/15 min): {os.getloadavg()}")
    if not args.skip_precision:
        precision_table()
    scaling_table(args.ranks, args.steps, args.batch, args.bucket_bytes, args.hidden)


if __name__ == "__main__":
    main()
