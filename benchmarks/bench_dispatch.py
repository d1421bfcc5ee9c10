"""Eager dispatch overhead: `x + 1` and other basics on a 10-element float32 array,
and a tiny jitted call.

Each workload is timed against its numpy counterpart interleaved (numpy, ember,
numpy, ember, ...), so a slow spell of the shared machine lands on both; prints
the medians and the median of the per-round ratios, with its spread (min-max)
(and PyTorch / JAX eager `x + 1` when they are installed).

Run:  python benchmarks/bench_dispatch.py [--rounds 9]
"""
import argparse
import statistics
import timeit

import numpy as np

import ember
import ember.numpy as enp


def per_call_us(stmt, number=20000, repeat=7):
    times = timeit.repeat(stmt, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e6


def paired(numpy_fn, ember_fn, rounds, number):
    """(numpy us, ember us, median ratio, min ratio, max ratio) over interleaved rounds."""
    tn, te, ratios = [], [], []
    for _ in range(rounds):
        a = timeit.timeit(numpy_fn, number=number) / number
        b = timeit.timeit(ember_fn, number=number) / number
        tn.append(a)
        te.append(b)
        ratios.append(b / a)
    return (statistics.median(tn) * 1e6, statistics.median(te) * 1e6, statistics.median(ratios),
            min(ratios), max(ratios))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    from _header import target_header
    print(target_header())
    xn = np.ones(10, np.float32)
    xe = enp.asarray(xn)
    workloads = [
        ("x + 1", lambda: xn + 1, lambda: xe + 1, 20000),
        ("x + x", lambda: xn + xn, lambda: xe + xe, 20000),
        ("x * 2.0", lambda: xn * 2.0, lambda: xe * 2.0, 20000),
        ("1 - x", lambda: 1 - xn, lambda: 1 - xe, 20000),
        ("x < 0.5", lambda: xn < 0.5, lambda: xe < 0.5, 20000),
        ("sin(x)", lambda: np.sin(xn), lambda: enp.sin(xe), 20000),
        ("x[0]", lambda: xn[0], lambda: xe[0], 2000),
    ]
    print(f"{'workload':22s} {'numpy us':>9s} {'ember us':>9s} {'ratio':>7s}  (min-max over {args.rounds} rounds)")
    for name, fn, fe, number in workloads:
        a, b, r, lo, hi = paired(fn, fe, args.rounds, number)
        print(f"{name:22s} {a:9.2f} {b:9.2f} {r:6.2f}x  ({lo:.2f}-{hi:.2f})")
    f = ember.jit(lambda x: x + 1)
    f(xe)
    print(f"{'jit(x + 1) call':22s} {'':9s} {per_call_us(lambda: f(xe), number=5000):9.2f}")
    try:
        import torch
        xt = torch.ones(10)
        print(f"{'torch x + 1 (eager)':22s} {'':9s} {per_call_us(lambda: xt + 1):9.2f}")
    except ImportError:
        pass
    try:
        import jax.numpy as jnp
        xj = jnp.ones(10)
        print(f"{'jax x + 1 (eager)':22s} {'':9s} "
              f"{per_call_us(lambda: (xj + 1).block_until_ready(), number=2000):9.2f}")
    except ImportError:
        pass


if __name__ == "__main__":
    main()
