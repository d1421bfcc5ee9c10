"""CPU workloads of the LLVM backend against numpy, and JAX / PyTorch when installed.

Every library runs with the same thread count (EMBER_NUM_THREADS, OPENBLAS_NUM_THREADS,
torch.set_num_threads, XLA flags).  Prints the median of several rounds (ms; us for
the tiny call) and ember's time divided by each library's, all from the same run
(below 1.00x ember is faster); each round times every library once, interleaved
(see `measure`).  Inputs live on each library's own device arrays.

The researcher workloads (grad through scan and a fixed-point solver, Hessians and
HVPs of a flat parameter vector, a PINN Laplacian, Hutchinson's trace estimate) are
built in `cpu_research.py`; the full Hessian also gets a peak-memory row, each
library's peak RSS in a subprocess of its own that makes one call.

Run:  python benchmarks/bench_cpu.py [--threads 2] [--repeat 7] [--only chain,sum,rnn-grad]
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


def measure(fns: dict, repeat: int, number: int = 1, rounds: int = 3) -> dict:
    """Median seconds per call of each function, over ``rounds`` rounds.

    Each round gives every library a block of ``repeat`` timings, in an order
    that rotates from round to round, so a slow spell of this shared machine
    lands on all of them alike.  A block starts with a pause that lets the
    previous library's idle threads (OpenMP, Eigen and ember's pool spin for a
    while after their last job) go to sleep, then ~30 ms of untimed calls that
    wake this library's threads and bring the cores back to speed; each timing
    covers enough calls for ~2 ms."""
    names = list(fns)
    calls = {}
    for k, f in fns.items():   # compile / warm up
        f()
        t0 = time.perf_counter()
        f()
        calls[k] = max(number, int(2e-3 / max(time.perf_counter() - t0, 1e-7)))
    samples = {k: [] for k in names}
    for r in range(rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            f = fns[k]
            time.sleep(0.2)
            t_end = time.perf_counter() + 0.03
            f()
            while time.perf_counter() < t_end:
                f()
            for _ in range(repeat):
                t0 = time.perf_counter()
                for _ in range(calls[k]):
                    f()
                samples[k].append((time.perf_counter() - t0) / calls[k])
    return {k: statistics.median(v) for k, v in samples.items()}


def bench_args(ap, repeat: int):
    """Parse `ap` plus the --threads/--repeat every benchmark takes, pin the thread
    count and print the target line; returns the parsed arguments."""
    from _header import target_header
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=repeat)
    a = ap.parse_args()
    _setup_threads(a.threads)
    print(target_header())
    return a


def print_ratios(med: dict, base: str) -> None:
    """One line per entry of `med` (median seconds): ms and `base`'s time over it."""
    width = max(map(len, med))
    for k, v in med.items():
        print(f"{k:>{width}}: {v * 1e3:8.2f} ms   {base} / this = {med[base] / v:.2f}x")


LIBS = ("numpy", "jax", "torch", "tcomp")   # tcomp: torch.compile (with --torch-compile)
ROWS = ("chain", "sum", "rowsum", "softmax", "matmul", "mlp-step", "per-example-grads", "hessian",
        "conv2d", "third-derivative", "tiny-call")   # the first words --only takes (+ research rows)


def _libraries(threads: int, torch_compile: bool, only_lib: str = ""):
    """(Libs of cpu_research, numpy) with each optional library imported if installed
    (only `only_lib`, and ember, when given: the peak-memory subprocesses)."""
    import numpy as np
    import ember
    import ember.numpy as enp
    import cpu_research
    torch = jax = jnp = None
    if only_lib in ("", "torch", "tcomp"):
        try:
            import torch
            torch.set_num_threads(threads)
        except ImportError:
            torch = None
    if only_lib in ("", "jax"):
        try:
            import jax
            import jax.numpy as jnp
        except ImportError:
            jax = jnp = None

    def tc(make):
        """torch.compile(make()) when --torch-compile is given (make builds the eager function)."""
        if torch is None or not torch_compile:
            return None
        return torch.compile(make())
    return cpu_research.Libs(ember, enp, jax, jnp, torch, tc), np


