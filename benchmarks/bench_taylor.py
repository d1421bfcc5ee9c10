"""Taylor mode: the first K Taylor coefficients of an MLP by `jit(jet)` vs nested `jvp`,
and a PINN Laplacian by `ember.laplacian` (forward Laplacian) vs `trace(hessian)`.

1. A 16-64-64-64-1 tanh MLP, batch 256, float64, along a random direction, K = 6, 8, 10:
   the first call (staging + compile, empty disk cache) and the steady state (median),
   and the staged graph's equation count, for `jit(jet)` and for K nested `jvp`s.
2. The Laplacian of a 2-hidden-layer tanh MLP (3 -> 64 -> 64 -> 1) over 1000 points,
   float32 and float64: `jit(vmap(laplacian(u)))` vs `jit(vmap(trace(hessian(u))))`.

JAX columns (jax.experimental.jet, jax.hessian) are printed when `import jax` works.

Run:  python benchmarks/bench_taylor.py [--quick] [--laplacian]
      (--quick: nested jvp only to K = 8; --laplacian: only the Laplacian section)
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

import numpy as np

import ember
import ember.numpy as enp
from ember.backends.llvm.compiler import clear_memory_cache

try:
    import jax
    import jax.numpy as jnp
    from jax.experimental import jet as jax_jet
    jax.config.update("jax_enable_x64", True)
except ImportError:   # JAX is optional: its columns are left out
    jax = None


def mlp_params(sizes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(dtype), (rng.standard_normal(n) * 0.1).astype(dtype))
            for m, n in zip(sizes, sizes[1:])]


def mlp(params, x, np_=enp):
    for i, (w, b) in enumerate(params):
        x = x @ w + b
        if i < len(params) - 1:
            x = np_.tanh(x)
    return x


def steady(fun, args, repeat=7):
    fun(*args)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fun(*args)
        _block(out)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _block(out):
    leaves = ember.tree.leaves(out) if not (jax and isinstance(out, jax.Array)) else [out]
    for x in leaves:
        if hasattr(x, "block_until_ready"):
            x.block_until_ready()
        else:
            np.asarray(x)


def first_call(make):
    """Seconds of the first call of a freshly built jitted function, empty disk cache."""
    with tempfile.TemporaryDirectory() as d:
        old = os.environ.get("EMBER_CACHE_DIR")
        os.environ["EMBER_CACHE_DIR"] = d
        clear_memory_cache()
        fun, args = make()
        t0 = time.perf_counter()
        _block(fun(*args))
        dt = time.perf_counter() - t0
        if old is None:
            os.environ.pop("EMBER_CACHE_DIR")
        else:
            os.environ["EMBER_CACHE_DIR"] = old
    return dt, fun, args


def jet_coefficients(f, K):
    def coeffs(x, v):   # the line x + t v: D^k f[v, ..., v], k = 1..K
        return ember.taylor.derivatives(f, x, v, K)[1:]
    return coeffs


def nested_coefficients(f, K):
    def coeffs(x, v):
        out, g = [], f
        for _ in range(K):
            g = (lambda g: lambda x: ember.jvp(g, (x,), (v,))[1])(g)
            out.append(g(x))
        return out
    return coeffs


def bench_mlp(ks, nested_max):
    params = mlp_params([16, 64, 64, 64, 1], np.float64)
    rng = np.random.default_rng(1)
    x, v = rng.standard_normal((256, 16)), rng.standard_normal((256, 16))
    f = lambda z: mlp(params, z)  # noqa: E731
    print("\n16-64-64-64-1 tanh MLP, batch 256, float64: first K Taylor coefficients along v")
    cols = f"{'K':>3} {'method':16s} {'equations':>10s} {'first call':>11s} {'steady':>10s}"
    print(cols)
    for K in ks:
        rows = [("jit(jet)", jet_coefficients(f, K))]
        if K <= nested_max:
            rows.append(("nested jvp", nested_coefficients(f, K)))
        ref = None
        for name, coeffs in rows:
            n_eq = len(ember.make_graph(coeffs)(x, v).graph.equations)
            first, fun, args = first_call(lambda: (ember.jit(coeffs), (x, v)))
            out = [np.asarray(t) for t in fun(*args)]
            if ref is None:
                ref = out
            else:   # both methods agree
                err = max(float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b)))) for a, b in zip(out, ref))
                assert err < 1e-9, err
            print(f"{K:3d} {name:16s} {n_eq:10d} {first * 1e3:9.0f} ms {steady(fun, args) * 1e3:7.2f} ms")
        if jax is not None:
            jparams = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params]
            jf = lambda z: mlp(jparams, z, jnp)  # noqa: E731
            jfun = jax.jit(lambda x, v: jax_jet.jet(jf, (x,), ([v] + [jnp.zeros_like(v)] * (K - 1),))[1])
            t0 = time.perf_counter()
            _block(jfun(x, v))
            print(f"{K:3d} {'JAX jit(jet)':16s} {'':>10s} {(time.perf_counter() - t0) * 1e3:9.0f} ms "
                  f"{steady(jfun, (x, v)) * 1e3:7.2f} ms")


def interleaved(funs, rounds=9, calls=20):
    """Median seconds per call of each function in `funs` ({name: (fun, args)}),
    timed in `rounds` interleaved rounds of `calls` calls each (a busy neighbour
    then slows every column alike), and the spread (min, max) of the rounds."""
    for fun, args in funs.values():
        _block(fun(*args))
    times = {name: [] for name in funs}
    for _ in range(rounds):
        for name, (fun, args) in funs.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                out = fun(*args)
            _block(out)
            times[name].append((time.perf_counter() - t0) / calls)
    return {name: (statistics.median(t), min(t), max(t)) for name, t in times.items()}


def bench_laplacian(rounds=9):
    print("\nPINN Laplacian, u = 3-64-64-1 tanh MLP, 1000 points: jit(vmap(.)) steady state, median of "
          f"{rounds} interleaved rounds [min-max] (first call)")
    print(f"{'dtype':8s} {'ember.laplacian':>30s} {'trace(hessian)':>30s}"
          + (f" {'JAX trace(hessian)':>24s} {'lap/JAX':>8s}" if jax is not None else f" {'ratio':>6s}"))
    for dtype in (np.float32, np.float64):
        params = mlp_params([3, 64, 64, 1], dtype, seed=2)
        pts = np.random.default_rng(3).standard_normal((1000, 3)).astype(dtype)
        u = lambda z: mlp(params, z)[0]  # noqa: E731
        f_lap, lap, _ = first_call(lambda: (ember.jit(ember.vmap(ember.laplacian(u))), (pts,)))
        f_tr, tr, _ = first_call(lambda: (ember.jit(ember.vmap(lambda z: enp.trace(ember.hessian(u)(z)))), (pts,)))
        a, b = np.asarray(lap(pts)), np.asarray(tr(pts))
        tol = 1e-3 if dtype == np.float32 else 1e-10
        assert np.max(np.abs(a - b)) <= tol * max(1.0, float(np.max(np.abs(b)))), np.max(np.abs(a - b))
        funs = {"lap": (lap, (pts,)), "tr": (tr, (pts,))}
        if jax is not None:
            jparams = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params]
            ju = lambda z: mlp(jparams, z, jnp)[0]  # noqa: E731
            jtr = jax.jit(jax.vmap(lambda z: jnp.trace(jax.hessian(ju)(z))))
            funs["jax"] = (jtr, (jnp.asarray(pts),))
        t = interleaved(funs, rounds)

        def cell(name, first=None):
            m, lo, hi = t[name]
            return f"{m * 1e3:6.3f} ms [{lo * 1e3:.3f}-{hi * 1e3:.3f}]" + (f" ({first * 1e3:4.0f} ms)" if first else "")
        line = f"{np.dtype(dtype).name:8s} {cell('lap', f_lap):>30s} {cell('tr', f_tr):>30s}"
        if jax is not None:
            line += f" {cell('jax'):>24s} {t['lap'][0] / t['jax'][0]:8.2f}"
        else:
            line += f" {t['lap'][0] / t['tr'][0]:6.2f}"
        print(line)


def main():
    from _header import target_header
    print(target_header())
    if jax is None:
        print("(JAX not installed: its columns are left out)")
    quick = "--quick" in sys.argv
    if "--laplacian" not in sys.argv:
        bench_mlp((6, 8, 10), 8 if quick else 10)
    bench_laplacian()


if __name__ == "__main__":
    main()
