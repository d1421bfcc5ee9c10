"""Chunked `linear_cross_entropy` (forward + backward of a vocabulary projection)
against the unchunked `cross_entropy(x @ W.T)`, and PyTorch's own
`linear_cross_entropy` when torch is installed.  Prints the median ms of value and
gradients, the equation count of ember's gradient graph (constant in N / chunk: the
chunks are one `lax.map`) and the largest residual reverse mode saves.

Run:  python benchmarks/bench_linear_ce.py [--n 4096] [--d 256] [--c 8192] [--chunk 512]
"""
from __future__ import annotations

import argparse

from bench_cpu import bench_args, measure, print_ratios


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--c", type=int, default=8192)
    ap.add_argument("--chunk", type=int, default=512)
    a = bench_args(ap, repeat=5)
    import numpy as np
    import ember
    from ember.nn import functional as F
    from ember.nn.functional.loss_linear import LinearCrossEntropyOptions
    rng = np.random.default_rng(0)
    x = rng.standard_normal((a.n, a.d)).astype(np.float32)
    W = (rng.standard_normal((a.c, a.d)) * 0.05).astype(np.float32)
    t = rng.integers(0, a.c, a.n).astype(np.int32)
    opts = LinearCrossEntropyOptions(batch_chunk_size=a.chunk)
    chunked = lambda x, W: F.linear_cross_entropy(x, W, t, options=opts)  # noqa: E731
    whole = lambda x, W: F.cross_entropy(x @ W.T, t)  # noqa: E731
    fns = {}
    for name, f in (("ember chunked", chunked), ("ember whole", whole)):
        step = ember.jit(ember.value_and_grad(f, argnums=(0, 1)))
        fns[name] = (lambda s: lambda: ember.block_until_ready(s(x, W)))(step)
        eqns = len(ember.make_graph(ember.grad(f, argnums=(0, 1)))(x, W).equations)
        big = max(int(np.prod(r.shape)) for r, _ in ember.saved_residuals(f, x, W))
        print(f"{name}: {eqns} equations in the gradient graph, largest residual {big * 4 / 2**20:.1f} MiB")
    try:
        import torch
        torch.set_num_threads(a.threads)
        tx = torch.tensor(x, requires_grad=True)
        tW = torch.tensor(W, requires_grad=True)
        tt = torch.tensor(t, dtype=torch.int64)

        def torch_step():
            v = torch.nn.functional.linear_cross_entropy(tx, tW, tt)
            gx, gW = torch.autograd.grad(v, (tx, tW))
            return v, gx, gW
        fns["torch"] = torch_step
    except ImportError:
        pass
    print_ratios(measure(fns, a.repeat), "ember chunked")


if __name__ == "__main__":
    main()