def _peak_mb() -> float:
    """This process's peak resident set, MB: Linux's VmHWM, the high-water mark of its
    own memory map.  (ru_maxrss is not used: the kernel carries the parent's mark over
    fork + exec, so a child of this big benchmark process would report the parent's.)"""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _peak_child(lib: str, threads: int) -> None:
    """In a subprocess of its own: one call of the full-Hessian row for `lib`; prints
    the peak RSS before the call (imports, inputs) and after it, in MB."""
    import cpu_research
    import numpy as np
    L, _ = _libraries(threads, lib == "tcomp", lib)
    row = next(iter(cpu_research.make_hessian(L, np.random.default_rng(0)).values()))
    f = row.get(lib)
    if f is None:
        print("nan nan")
        return
    before = _peak_mb()
    f()
    print(f"{before:.0f} {_peak_mb():.0f}")


def _peak_rss(libs, threads: int) -> dict:
    """{library: (peak RSS before the call, peak RSS) in MB} of one full-Hessian call each."""
    import subprocess
    out = {}
    for lib in libs:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--peak-child", lib,
                            "--threads", str(threads)], capture_output=True, text=True)
        try:
            before, peak = (float(v) for v in r.stdout.split()[-2:])
        except ValueError:
            print(f"  ({lib}: the peak-memory run failed: {r.stderr.strip().splitlines()[-1:]})")
            continue
        if peak == peak:
            out[lib] = (before, peak)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", default="")
    ap.add_argument("--torch-compile", action="store_true",
                    help="add a torch.compile column (compiles take ~10-60 s each)")
    ap.add_argument("--peak-child", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    _setup_threads(args.threads)
    if args.peak_child:
        return _peak_child(args.peak_child, args.threads)
    import cpu_research
    only = set(filter(None, args.only.split(",")))
    unknown = only - set(ROWS) - set(cpu_research.ROW_NAMES)
    if unknown:
        ap.error(f"--only: unknown rows {sorted(unknown)}; rows: "
                 f"{', '.join(ROWS + cpu_research.ROW_NAMES)}")

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

    from _header import target_header
    print(target_header())
    rng = np.random.default_rng(0)
    rows = []
    print(f"{'workload':30s} {'ember':>9s} " + " ".join(f"{k:>9s}" for k in LIBS)
          + "   " + " ".join(f"{'/' + k:>7s}" for k in LIBS))

    def tc(make):
        """torch.compile(make()) when --torch-compile is given (make builds the eager function)."""
        if torch is None or not args.torch_compile:
            return None
        return torch.compile(make())

    def show(name, unit, r):
        times = " ".join(f"{r[k]:9.3f}" if k in r else f"{'-':>9s}" for k in LIBS)
        ratios = " ".join(f"{r['ember'] / r[k]:6.2f}x" if r.get(k) else f"{'-':>7s}" for k in LIBS)
        print(f"{name + ' (' + unit + ')':30s} {r['ember']:9.3f} {times}   {ratios}", flush=True)

    def bench(name, ember_fn, numpy_fn=None, jax_fn=None, torch_fn=None, tcomp_fn=None, number=1, unit="ms",
              repeat=None, rounds=3):
        if only and name.split()[0] not in only:
            return
        scale = 1e6 if unit == "us" else 1e3
        fns = {"ember": ember_fn, **{k: f for k, f in zip(LIBS, (numpy_fn, jax_fn, torch_fn, tcomp_fn))
                                     if f is not None}}
        rep = args.repeat if repeat is None else min(repeat, args.repeat)
        r = {"name": name, "unit": unit, **{k: t * scale for k, t in measure(fns, rep, number, rounds).items()}}
        rows.append(r)
        show(name, unit, r)

    # 1. fused elementwise chain
    x = rng.standard_normal(10_000_000).astype(np.float32)
    xe = enp.asarray(x)
    chain = ember.jit(lambda v: enp.tanh(v * 2.0 + 1.0) * lax.logistic(v) + enp.exp(-v * v))
    jchain = jax.jit(lambda v: jnp.tanh(v * 2.0 + 1.0) * jax.nn.sigmoid(v) + jnp.exp(-v * v)) if jax else None
    xj = jnp.asarray(x) if jax else None
    xt = torch.from_numpy(x) if torch else None
    bench("chain 1e7 f32", lambda: chain(xe),
          lambda: np.tanh(x * 2.0 + 1.0) * (1 / (1 + np.exp(-x))) + np.exp(-x * x),
          (lambda: jchain(xj).block_until_ready()) if jax else None,
          (lambda: torch.tanh(xt * 2.0 + 1.0) * torch.sigmoid(xt) + torch.exp(-xt * xt)) if torch else None,
          (lambda f: f and (lambda: f(xt)))(tc(lambda: lambda v: torch.tanh(v * 2.0 + 1.0) * torch.sigmoid(v)
                                               + torch.exp(-v * v))))

    # 2. sum
    s = ember.jit(lambda v: enp.sum(v))
    js = jax.jit(jnp.sum) if jax else None
    bench("sum 1e7 f32", lambda: s(xe), lambda: x.sum(),
          (lambda: js(xj).block_until_ready()) if jax else None, (lambda: xt.sum()) if torch else None,
          (lambda f: f and (lambda: f(xt)))(tc(lambda: lambda v: v.sum())))

    # 3. row sums
    m = rng.standard_normal((4096, 4096)).astype(np.float32)
    me = enp.asarray(m)
    rs = ember.jit(lambda v: enp.sum(v, axis=1))
    jrs = jax.jit(lambda v: jnp.sum(v, axis=1)) if jax else None
    mj = jnp.asarray(m) if jax else None
    mt = torch.from_numpy(m) if torch else None
    bench("rowsum 4096x4096", lambda: rs(me), lambda: m.sum(axis=1),
          (lambda: jrs(mj).block_until_ready()) if jax else None, (lambda: mt.sum(1)) if torch else None,
          (lambda f: f and (lambda: f(mt)))(tc(lambda: lambda v: v.sum(1))))

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
    bench("softmax 4096x1024", lambda: sm(ae), lambda: np_softmax(a),
          (lambda: jsm(aj).block_until_ready()) if jax else None,
          (lambda: torch.softmax(at, 1)) if torch else None,
          (lambda f: f and (lambda: f(at)))(tc(lambda: lambda v: torch.softmax(v, 1))))

    # 5. matmul
    p = rng.standard_normal((1024, 1024)).astype(np.float32)
    pe = enp.asarray(p)
    mm = ember.jit(lambda u, v: u @ v)
    jmm = jax.jit(lambda u, v: u @ v) if jax else None
    pj = jnp.asarray(p) if jax else None
    pt = torch.from_numpy(p) if torch else None
    bench("matmul 1024", lambda: mm(pe, pe), lambda: p @ p,
          (lambda: jmm(pj, pj).block_until_ready()) if jax else None, (lambda: pt @ pt) if torch else None,
          (lambda f: f and (lambda: f(pt, pt)))(tc(lambda: lambda u, v: u @ v)))

    # 6. MLP train step
    sizes = [784, 512, 512, 10]
    np_params = [((rng.standard_normal((i, o)) / np.sqrt(i)).astype(np.float32), np.zeros(o, np.float32))
                 for i, o in zip(sizes[:-1], sizes[1:])]
    params = [(enp.asarray(w), enp.asarray(b)) for w, b in np_params]
    xb_np = rng.standard_normal((128, 784)).astype(np.float32)
    yb_np = rng.integers(0, 10, 128).astype(np.int32)
    xb, yb = enp.asarray(xb_np), enp.asarray(yb_np)

    def make_loss(xp, take):
        def mlp_loss(ps, xv, yv):
            h = xv
            for w, b in ps[:-1]:
                h = xp.maximum(h @ w + b, 0.0)
            w, b = ps[-1]
            logits = h @ w + b
            logp = logits - xp.max(logits, axis=1, keepdims=True)
            logp = logp - xp.log(xp.sum(xp.exp(logp), axis=1, keepdims=True))
            return -xp.mean(take(logp, yv[:, None], axis=1))
        return mlp_loss

    mlp_loss = make_loss(enp, enp.take_along_axis)

    def sgd_step(ps, xv, yv):
        loss, g = ember.value_and_grad(mlp_loss)(ps, xv, yv)
        return ember.tree.map(lambda p_, g_: p_ - 0.01 * g_, ps, g), loss
    step = ember.jit(sgd_step)
    t0 = time.perf_counter()
    step(params, xb, yb)
    compile_ms = (time.perf_counter() - t0) * 1e3
    jstep = None
    if jax:
        jloss = make_loss(jnp, jnp.take_along_axis)

        @jax.jit
        def jstep(ps, xv, yv):
            loss, g = jax.value_and_grad(jloss)(ps, xv, yv)
            return jax.tree.map(lambda p_, g_: p_ - 0.01 * g_, ps, g), loss
        jparams = [(jnp.asarray(w), jnp.asarray(b)) for w, b in np_params]
        jxb, jyb = jnp.asarray(xb_np), jnp.asarray(yb_np)
    tstep = None
    if torch:
        tparams = [(torch.from_numpy(w.copy()).requires_grad_(), torch.from_numpy(b.copy()).requires_grad_())
                   for w, b in np_params]
        txb, tyb = torch.from_numpy(xb_np), torch.from_numpy(yb_np.astype(np.int64))

        def tstep():
            h = txb
            for w, b in tparams[:-1]:
                h = torch.relu(h @ w + b)
            w, b = tparams[-1]
            loss = torch.nn.functional.cross_entropy(h @ w + b, tyb)
            grads = torch.autograd.grad(loss, [p for wb in tparams for p in wb])
            with torch.no_grad():
                return [p - 0.01 * g for p, g in zip([p for wb in tparams for p in wb], grads)], loss
    tcstep = None
    if torch and args.torch_compile:
        def tloss(ps, xv, yv):
            h = xv
            for w, b in ps[:-1]:
                h = torch.relu(h @ w + b)
            w, b = ps[-1]
            return torch.nn.functional.cross_entropy(h @ w + b, yv)

        def tsgd(ps, xv, yv):
            g, loss = torch.func.grad_and_value(tloss)(ps, xv, yv)
            return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(ps, g)], loss
        tcs = torch.compile(tsgd)
        tps = [(w.detach(), b.detach()) for w, b in tparams]
        tcstep = lambda: tcs(tps, txb, tyb)  # noqa: E731
    bench("mlp-step b128", lambda: step(params, xb, yb), None,
          (lambda: jax.block_until_ready(jstep(jparams, jxb, jyb))) if jax else None, tstep, tcstep)
    if not only or "mlp-step" in only:
        print(f"{'mlp-step first call (trace+compile)':34s} {compile_ms:8.1f} ms")

    # 7. per-example gradients
    w1_np = rng.standard_normal((64, 32)).astype(np.float32)
    xs_np = rng.standard_normal((256, 64)).astype(np.float32)
    w1, xs = enp.asarray(w1_np), enp.asarray(xs_np)
    pex = ember.jit(ember.vmap(ember.grad(lambda w, v: enp.sum(enp.tanh(v @ w) ** 2)), in_axes=(None, 0)))
    jpex = jax.jit(jax.vmap(jax.grad(lambda w, v: jnp.sum(jnp.tanh(v @ w) ** 2)), in_axes=(None, 0))) if jax else None
    tpex = None
    if torch:
        import torch.func as tf
        tw1, txs = torch.from_numpy(w1_np), torch.from_numpy(xs_np)
        tpex_fn = tf.vmap(tf.grad(lambda w, v: torch.sum(torch.tanh(v @ w) ** 2)), in_dims=(None, 0))
        tpex = lambda: tpex_fn(tw1, txs)  # noqa: E731
    jw1, jxs = (jnp.asarray(w1_np), jnp.asarray(xs_np)) if jax else (None, None)
    tcpex = tc(lambda: tf.vmap(tf.grad(lambda w, v: torch.sum(torch.tanh(v @ w) ** 2)), in_dims=(None, 0)))
    bench("per-example-grads b256", lambda: pex(w1, xs), None,
          (lambda: jpex(jw1, jxs).block_until_ready()) if jax else None, tpex,
          tcpex and (lambda: tcpex(tw1, txs)))

    # 8. Hessian of a 200-dim function
    hv_np = rng.standard_normal(200).astype(np.float32)
    hv = enp.asarray(hv_np)
    hess = ember.jit(ember.hessian(lambda v: enp.sum(enp.tanh(v) ** 2) + enp.sum(v) ** 2))
    jhess = jax.jit(jax.hessian(lambda v: jnp.sum(jnp.tanh(v) ** 2) + jnp.sum(v) ** 2)) if jax else None
    jhv = jnp.asarray(hv_np) if jax else None
    thess = None
    if torch:
        thv = torch.from_numpy(hv_np)
        thess_fn = torch.func.hessian(lambda v: torch.sum(torch.tanh(v) ** 2) + torch.sum(v) ** 2)
        thess = lambda: thess_fn(thv)  # noqa: E731
    tchess = tc(lambda: torch.func.hessian(lambda v: torch.sum(torch.tanh(v) ** 2) + torch.sum(v) ** 2))
    bench("hessian 200", lambda: hess(hv), None, (lambda: jhess(jhv).block_until_ready()) if jax else None, thess,
          tchess and (lambda: tchess(thv)))

    # 9. conv2d
    img = rng.standard_normal((32, 3, 64, 64)).astype(np.float32)
    ker = rng.standard_normal((64, 3, 3, 3)).astype(np.float32)
    eimg, eker = enp.asarray(img), enp.asarray(ker)
    conv = ember.jit(lambda u, k: lax.conv_general_dilated(u, k, (1, 1), "SAME"))
    jconv = jax.jit(lambda u, k: jax.lax.conv_general_dilated(u, k, (1, 1), "SAME")) if jax else None
    jimg, jker = (jnp.asarray(img), jnp.asarray(ker)) if jax else (None, None)
    timg, tker = (torch.from_numpy(img), torch.from_numpy(ker)) if torch else (None, None)
    bench("conv2d b32 3->64 64x64", lambda: conv(eimg, eker), None,
          (lambda: jconv(jimg, jker).block_until_ready()) if jax else None,
          (lambda: torch.nn.functional.conv2d(timg, tker, padding=1)) if torch else None,
          (lambda f: f and (lambda: f(timg, tker)))(tc(lambda: lambda u, k: torch.nn.functional.conv2d(u, k, padding=1))))

    # 10. third derivative on 1e5 points
    pts_np = rng.standard_normal(100_000).astype(np.float32)
    pts = enp.asarray(pts_np)
    d3 = ember.jit(ember.vmap(ember.grad(ember.grad(ember.grad(lambda t: enp.sin(t) * t)))))
    jd3 = jax.jit(jax.vmap(jax.grad(jax.grad(jax.grad(lambda t: jnp.sin(t) * t))))) if jax else None
    jpts = jnp.asarray(pts_np) if jax else None
    tpts = torch.from_numpy(pts_np) if torch else None
    td3 = tc(lambda: torch.func.vmap(torch.func.grad(torch.func.grad(torch.func.grad(lambda t: torch.sin(t) * t)))))
    bench("third-derivative 1e5", lambda: d3(pts), None, (lambda: jd3(jpts).block_until_ready()) if jax else None,
          None, td3 and (lambda: td3(tpts)))

    # 11. jitted tiny call
    tiny = ember.jit(lambda v: v + 1.0)
    small = enp.ones(10)
    jtiny = jax.jit(lambda v: v + 1.0) if jax else None
    jsmall = jnp.ones(10) if jax else None
    bench("tiny-call", lambda: tiny(small), None, (lambda: jtiny(jsmall).block_until_ready()) if jax else None,
          number=2000, unit="us")

    # 12-19. the researcher workloads (cpu_research.py); a full Hessian call takes seconds,
    # so its row takes fewer timings
    research = [n for n in cpu_research.ROW_NAMES if not only or n in only]
    if research:
        L = cpu_research.Libs(ember, enp, jax, jnp if jax else None, torch, tc)
        for name, fns in cpu_research.make_selected(L, rng, set(research)).items():
            slow = name.startswith("hessian-flat")
            bench(name, fns["ember"], fns.get("numpy"), fns.get("jax"), fns.get("torch"), fns.get("tcomp"),
                  repeat=1 if slow else None, rounds=2 if slow else 3)
            if slow:
                del fns
                peaks = _peak_rss(["ember"] + [k for k in LIBS if k in rows[-1]], args.threads)
                if "ember" in peaks:
                    show("hessian-flat peak RSS", "MB", {k: p for k, (_, p) in peaks.items()})
                    show("hessian-flat RSS growth", "MB", {k: p - b for k, (b, p) in peaks.items()})


if __name__ == "__main__":
    sys.exit(main())
