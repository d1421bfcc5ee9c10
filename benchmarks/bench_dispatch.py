"""Eager dispatch overhead: `x + 1` on a 10-element float32 array, and a tiny jitted call.

Prints medians of several runs and the ratio to numpy measured in the same run
(and to PyTorch / JAX eager when they are installed).

Run:  python benchmarks/bench_dispatch.py
"""
import statistics
import timeit

import numpy as np

import ember
import ember.numpy as enp


def per_call_us(stmt, number=20000, repeat=7):
    times = timeit.repeat(stmt, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e6


def main():
    from _header import target_header
    print(target_header())
    xn = np.ones(10, np.float32)
    xe = enp.asarray(xn)
    rows = [("numpy x + 1", per_call_us(lambda: xn + 1))]
    rows.append(("ember x + 1 (eager)", per_call_us(lambda: xe + 1)))
    f = ember.jit(lambda x: x + 1)
    f(xe)
    rows.append(("ember jit(x + 1) call", per_call_us(lambda: f(xe), number=5000)))
    try:
        import torch
        xt = torch.ones(10)
        rows.append(("torch x + 1 (eager)", per_call_us(lambda: xt + 1)))
    except ImportError:
        pass
    try:
        import jax.numpy as jnp
        xj = jnp.ones(10)
        rows.append(("jax x + 1 (eager)", per_call_us(lambda: (xj + 1).block_until_ready(), number=2000)))
    except ImportError:
        pass
    base = rows[0][1]
    print(f"{'workload':28s} {'us/call':>9s} {'vs numpy':>9s}")
    for name, us in rows:
        print(f"{name:28s} {us:9.2f} {us / base:8.1f}x")


if __name__ == "__main__":
    main()
