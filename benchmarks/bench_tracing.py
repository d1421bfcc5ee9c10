"""Tracing and compile time: the MLP 784-512-512-10 training step and a 200-dim Hessian.

Splits the first call of a jitted function into staging (make_graph of the
transformed function) and compilation (scheduling + LLVM), cold and from the
disk cache, so compile-time work has a baseline; then the first call in a new
process, cold and from the disk cache.  Medians of several runs.

Run:  python benchmarks/bench_tracing.py
"""
from __future__ import annotations

import os
import statistics
import tempfile
import time

import numpy as np

import ember
import ember.numpy as enp
from ember.backends.llvm.compiler import clear_memory_cache


def mlp_problem():
    rng = np.random.default_rng(0)
    sizes = [784, 512, 512, 10]
    params = [(enp.asarray((rng.standard_normal((i, o)) / np.sqrt(i)).astype(np.float32)),
               enp.asarray(np.zeros(o, np.float32))) for i, o in zip(sizes[:-1], sizes[1:])]
    x = enp.asarray(rng.standard_normal((128, 784)).astype(np.float32))
    y = enp.asarray(rng.integers(0, 10, 128).astype(np.int32))

    def loss(ps, xv, yv):
        h = xv
        for w, b in ps[:-1]:
            h = enp.maximum(h @ w + b, 0.0)
        w, b = ps[-1]
        logits = h @ w + b
        logp = logits - enp.max(logits, axis=1, keepdims=True)
        logp = logp - enp.log(enp.sum(enp.exp(logp), axis=1, keepdims=True))
        return -enp.mean(enp.take_along_axis(logp, yv[:, None], axis=1))

    def step(ps, xv, yv):
        value, g = ember.value_and_grad(loss)(ps, xv, yv)
        return ember.tree.map(lambda p, d: p - 0.01 * d, ps, g), value

    return step, (params, x, y)


def hessian_problem():
    v = enp.asarray(np.random.default_rng(1).standard_normal(200).astype(np.float32))
    return ember.hessian(lambda t: enp.sum(enp.tanh(t) ** 2) + enp.sum(t) ** 2), (v,)


def measure(name, fun, args, repeat=5):
    stage, cold, warm = [], [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        g = ember.make_graph(fun)(*args)
        stage.append(time.perf_counter() - t0)
        with tempfile.TemporaryDirectory() as d:
            os.environ["EMBER_CACHE_DIR"] = d
            clear_memory_cache()
            t0 = time.perf_counter()
            ember.jit(fun)(*args)
            cold.append(time.perf_counter() - t0)
            clear_memory_cache()
            t0 = time.perf_counter()
            ember.jit(fun)(*args)
            warm.append(time.perf_counter() - t0)
    n_eq = len(g.equations)
    print(f"{name:22s} {n_eq:5d} eqs  staging {statistics.median(stage) * 1e3:8.1f} ms  "
          f"jit first call cold {statistics.median(cold) * 1e3:8.1f} ms  "
          f"from disk cache {statistics.median(warm) * 1e3:8.1f} ms")


_CHILD = """
import time, ember
from bench_tracing import {problem}
fun, args = {problem}()
t0 = time.perf_counter()
ember.jit(fun)(*args)
print((time.perf_counter() - t0) * 1e3)
"""


def measure_fresh(name, problem, repeat=3):
    """The first call in a new process (what a user's script sees): with an empty
    disk cache, everything compiles (the program, ember's gemm library, the worker
    pool); then with the cache that run left."""
    import subprocess
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    code = _CHILD.format(problem=problem)

    def first_call(cache):
        env = dict(os.environ, EMBER_CACHE_DIR=cache, PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("PYTHONDONTWRITEBYTECODE", None)   # as installed: imports read cached bytecode
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        return float(out.stdout.strip().splitlines()[-1])

    cold, warm = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            cold.append(first_call(d))
            warm.append(first_call(d))
    print(f"{name:22s} new process: first call cold {statistics.median(cold):8.1f} ms  "
          f"from disk cache {statistics.median(warm):8.1f} ms")


def main():
    from _header import target_header
    print(target_header())
    measure("mlp train step", *mlp_problem())
    measure("hessian 200-dim", *hessian_problem())
    measure_fresh("mlp train step", "mlp_problem")
    measure_fresh("hessian 200-dim", "hessian_problem")


if __name__ == "__main__":
    main()
