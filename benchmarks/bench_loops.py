"""Native loops (scan / while_loop inside compiled programs) against JAX on the CPU.

Measures, each for ember and JAX in the same run (medians of interleaved rounds):

- per-iteration overhead of a tiny scan body, a tiny while_loop body and a
  tiny scan body with a `cond` on its carry (the time difference between a
  long and a short loop, per extra iteration);
- `jit(grad)` of a tanh RNN through `scan` (hidden 32, batch 8, T = 100 and 1000, float32),
  and of a piecewise one (a `cond` on the state in every step, T = 100);
- `jit(grad)` through a fixed-point solver (`while_loop` + `custom_vjp`, n = 64).

Measured on a 2-core znver3 VM (AVX2, load ~1.3), medians of 5 (3 for the driver):

    case                         Python driver   native loops   JAX 0.10
    scan us/iter                     3.52           0.018         0.006
    while us/iter                    5.31           0.021         0.004
    rnn grad T=100 ms                2.71           0.30          0.77
    rnn grad T=1000 ms              28.4            3.27          8.2
    fixed-point jit(grad) ms         0.306          0.029         0.034-0.038

The scan with a `cond` body (the branch run natively by the loop VM's SWITCH since
2026-12-02; before, the whole scan fell back to the Python driver), same VM,
load 0.8-1.5, two interleaved runs of each, medians of 7:

    scan+cond us/iter                8.14-8.17      0.027-0.030   0.006

and, in a later pair of runs at load ~4 (noisy: spreads up to 2x), the grad of the
piecewise RNN (T = 100):

    piecewise rnn grad T=100 ms      8.59           0.263-0.271   0.88-1.75

Run: ``python benchmarks/bench_loops.py [--rounds N]`` (JAX is optional: without
it only ember's numbers print).  To compare with the Python driver, run the
same script against a checkout without native loops (``PYTHONPATH=/path/to/it``).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _header import target_header  # noqa: E402

import numpy as np  # noqa: E402

import ember  # noqa: E402
import ember.numpy as enp  # noqa: E402

try:
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_platforms", "cpu")
except Exception:  # noqa: BLE001 - JAX is optional here
    jax = None

H, B = 32, 8
N_FIX = 64


def _time(fn, *args, reps):
    """Seconds per call of `fn(*args)` (blocking on the result), best of a few batches."""
    out = fn(*args)
    _block(out)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(reps):
            out = fn(*args)
        _block(out)
        best = min(best, (time.perf_counter() - t) / reps)
    return best


def _block(out):
    if jax is not None:
        for leaf in jax.tree_util.tree_leaves(out):
            if hasattr(leaf, "block_until_ready"):
                leaf.block_until_ready()


# --- the workloads, written once per framework ----------------------------------------------------

def tiny_scan(lib, scan):
    def f(c, xs):
        return scan(lambda c, x: (c * 0.5 + x, c), c, xs)
    return f


def cond_scan(cond, scan):
    """A tiny body that branches on its carry every iteration."""
    def f(c, xs):
        def body(c, x):
            c = cond(c > 1.0, lambda c: c * 0.5 - x, lambda c: c + x, c)
            return c, c
        return scan(body, c, xs)
    return f


def tiny_while(lib, while_loop):
    def f(n, v):
        def body(s):
            i, v = s
            return i + 1, v * 0.5 + 1.0
        return while_loop(lambda s: s[0] < n, body, (np.int32(0), v))[1]
    return f


def rnn_loss(np_, scan):
    def loss(W, U, xs, h0):
        def step(h, x):
            h = np_.tanh(h @ W + x @ U)
            return h, h.sum()
        h, ys = scan(step, h0, xs)
        return (h ** 2).sum() + ys.sum()
    return loss


def piecewise_rnn_loss(np_, scan, cond):
    """The RNN with a cell that branches on its state (a `cond` per step; its
    transpose in the backward scan)."""
    def loss(W, U, xs, h0):
        def step(h, x):
            h = cond(h.sum() > 0, lambda h: np_.tanh(h @ W + x @ U), lambda h: h * 0.5 - x @ U, h)
            return h, h.sum()
        h, ys = scan(step, h0, xs)
        return (h ** 2).sum() + ys.sum()
    return loss


def fixed_point(np_, while_loop, custom_vjp):
    """x* = tanh(A x* + b), by iteration to a tolerance; its VJP solves the
    adjoint fixed point u = g + (A^T (1 - x*^2)) u the same way."""
    def iterate(f, x0):
        def cond(s):
            x, dx, k = s
            return (dx > 1e-6) & (k < 200)

        def body(s):
            x, _, k = s
            y = f(x)
            return y, np_.max(np_.abs(y - x)), k + 1
        return while_loop(cond, body, (x0, np.float32(1.0), np.int32(0)))[0]

    @custom_vjp
    def solve(A, b):
        return iterate(lambda x: np_.tanh(A @ x + b), np_.zeros_like(b))

    def fwd(A, b):
        x = solve(A, b)
        return x, (A, x)

    def bwd(res, g):
        A, x = res
        d = 1.0 - x * x
        u = iterate(lambda u: g + A.T @ (d * u), np_.zeros_like(g))
        v = d * u
        return np_.outer(v, x), v

    solve.defvjp(fwd, bwd)

    def loss(A, b):
        return (solve(A, b) ** 2).sum()
    return loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(target_header())
    print(f"ember from {os.path.dirname(ember.__file__)}; JAX {jax.__version__ if jax else 'absent'}; "
          f"load {os.getloadavg()[0]:.2f}")
    rng = np.random.default_rng(0)
    cases = {}
    # Arguments are each framework's own arrays, made once (as a user's would be):
    # converting numpy arguments costs jit calls ~100 us in ember today (jit's
    # argument handling, not the loops).
    E = lambda *xs: [ember.numpy.asarray(x) for x in xs]  # noqa: E731
    J = (lambda *xs: [jax.device_put(x) for x in xs]) if jax else None  # noqa: E731

    # per-iteration overhead: (t(long) - t(short)) / (long - short)
    short, long_ = 10, 20010
    xs_s, xs_l, zero = np.ones(short, np.float32), np.ones(long_, np.float32), np.float32(0)
    n_s, n_l = np.int32(short), np.int32(long_)

    def overhead(run, conv, make):
        f = make()
        c, xl, xs, nl, ns = conv(zero, xs_l, xs_s, n_l, n_s)
        if run == "scan":
            return lambda: (_time(f, c, xl, reps=5) - _time(f, c, xs, reps=5)) / (long_ - short) * 1e6
        return lambda: (_time(f, nl, c, reps=5) - _time(f, ns, c, reps=5)) / (long_ - short) * 1e6

    cases["scan us/iter"] = [("ember", overhead("scan", E, lambda: ember.jit(tiny_scan(enp, ember.scan))))]
    cases["while us/iter"] = [("ember", overhead("while", E, lambda: ember.jit(tiny_while(enp, ember.while_loop))))]
    cases["scan+cond us/iter"] = [("ember", overhead("scan", E, lambda: ember.jit(cond_scan(ember.lax.cond,
                                                                                              ember.scan))))]
    if jax is not None:
        cases["scan us/iter"].append(("jax", overhead("scan", J, lambda: jax.jit(tiny_scan(jnp, jax.lax.scan)))))
        cases["scan+cond us/iter"].append(
            ("jax", overhead("scan", J, lambda: jax.jit(cond_scan(jax.lax.cond, jax.lax.scan)))))
        cases["while us/iter"].append(
            ("jax", overhead("while", J, lambda: jax.jit(tiny_while(jnp, jax.lax.while_loop)))))

    W = (rng.standard_normal((H, H)) * 0.1).astype(np.float32)
    U = (rng.standard_normal((H, H)) * 0.1).astype(np.float32)
    h0 = np.zeros((B, H), np.float32)
    e_rnn = ember.jit(ember.grad(rnn_loss(enp, ember.scan), argnums=(0, 1)))
    j_rnn = jax.jit(jax.grad(rnn_loss(jnp, jax.lax.scan), argnums=(0, 1))) if jax else None
    for T in (100, 1000):
        xs = rng.standard_normal((T, B, H)).astype(np.float32)
        reps = 20 if T == 100 else 4
        name = f"rnn grad T={T} ms"
        ea = E(W, U, xs, h0)
        cases[name] = [("ember", lambda ea=ea, reps=reps: _time(e_rnn, *ea, reps=reps) * 1e3)]
        if jax is not None:
            ja = J(W, U, xs, h0)
            cases[name].append(("jax", lambda ja=ja, reps=reps: _time(j_rnn, *ja, reps=reps) * 1e3))
        ge = e_rnn(*ea)
        if jax is not None:
            gj = j_rnn(*ja)
            err = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in zip(ge, gj))
            print(f"  rnn T={T}: max |ember - jax| of the gradients = {err:.2e}")

    xs = rng.standard_normal((100, B, H)).astype(np.float32)
    e_pw = ember.jit(ember.grad(piecewise_rnn_loss(enp, ember.scan, ember.lax.cond), argnums=(0, 1)))
    pw_e = E(W, U, xs, h0)
    cases["piecewise rnn grad T=100 ms"] = [("ember", lambda: _time(e_pw, *pw_e, reps=20) * 1e3)]
    if jax is not None:
        j_pw = jax.jit(jax.grad(piecewise_rnn_loss(jnp, jax.lax.scan, jax.lax.cond), argnums=(0, 1)))
        pw_j = J(W, U, xs, h0)
        cases["piecewise rnn grad T=100 ms"].append(("jax", lambda: _time(j_pw, *pw_j, reps=20) * 1e3))
        err = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in zip(e_pw(*pw_e), j_pw(*pw_j)))
        print(f"  piecewise rnn: max |ember - jax| of the gradients = {err:.2e}")

    A = (rng.standard_normal((N_FIX, N_FIX)) * 0.3 / np.sqrt(N_FIX)).astype(np.float32)
    bvec = rng.standard_normal(N_FIX).astype(np.float32)
    e_fix = ember.jit(ember.grad(fixed_point(enp, ember.while_loop, ember.custom_vjp), argnums=(0, 1)))
    ea, ja = E(A, bvec), (J(A, bvec) if jax else None)
    cases["fixed-point jit(grad) n=64 ms"] = [("ember", lambda: _time(e_fix, *ea, reps=50) * 1e3)]
    if jax is not None:
        j_fix = jax.jit(jax.grad(fixed_point(jnp, jax.lax.while_loop, jax.custom_vjp), argnums=(0, 1)))
        cases["fixed-point jit(grad) n=64 ms"].append(("jax", lambda: _time(j_fix, *ja, reps=50) * 1e3))
        ge, gj = e_fix(*ea), j_fix(*ja)
        err = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in zip(ge, gj))
        print(f"  fixed point: max |ember - jax| of the gradients = {err:.2e}")

    results = {name: {who: [] for who, _ in runs} for name, runs in cases.items()}
    for _ in range(args.rounds):   # interleaved rounds: both frameworks see the same machine load
        for name, runs in cases.items():
            for who, fn in runs:
                results[name][who].append(fn())
    print(f"{'case':34s} {'ember':>10s} {'jax':>10s} {'ember/jax':>10s}   (median of {args.rounds}; spread)")
    for name, by in results.items():
        e = statistics.median(by["ember"])
        spread = (max(by["ember"]) - min(by["ember"])) / e if e else 0.0
        j = statistics.median(by["jax"]) if "jax" in by else None
        ratio = f"{e / j:10.2f}" if j else " " * 10
        print(f"{name:34s} {e:10.3f} {j if j is not None else float('nan'):10.3f} {ratio}   ({spread:.0%})")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
