"""Gradient of a scatter-multiply with repeated indices, `x.at[idx].multiply(y)`
(N updates onto M positions), against PyTorch's `scatter_reduce(..., "prod")`
backward and the forward pass alone (ember jitted and numpy's `np.multiply.at`).
ember's rule forms every update's "product of the others" by products only (exact
with zero updates to every order); torch divides by the updates.  JAX raises for
this gradient (scatter_mul gradients need unique indices), so it has no row.

Run:  python benchmarks/bench_scatter_mul.py [--n 200000] [--m 1000] [--zeros 0.01]
"""
from __future__ import annotations

import argparse

from bench_cpu import bench_args, measure, print_ratios


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--m", type=int, default=1000)
    ap.add_argument("--zeros", type=float, default=0.01, help="share of updates that are 0")
    a = bench_args(ap, repeat=7)
    import numpy as np
    import ember
    import ember.numpy as enp
    rng = np.random.default_rng(0)
    idx = rng.integers(0, a.m, a.n)
    y = rng.uniform(0.999, 1.001, a.n).astype(np.float32)
    y[rng.random(a.n) < a.zeros] = 0.0
    x = rng.standard_normal(a.m).astype(np.float32)

    def f(x, y):
        return enp.sum(x.at[idx].multiply(y) ** 2)

    grad = ember.jit(ember.grad(f, argnums=(0, 1)))
    fwd = ember.jit(lambda x, y: x.at[idx].multiply(y))
    print(f"gradient graph: {len(ember.make_graph(ember.grad(f, argnums=(0, 1)))(x, y).equations)} equations")

    def np_fwd():
        out = x.copy()
        np.multiply.at(out, idx, y)
        return out
    fns = {"ember jit(grad)": lambda: ember.block_until_ready(grad(x, y)),
           "ember jit(forward)": lambda: ember.block_until_ready(fwd(x, y)),
           "numpy forward": np_fwd}
    try:
        import torch
        torch.set_num_threads(a.threads)
        tx = torch.tensor(x, requires_grad=True)
        ty = torch.tensor(y, requires_grad=True)
        ti = torch.tensor(idx, dtype=torch.int64)

        def torch_grad():
            out = tx.scatter_reduce(0, ti, ty, "prod")
            return torch.autograd.grad((out ** 2).sum(), (tx, ty))
        fns["torch grad"] = torch_grad
    except ImportError:
        pass
    print_ratios(measure(fns, a.repeat), "ember jit(grad)")


if __name__ == "__main__":
    main()
