"""Run under `mpiexec -n 2` by test_mpi.py: one scenario per invocation.

    python _mpi_worker.py train OUT.npz        # 20 data-parallel TrainStep steps
    python _mpi_worker.py single OUT.npz       # the same steps, one process, full batch
    python _mpi_worker.py collectives OUT.npz  # psum/all_gather/ppermute/axis_index across ranks
                                               # (on EMBER_TEST_DEVICE's arrays when set)
    python _mpi_worker.py overlap OUT.npz      # 20 steps with overlapped bucket all-reduces, then
                                               # 20 with blocking ones (EMBER_OVERLAP_COLLECTIVES off)
    python _mpi_worker.py die                  # rank 1 exits at step 5
    python _mpi_worker.py skip                 # rank 1 never joins a collective
"""
from __future__ import annotations

import os
import sys

import numpy as np

import ember
import ember.numpy as enp
from ember import distributed as dist, lax, nn, optim

STEPS, BATCH = 20, 64


def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCH, 6)).astype(np.float32)
    y = (x @ rng.normal(size=(6, 1)) + 0.1).astype(np.float32)
    return x, y


def model_and_step(distributed, bucket_bytes=None, hidden=()):
    nn.manual_seed(0)
    widths = (6, 16) + tuple(hidden)
    layers = []
    for a, b in zip(widths, widths[1:]):
        layers += [nn.Linear(a, b), nn.Tanh()]
    model = nn.Sequential(*layers, nn.Linear(widths[-1], 1))
    opt = optim.Adam(model, lr=1e-2)
    step = nn.TrainStep(model, opt, lambda m, x, y: nn.functional.mse_loss(m(x), y),
                        distributed=distributed, bucket_bytes=bucket_bytes)
    return model, step


def overlapped_steps(step) -> int:
    """How many all-reduce starts the step's compiled program runs (0: blocking)."""
    from ember.backends.kernels import CollectiveStart
    (entry,) = step._fn._cache.values()          # one compile: one traced graph
    exe = entry.graph._cache["cpu"]
    return sum(isinstance(s, CollectiveStart) for s in exe.program.steps)


def save(path, model, losses):
    np.savez(path, losses=np.asarray(losses), **{k: np.asarray(v) for k, v in model.named_parameters()})


def main(argv):
    what = argv[0]
    x, y = data()
    if what == "single":
        model, step = model_and_step(False)
        losses = [float(step(enp.asarray(x), enp.asarray(y))) for _ in range(STEPS)]
        save(argv[1], model, losses)
        return
    comm = dist.init()
    r, n = dist.rank(), dist.world_size()
    assert n == 2, n
    if what == "train":
        if r == 1:
            nn.manual_seed(123)             # rank 1 starts elsewhere: the broadcast must fix it
        model, step = model_and_step(True)
        shard = slice(r * BATCH // n, (r + 1) * BATCH // n)
        xs, ys = enp.asarray(x[shard]), enp.asarray(y[shard])
        losses = [float(step(xs, ys)) for _ in range(STEPS)]
        save(argv[1].replace(".npz", f".rank{r}.npz"), model, losses)
    elif what == "collectives":
        v = enp.asarray(np.arange(3, dtype=np.float32) + 10 * r)
        if os.environ.get("EMBER_TEST_DEVICE"):     # e.g. "cuda" with EMBER_DISTRIBUTED_BACKEND=nccl
            v = ember.device_put(v, os.environ["EMBER_TEST_DEVICE"])
        f = dist.data_parallel(lambda v: (lax.psum(v, "batch"), lax.pmax(v, "batch"),
                                          lax.all_gather(v, "batch"),
                                          lax.ppermute(v, "batch", [(0, 1), (1, 0)]),
                                          lax.axis_index("batch"),
                                          lax.all_to_all(enp.stack([v, -v]), "batch", 0, 0)))
        outs = f(v)
        np.savez(argv[1].replace(".npz", f".rank{r}.npz"), *[np.asarray(o) for o in outs])
    elif what == "overlap":
        shard = slice(r * BATCH // n, (r + 1) * BATCH // n)
        xs, ys = enp.asarray(x[shard]), enp.asarray(y[shard])
        runs = {}
        for mode in ("overlapped", "blocking"):
            ember.config.update("overlap_collectives", mode == "overlapped")
            # 300 bytes: several buckets, so several reductions are in flight at once
            model, step = model_and_step(True, bucket_bytes=300, hidden=(16, 16))
            losses = [float(step(xs, ys)) for _ in range(STEPS)]
            runs[mode] = (model, losses, overlapped_steps(step))
        for mode, (model, losses, starts) in runs.items():
            np.savez(argv[1].replace(".npz", f".{mode}.rank{r}.npz"), losses=np.asarray(losses),
                     starts=starts, **{k: np.asarray(v) for k, v in model.named_parameters()})
    elif what == "die":
        model, step = model_and_step(True, bucket_bytes=300)
        for i in range(STEPS):
            if r == 1 and i == 5:
                os._exit(3)
            step(enp.asarray(x[:32]), enp.asarray(y[:32]))
    elif what == "skip":
        f = dist.data_parallel(lambda v: lax.psum(v, "batch"))
        if r == 0:
            f(enp.ones(2))
        else:
            import time
            time.sleep(30)                  # alive but absent: rank 0's psum cannot complete
    comm.barrier() if what != "skip" else None


if __name__ == "__main__":
    main(sys.argv[1:])
