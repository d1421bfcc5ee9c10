"""Mixed precision and data parallelism on the digits MLP and the char transformer.

    python benchmarks/bench_amp_distributed.py            # precision table + 1 vs N ranks
    python benchmarks/bench_amp_distributed.py --ranks 4  # N ranks (needs mpiexec)

Part 1 times the training step (median ms over the steps after the first,
which compiles) and the final test accuracy / validation loss for fp32, bf16
and fp16 (with loss scaling). Part 2 runs the data-parallel digits step on 1
and N ranks (`mpiexec -n N` of this file in worker mode): samples/s, and the
share of the step spent in the gradient all-reduce (timed separately on the
same gradient sizes).
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


def worker(steps: int, batch: int):
    """One rank: time the data-parallel digits step and a bare all-reduce of its gradients."""
    import ember
    import ember.numpy as enp
    from ember import distributed as dist, lax, nn, optim
    from ember.data import load_digits
    import train_digits
    comm = dist.init()
    r, n = comm.rank, comm.size
    train = load_digits("train")
    x, y = train.arrays
    nn.manual_seed(0)
    model = train_digits.build_model("mlp", 256, 0.0)
    step = nn.TrainStep(model, optim.AdamW(model, lr=1e-3),
                        lambda m, a, b: nn.functional.cross_entropy(m(a), b), distributed=True)
    per = batch // n
    times = []
    for i in range(steps):
        lo = (i * batch + r * per) % (len(x) - per)
        xs, ys = enp.asarray(x[lo:lo + per]), enp.asarray(y[lo:lo + per])
        t = time.perf_counter()
        float(step(xs, ys))
        times.append(time.perf_counter() - t)
    grads = {k: enp.zeros_like(v) for k, v in model.named_parameters()}
    reduce = dist.data_parallel(lambda g: dist.all_reduce_gradients(g, "batch"))
    reduce(grads)
    ar = []
    for _ in range(steps):
        t = time.perf_counter()
        reduce(grads)
        ar.append(time.perf_counter() - t)
    if r == 0:
        step_s, ar_s = statistics.median(times[1:]), statistics.median(ar)
        print(json.dumps({"ranks": n, "batch": batch, "step_ms": 1e3 * step_s,
                          "samples_per_s": batch / step_s, "allreduce_ms": 1e3 * ar_s,
                          "allreduce_share": ar_s / step_s}))


def scaling_table(ranks: int, steps: int, batch: int):
    mpiexec = shutil.which("mpiexec")
    env = dict(os.environ, EMBER_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    results = []
    for n in (1, ranks):
        cmd = ([mpiexec, "-n", str(n)] if mpiexec and n > 1 else []) + [
            sys.executable, __file__, "--worker", "--steps", str(steps), "--batch", str(batch)]
        if n > 1 and not mpiexec:
            print(f"(no mpiexec: skipping {n} ranks; pip install -e '.[distributed]')")
            continue
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        line = [l for l in out.stdout.splitlines() if l.startswith("{")]
        if not line:
            print(out.stdout[-2000:], out.stderr[-2000:])
            continue
        results.append(json.loads(line[-1]))
    print(f"\ndata-parallel digits MLP step, global batch {batch}, EMBER_NUM_THREADS=1 per rank")
    print("| ranks | step ms | samples/s | all-reduce ms | all-reduce share |")
    print("|---|---|---|---|---|")
    for r in results:
        print(f"| {r['ranks']} | {r['step_ms']:.2f} | {r['samples_per_s']:.0f} | "
              f"{r['allreduce_ms']:.2f} | {100 * r['allreduce_share']:.0f}% |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--skip-precision", action="store_true")
    args = ap.parse_args()
    if args.worker:
        worker(args.steps, args.batch)
        return
    print(target_header())
    print(f"machine load (1/5/15 min): {os.getloadavg()}")
    if not args.skip_precision:
        precision_table()
    scaling_table(args.ranks, args.steps, args.batch)


if __name__ == "__main__":
    main()
