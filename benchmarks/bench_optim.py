"""Benchmark one optimiser step of ember.optim against numpy and torch.optim.

Run from the repository root::

    python benchmarks/bench_optim.py [--quick]

For Adam and SGD-with-momentum over a small MLP-shaped pytree (about 0.3M
float32 parameters in 6 arrays) it times, as medians of several runs:

1. the shim's `step` (one jitted update; hyperparameters fed as arrays),
2. a jitted functional `update` + `apply_updates`,
3. a hand-written numpy loop with PyTorch's formula (the floor for an eager
   implementation),
4. `torch.optim` (foreach) when torch is importable,

and prints each as a ratio to numpy.  It also reports how many times the jitted
step compiled while the learning rate changed every step (expected: 1).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember
import ember.numpy as enp
from ember import optim, tree

SHAPES = {"l1": {"w": (256, 512), "b": (512,)}, "l2": {"w": (512, 256), "b": (256,)},
          "l3": {"w": (256, 64), "b": (64,)}}


def make_params(rng):
    return tree.map(lambda s: rng.normal(size=s).astype(np.float32) * 0.05, SHAPES,
                    is_leaf=lambda x: isinstance(x, tuple))


def timeit(fn, repeat, number):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def numpy_adam(params, grads, state, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    out = []
    for p, g, (m, v) in zip(params, grads, state):
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * g * g
        denom = np.sqrt(v) / np.sqrt(1 - b2 ** t) + eps
        out.append(p - lr / (1 - b1 ** t) * m / denom)
    return out


def numpy_sgd(params, grads, bufs, lr=1e-3, momentum=0.9):
    out = []
    for p, g, buf in zip(params, grads, bufs):
        buf *= momentum
        buf += g
        out.append(p - lr * buf)
    return out


def bench(name, repeat, number):
    rng = np.random.default_rng(0)
    params_np = make_params(rng)
    grads_np = tree.map(lambda p: rng.normal(size=p.shape).astype(np.float32), params_np)
    params = tree.map(enp.asarray, params_np)
    grads = tree.map(enp.asarray, grads_np)
    results = {}

    cls, fn, kw = {"adam": (optim.Adam, optim.adam, dict(lr=1e-3)),
                   "sgd": (optim.SGD, optim.sgd, dict(lr=1e-3, momentum=0.9))}[name]

    opt = cls(params, **kw)
    counter = [0]

    def shim_step():
        counter[0] += 1
        opt.param_groups[0]["lr"] = 1e-3 / (1 + 1e-3 * counter[0])
        out = opt.step(grads)
        np.asarray(tree.leaves(out)[0])
    shim_step()
    results["ember shim step"] = timeit(shim_step, repeat, number)

    tx = fn(**kw)
    state = [tx.init(params)]
    p_box = [params]

    @ember.jit
    def fstep(p, g, s):
        u, s = tx.update(g, s, p)
        return optim.apply_updates(p, u), s

    def functional_step():
        p_box[0], state[0] = fstep(p_box[0], grads, state[0])
        np.asarray(tree.leaves(p_box[0])[0])
    functional_step()
    results["ember jit(update)"] = timeit(functional_step, repeat, number)

    flat_p, flat_g = tree.leaves(params_np), tree.leaves(grads_np)
    if name == "adam":
        np_state = [(np.zeros_like(p), np.zeros_like(p)) for p in flat_p]
        t_box = [0]

        def numpy_step():
            t_box[0] += 1
            numpy_adam(flat_p, flat_g, np_state, t_box[0])
    else:
        bufs = [np.zeros_like(p) for p in flat_p]

        def numpy_step():
            numpy_sgd(flat_p, flat_g, bufs)
    results["numpy loop"] = timeit(numpy_step, repeat, number)

    try:
        import torch
        tparams = [torch.tensor(p, requires_grad=True) for p in flat_p]
        for tp, g in zip(tparams, flat_g):
            tp.grad = torch.tensor(g)
        topt = (torch.optim.Adam if name == "adam" else torch.optim.SGD)(tparams, **kw)

        def torch_step():
            topt.step()
        torch_step()
        results["torch.optim"] = timeit(torch_step, repeat, number)
    except ImportError:
        pass

    base = results["numpy loop"]
    print(f"\n{name}: {sum(int(np.prod(s)) for s in tree.leaves(SHAPES, is_leaf=lambda x: isinstance(x, tuple)))} "
          f"float32 parameters")
    for k, v in results.items():
        print(f"  {k:20s} {v * 1e3:8.3f} ms   {v / base:6.2f}x numpy")
    print(f"  shim step compiled {opt._compiled.compile_count} time(s) over {counter[0]} steps "
          f"with a new lr each step")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = ap.parse_args()
    repeat, number = (3, 3) if args.quick else (7, 10)
    from _header import target_header
    print(target_header())
    for name in ("adam", "sgd"):
        bench(name, repeat, number)


if __name__ == "__main__":
    main()
