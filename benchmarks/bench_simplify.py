"""Equation counts of nested-derivative graphs before and after `fx.passes.simplify`.

"raw" is the traced graph, "fold+cse+dce" the optimiser without the algebraic pass (what
ran before it), "optimize" the full pipeline that runs before every compile; plus the
steady-state time of each compiled program.

Run:  python benchmarks/bench_simplify.py
"""
from __future__ import annotations

import time

import numpy as np

from _header import target_header

import ember
import ember.numpy as enp
from ember.fx.passes import cse, dce, fold_constants, optimize


def cases():
    out = []
    g = lambda x: enp.tanh(enp.sin(x))  # noqa: E731
    x = enp.asarray(0.3, dtype="float64")
    for k in range(1, 7):
        g = ember.grad(g)
        out.append((f"grad^{k} tanh(sin x)", g, (x,)))
    rng = np.random.default_rng(0)
    w1 = enp.asarray(rng.normal(size=(8, 32)))
    w2 = enp.asarray(rng.normal(size=(32, 32)))
    w3 = enp.asarray(rng.normal(size=(32, 1)))
    mlp = lambda v: enp.sum(enp.tanh(enp.tanh(enp.tanh(v @ w1) @ w2) @ w3))  # noqa: E731
    v = enp.asarray(rng.normal(size=(8,)))
    out.append(("hessian 8-32-32-1 tanh MLP", ember.hessian(mlp), (v,)))
    out.append(("jacfwd(hessian) MLP", ember.jacfwd(ember.hessian(mlp)), (v,)))
    return out


def main():
    print(target_header())
    print(f"{'graph':32s} {'raw':>7s} {'fold+cse+dce':>13s} {'optimize':>9s} {'run us':>8s}")
    for name, f, args in cases():
        cg = ember.make_graph(f)(*args)
        old = dce(cse(fold_constants(cg.graph)))
        new = optimize(cg)
        jf = ember.jit(f)
        jf(*args)
        ts = []
        for _ in range(200):
            t = time.perf_counter()
            jf(*args)
            ts.append(time.perf_counter() - t)
        print(f"{name:32s} {len(cg.graph.equations):7d} {len(old.equations):13d} "
              f"{len(new.graph.equations):9d} {1e6 * float(np.median(ts)):8.1f}")


if __name__ == "__main__":
    main()
