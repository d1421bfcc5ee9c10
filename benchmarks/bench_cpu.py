"""CPU workloads of the LLVM backend against numpy, and JAX / PyTorch when installed.

Every library runs with the same thread count (EMBER_NUM_THREADS, OPENBLAS_NUM_THREADS,
torch.set_num_threads, XLA flags).  Prints the median of several runs in ms and
the ratio to the fastest competitor, measured in the same run.

Run:  python benchmarks/bench_cpu.py [--threads 2] [--repeat 7] [--only chain,sum]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def _setup_threads(n: int):
    os.environ.setdefault("EMBER_NUM_THREADS", str(n))
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(n))
    os.environ.setdefault("OMP_NUM_THREADS", str(n))
    os.environ.setdefault("XLA_FLAGS", f"--xla_cpu_multi_thread_eigen={'true' if n > 1 else 'false'} "
                                       f"intra_op_parallelism_threads={n}")


def timeit(fn, repeat, number=1):
    fn()  # warm up (compiles)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    _setup_threads(args.threads)

    import numpy as np
    import ember
    import ember.numpy as enp
    from ember import lax

    try:
        import torch
        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        jax = None

    rng = np.random.default_rng(0)
    only = set(filter(None, args.only.split(",")))
    rows = []

    def bench(name, ember_fn, numpy_fn=None, jax_fn=None, torch_fn=None, number=1):
        if only and name.split()[0] not in only:
            return
        r = {"name": name, "ember": timeit(ember_fn, args.repeat, number)}
        if numpy_fn is not None:
            r["numpy"] = timeit(numpy_fn, args.repeat, number)
        if jax_fn is not None and jax is not None:
            r["jax"] = timeit(jax_fn, args.repeat, number)
        if torch_fn is not None and torch is not None:
            r["torch"] = timeit(torch_fn, args.repeat, number)
        rows.append(r)
        others = {k: v for k, v in r.items() if k not in ("name", "ember")}
        best = min(others.values()) if others else None
        extra = "  ".join(f"{k} {v:8.3f}" for k, v in others.items())
        ratio = f"  ember/best {r['ember'] / best:5.2f}x" if best else ""
        print(f"{name:34s} ember {r['ember']:8.3f}  {extra}{ratio}", flush=True)

    # 1. fused elementwise chain
    x = rng.standard_normal(10_000_000).astype(np.float32)
    xe = enp.asarray(x)
    chain = ember.jit(lambda v: enp.tanh(v * 2.0 + 1.0) * lax.logistic(v) + enp.exp(-v * v))
    jchain = jax.jit(lambda v: jnp.tanh(v * 2.0 + 1.0) * jax.nn.sigmoid(v) + jnp.exp(-v * v)) if jax else None
    xj = jnp.asarray(x) if jax else None
    xt = torch.from_numpy(x) if torch else None
    bench("chain 1e7 f32 (ms)", lambda: chain(xe),
          lambda: np.tanh(x * 2.0 + 1.0) * (1 / (1 + np.exp(-x))) + np.exp(-x * x),
          (lambda: jchain(xj).block_until_ready()) if jax else None,
          (lambda: torch.tanh(xt * 2.0 + 1.0) * torch.sigmoid(xt) + torch.exp(-xt * xt)) if torch else None)

    # 2. sum
    s = ember.jit(lambda v: enp.sum(v))
    js = jax.jit(jnp.sum) if jax else None
    bench("sum 1e7 f32 (ms)", lambda: s(xe), lambda: x.sum(),
          (lambda: js(xj).block_until_ready()) if jax else None, (lambda: xt.sum()) if torch else None)

    # 3. row sums
    m = rng.standard_normal((4096, 4096)).astype(np.float32)
    me = enp.asarray(m)
    rs = ember.jit(lambda v: enp.sum(v, axis=1))
    jrs = jax.jit(lambda v: jnp.sum(v, axis=1)) if jax else None
    mj = jnp.asarray(m) if jax else None
    mt = torch.from_numpy(m) if torch else None
    bench("rowsum 4096x4096 (ms)", lambda: rs(me), lambda: m.sum(axis=1),
          (lambda: jrs(mj).block_until_ready()) if jax else None, (lambda: mt.sum(1)) if torch else None)

    # 4. softmax
    a = rng.standard_normal((4096, 1024)).astype(np.float32)
    ae = enp.asarray(a)

    def softmax(v):
        e = enp.exp(v - enp.max(v, axis=1, keepdims=True))
        return e / enp.sum(e, axis=1, keepdims=True)
    sm = ember.jit(softmax)
    jsm = jax.jit(lambda v: jax.nn.softmax(v, axis=1)) if jax else None
    aj = jnp.asarray(a) if jax else None
    at = torch.from_numpy(a) if torch else None

    def np_softmax(v):
        e = np.exp(v - v.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    bench("softmax 4096x1024 (ms)", lambda: sm(ae), lambda: np_softmax(a),
          (lambda: jsm(aj).block_until_ready()) if jax else None,
          (lambda: torch.softmax(at, 1)) if torch else None)

    # 5. matmul
    p = rng.standard_normal((1024, 1024)).astype(np.float32)
    pe = enp.asarray(p)
    mm = ember.jit(lambda u, v: u @ v)
    jmm = jax.jit(lambda u, v: u @ v) if jax else None
    pj = jnp.asarray(p) if jax else None
    pt = torch.from_numpy(p) if torch else None
    bench("matmul 1024 (ms)", lambda: mm(pe, pe), lambda: p @ p,
          (lambda: jmm(pj, pj).block_until_ready()) if jax else None, (lambda: pt @ pt) if torch else None)

    # 6. MLP train step
    sizes = [784, 512, 512, 10]
    params = [(enp.asarray(rng.standard_normal((i, o)).astype(np.float32) * (1 / np.sqrt(i))),
               enp.asarray(np.zeros(o, np.float32))) for i, o in zip(sizes[:-1], sizes[1:])]
    xb = enp.asarray(rng.standard_normal((128, 784)).astype(np.float32))
    yb = enp.asarray(rng.integers(0, 10, 128).astype(np.int32))

    def mlp_loss(ps, xv, yv):
        h = xv
        for w, b in ps[:-1]:
            h = enp.maximum(h @ w + b, 0.0)
        w, b = ps[-1]
        logits = h @ w + b
        logp = logits - enp.max(logits, axis=1, keepdims=True)
        logp = logp - enp.log(enp.sum(enp.exp(logp), axis=1, keepdims=True))
        return -enp.mean(enp.take_along_axis(logp, yv[:, None], axis=1))

    def sgd_step(ps, xv, yv):
        loss, g = ember.value_and_grad(mlp_loss)(ps, xv, yv)
        return ember.tree.map(lambda p_, g_: p_ - 0.01 * g_, ps, g), loss
    step = ember.jit(sgd_step)
    t0 = time.perf_counter()
    step(params, xb, yb)
    compile_ms = (time.perf_counter() - t0) * 1e3
    bench("mlp-step b128 (ms)", lambda: step(params, xb, yb))
    print(f"{'mlp-step first call (trace+compile)':34s} {compile_ms:8.1f} ms")

    # 7. per-example gradients
    w1 = enp.asarray(rng.standard_normal((64, 32)).astype(np.float32))
    xs = enp.asarray(rng.standard_normal((256, 64)).astype(np.float32))
    pex = ember.jit(ember.vmap(ember.grad(lambda w, v: enp.sum(enp.tanh(v @ w) ** 2)), in_axes=(None, 0)))
    bench("per-example-grads b256 (ms)", lambda: pex(w1, xs))

    # 8. Hessian of a 200-dim function
    hv = enp.asarray(rng.standard_normal(200).astype(np.float32))
    hess = ember.jit(ember.hessian(lambda v: enp.sum(enp.tanh(v) ** 2) + enp.sum(v) ** 2))
    bench("hessian 200 (ms)", lambda: hess(hv))

    # 9. conv2d
    img = rng.standard_normal((32, 3, 64, 64)).astype(np.float32)
    ker = rng.standard_normal((64, 3, 3, 3)).astype(np.float32)
    conv = ember.jit(lambda u, k: lax.conv_general_dilated(u, k, (1, 1), "SAME"))
    jconv = jax.jit(lambda u, k: jax.lax.conv_general_dilated(u, k, (1, 1), "SAME")) if jax else None
    bench("conv2d b32 3->64 64x64 (ms)", lambda: conv(img, ker), None,
          (lambda: jconv(img, ker).block_until_ready()) if jax else None,
          (lambda: torch.nn.functional.conv2d(torch.from_numpy(img), torch.from_numpy(ker), padding=1))
          if torch else None)

    # 10. third derivative on 1e5 points
    pts = enp.asarray(rng.standard_normal(100_000).astype(np.float32))
    d3 = ember.jit(ember.vmap(ember.grad(ember.grad(ember.grad(lambda t: enp.sin(t) * t)))))
    bench("third-derivative 1e5 (ms)", lambda: d3(pts))

    # 11. jitted tiny call
    tiny = ember.jit(lambda v: v + 1.0)
    small = enp.ones(10)
    bench("tiny-call (us)", lambda: tiny(small), number=2000)
    rows[-1]["unit"] = "us"
    print("(tiny-call row is in us: the table's unit is per call x 1000)")


if __name__ == "__main__":
    sys.exit(main())
