"""Issue #14's GPU table in one run: ember's jitted programs on CUDA arrays against
CuPy, JAX (CUDA) and PyTorch (eager and `torch.compile`) on the same GPU.

Rows: the fused chain `tanh(x*a+b)*sigmoid(x)+exp(-x*x)` and `sum` on 1e8 float32
(GB/s counting bytes read + written), softmax and layernorm 32768 x 4096, a bf16
8192^3 matmul, an MLP train step (784-2048-2048-10, batch 1024, SGD), a small
transformer train step (2 encoder layers, d=256, 4 heads, batch 32 x 128 tokens,
Adam) and a jitted tiny call (`x + 1` on 10 floats; microseconds).  Each cell is
the median of `--repeat` timings, each timing a loop of calls closed by a device
synchronisation; libraries are timed in interleaved rounds so drift hits them alike.
Without CuPy or a GPU it says so and exits 0; a library that is missing (or fails
on a row) gets "-" and its error on stderr, so one failure does not hide the rest.

    usage: python benchmarks/gpu/bench_gpu.py [--quick] [--repeat N] [--only ROW,ROW]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import traceback

import numpy as np

N_STREAM = 100_000_000
ROWS_2D = (32768, 4096)


def _gpu():
    try:
        import cupy as cp
        if cp.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no device")
        return cp
    except Exception as e:  # noqa: BLE001 - no CuPy, no driver, no device
        print(f"no GPU ({type(e).__name__}: {e}); nothing to time")
        return None


def _optional(name):
    try:
        return __import__(name)
    except Exception as e:  # noqa: BLE001
        print(f"{name}: unavailable ({type(e).__name__}: {e})", file=sys.stderr)
        return None


class Timer:
    def __init__(self, cp, torch, jax):
        self.cp, self.torch, self.jax = cp, torch, jax

    def sync(self):
        self.cp.cuda.Device().synchronize()
        if self.torch is not None and self.torch.cuda.is_available():
            self.torch.cuda.synchronize()

    def once(self, fn, number):
        self.sync()
        t0 = time.perf_counter()
        out = None
        for _ in range(number):
            out = fn()
        if self.jax is not None and hasattr(out, "block_until_ready"):
            out.block_until_ready()
        self.sync()
        return (time.perf_counter() - t0) / number


def measure(timer, fns, repeat, number):
    """{library: median seconds}, interleaving libraries round by round."""
    times = {k: [] for k in fns}
    for k, f in list(fns.items()):
        try:
            f()
            f()                       # compile + warm the caches
        except Exception:             # noqa: BLE001
            print(f"--- {k} failed:", file=sys.stderr)
            traceback.print_exc()
            del times[k]
    for _ in range(repeat):
        for k in times:
            times[k].append(timer.once(fns[k], number))
    return {k: statistics.median(v) for k, v in times.items()}


def _streams(L):
    cp, ember, enp = L["cp"], L["ember"], L["enp"]
    x_h = np.random.default_rng(0).standard_normal(N_STREAM, dtype=np.float32)
    rows = {}
    chain = lambda m, x: m.tanh(x * 0.5 + 0.25) * (1 / (1 + m.exp(-x))) + m.exp(-x * x)  # noqa: E731
    xe = ember.device_put(enp.asarray(x_h), "cuda")
    xc = cp.asarray(x_h)
    fe = ember.jit(lambda x: chain(enp, x))
    chain_fns = {"ember": lambda: fe(xe), "cupy": lambda: chain(cp, xc)}
    sum_fe = ember.jit(lambda x: enp.sum(x))
    sum_fns = {"ember": lambda: sum_fe(xe), "cupy": lambda: cp.sum(xc)}
    if L["jax"]:
        jax, jnp = L["jax"], L["jnp"]
        xj = jax.device_put(x_h, jax.devices("gpu")[0])
        fj = jax.jit(lambda x: chain(jnp, x))
        sj = jax.jit(jnp.sum)
        chain_fns["jax"], sum_fns["jax"] = (lambda: fj(xj)), (lambda: sj(xj))
    if L["torch"]:
        torch = L["torch"]
        xt = torch.from_numpy(x_h).cuda()
        chain_fns["torch"] = lambda: chain(torch, xt)
        sum_fns["torch"] = lambda: torch.sum(xt)
        if L["tc"]:
            ct = torch.compile(lambda x: chain(torch, x))
            chain_fns["tcomp"] = lambda: ct(xt)
    rows["chain 1e8 f32"] = (chain_fns, 2 * 4 * N_STREAM)
    rows["sum 1e8 f32"] = (sum_fns, 4 * N_STREAM)
    return rows


def _rows(L):
    cp, ember, enp = L["cp"], L["ember"], L["enp"]
    x_h = np.random.default_rng(1).standard_normal(ROWS_2D, dtype=np.float32)
    xe, xc = ember.device_put(enp.asarray(x_h), "cuda"), cp.asarray(x_h)

    def softmax(m, x):
        e = m.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def layernorm(m, x):
        mu = x.mean(axis=-1, keepdims=True)
        d = x - mu
        return d / m.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-5)

    out = {}
    for name, fn in (("softmax", softmax), ("layernorm", layernorm)):
        fe = ember.jit(lambda x, fn=fn: fn(enp, x))
        fns = {"ember": lambda fe=fe: fe(xe), "cupy": lambda fn=fn: fn(cp, xc)}
        if L["jax"]:
            jax, jnp = L["jax"], L["jnp"]
            xj = jax.device_put(x_h, jax.devices("gpu")[0])
            fj = jax.jit(lambda x, fn=fn: fn(jnp, x))
            fns["jax"] = lambda fj=fj: fj(xj)
        if L["torch"]:
            torch = L["torch"]
            xt = torch.from_numpy(x_h).cuda()
            tfn = (lambda x: torch.softmax(x, -1)) if name == "softmax" else (
                lambda x: torch.nn.functional.layer_norm(x, x.shape[-1:], eps=1e-5))
            fns["torch"] = lambda tfn=tfn: tfn(xt)
            if L["tc"]:
                ct = torch.compile(tfn)
                fns["tcomp"] = lambda ct=ct: ct(xt)
        out[f"{name} {ROWS_2D[0]}x{ROWS_2D[1]}"] = (fns, 2 * x_h.nbytes)
    return out


def _matmul(L, n):
    cp, ember, enp = L["cp"], L["ember"], L["enp"]
    import ml_dtypes
    rng = np.random.default_rng(2)
    a_h = rng.standard_normal((n, n), dtype=np.float32).astype(ml_dtypes.bfloat16)
    b_h = rng.standard_normal((n, n), dtype=np.float32).astype(ml_dtypes.bfloat16)
    ae, be = (ember.device_put(enp.asarray(v), "cuda") for v in (a_h, b_h))
    fe = ember.jit(lambda a, b: a @ b)
    fns = {"ember": lambda: fe(ae, be)}
    try:
        ac, bc = cp.asarray(a_h), cp.asarray(b_h)
        fns["cupy"] = lambda: cp.matmul(ac, bc)
    except Exception as e:  # noqa: BLE001 - a CuPy without bfloat16
        print(f"cupy bf16 matmul: {e}", file=sys.stderr)
    if L["jax"]:
        jax, jnp = L["jax"], L["jnp"]
        dev = jax.devices("gpu")[0]
        aj, bj = jax.device_put(a_h, dev), jax.device_put(b_h, dev)
        mj = jax.jit(jnp.matmul)
        fns["jax"] = lambda: mj(aj, bj)
    if L["torch"]:
        torch = L["torch"]
        at, bt = (torch.from_numpy(v.view(np.int16)).view(torch.bfloat16).cuda() for v in (a_h, b_h))
        fns["torch"] = lambda: at @ bt
    return {f"matmul bf16 {n}^3": (fns, None)}


def _torch_step(L, model, opt, loss_fn, x, y):
    """PyTorch's train step of `model` (eager, and torch.compile'd with --torch-compile)."""
    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    fns = {"torch": lambda: step(x, y)}
    if L["tc"]:
        compiled = L["torch"].compile(step)
        fns["tcomp"] = lambda: compiled(x, y)
    return fns


def _mlp_step(L, batch):
    ember, enp, nn, optim = L["ember"], L["enp"], L["nn"], L["optim"]
    rng = np.random.default_rng(3)
    x_h = rng.standard_normal((batch, 784), dtype=np.float32)
    y_h = rng.integers(0, 10, batch).astype(np.int32)
    nn.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                          nn.Linear(2048, 10)).cuda()
    opt = optim.SGD(model, lr=1e-2)
    step = nn.TrainStep(model, opt, lambda m, x, y: nn.functional.cross_entropy(m(x), y))
    xe, ye = (ember.device_put(enp.asarray(v), "cuda") for v in (x_h, y_h))
    fns = {"ember": lambda: step(xe, ye)}
    if L["jax"]:
        jax, jnp = L["jax"], L["jnp"]
        dev = jax.devices("gpu")[0]
        keys = jax.random.split(jax.random.PRNGKey(0), 3)
        sizes = [(784, 2048), (2048, 2048), (2048, 10)]
        params = [(jax.random.normal(k, s) * 0.02, jnp.zeros(s[1])) for k, s in zip(keys, sizes)]
        params = jax.device_put(params, dev)

        def loss(p, x, y):
            h = x
            for i, (w, b) in enumerate(p):
                h = h @ w + b
                h = jax.nn.relu(h) if i < 2 else h
            return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(h), y[:, None], 1))

        @jax.jit
        def jstep(p, x, y):
            g = jax.grad(loss)(p, x, y)
            return jax.tree_util.tree_map(lambda a, b: a - 1e-2 * b, p, g)

        xj, yj = jax.device_put(x_h, dev), jax.device_put(y_h, dev)
        state = {"p": params}

        def run_j():
            state["p"] = jstep(state["p"], xj, yj)
            return state["p"][0][0]
        fns["jax"] = run_j
    if L["torch"]:
        torch = L["torch"]
        tm = torch.nn.Sequential(torch.nn.Linear(784, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048),
                                 torch.nn.ReLU(), torch.nn.Linear(2048, 10)).cuda()
        xt, yt = torch.from_numpy(x_h).cuda(), torch.from_numpy(y_h.astype(np.int64)).cuda()
        fns.update(_torch_step(L, tm, torch.optim.SGD(tm.parameters(), lr=1e-2),
                               torch.nn.functional.cross_entropy, xt, yt))
    return {f"MLP 784-2048-2048-10 step b{batch}": (fns, None)}


def _transformer_step(L, batch=32, tokens=128, d=256, heads=4, layers=2):
    ember, enp, nn, optim = L["ember"], L["enp"], L["nn"], L["optim"]
    rng = np.random.default_rng(4)
    x_h = rng.standard_normal((batch, tokens, d), dtype=np.float32)
    y_h = rng.standard_normal((batch, tokens, d), dtype=np.float32)
    nn.manual_seed(0)
    model = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True),
                                  layers).cuda()
    opt = optim.Adam(model, lr=1e-3)
    step = nn.TrainStep(model, opt, lambda m, x, y: nn.functional.mse_loss(m(x), y))
    xe, ye = (ember.device_put(enp.asarray(v), "cuda") for v in (x_h, y_h))
    fns = {"ember": lambda: step(xe, ye)}
    if L["torch"]:
        torch = L["torch"]
        tm = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(
            d, heads, 4 * d, dropout=0.0, batch_first=True), layers, enable_nested_tensor=False).cuda()
        xt, yt = torch.from_numpy(x_h).cuda(), torch.from_numpy(y_h).cuda()
        fns.update(_torch_step(L, tm, torch.optim.Adam(tm.parameters(), lr=1e-3),
                               torch.nn.functional.mse_loss, xt, yt))
    return {f"transformer {layers}x d{d} step b{batch}x{tokens}": (fns, None)}


def _tiny(L):
    cp, ember, enp = L["cp"], L["ember"], L["enp"]
    x_h = np.ones(10, np.float32)
    xe = ember.device_put(enp.asarray(x_h), "cuda")
    fe = ember.jit(lambda x: x + 1)
    xc = cp.asarray(x_h)
    fns = {"ember": lambda: fe(xe), "cupy": lambda: xc + 1}
    if L["jax"]:
        jax = L["jax"]
        xj = jax.device_put(x_h, jax.devices("gpu")[0])
        fj = jax.jit(lambda x: x + 1)
        fns["jax"] = lambda: fj(xj)
    if L["torch"]:
        xt = L["torch"].from_numpy(x_h).cuda()
        fns["torch"] = lambda: xt + 1
    return {"tiny call x+1 (us)": (fns, None)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer, shorter timings")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--only", default=None, help="comma-separated row prefixes")
    ap.add_argument("--torch-compile", action="store_true")
    args = ap.parse_args(argv)
    cp = _gpu()
    if cp is None:
        return 0
    import ember
    import ember.numpy as enp
    from ember import nn, optim
    jax = _optional("jax")
    jnp = None
    if jax is not None:
        try:
            jax.devices("gpu")
            import jax.numpy as jnp
        except Exception as e:  # noqa: BLE001 - a CPU-only jaxlib
            print(f"jax: no GPU ({e})", file=sys.stderr)
            jax = None
    torch = _optional("torch")
    if torch is not None and not torch.cuda.is_available():
        torch = None
    L = dict(cp=cp, ember=ember, enp=enp, nn=nn, optim=optim, jax=jax, jnp=jnp, torch=torch,
             tc=args.torch_compile and torch is not None)
    repeat = args.repeat or (3 if args.quick else 7)
    print(f"ember on {ember.devices('cuda')[0]} ({cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}); "
          f"median of {repeat}; ratios ember / other (below 1: ember faster)")
    makers = [_streams, _rows, lambda L: _matmul(L, 4096 if args.quick else 8192),
              lambda L: _mlp_step(L, 1024), _transformer_step, _tiny]
    cols = ["ember", "cupy", "jax", "torch", "tcomp"]
    print("| row | " + " | ".join(cols) + " | GB/s (ember) | /cupy | /jax | /torch | /tcomp |")
    print("|" + "---|" * (len(cols) + 6))
    timer = Timer(cp, torch, jax)
    for make in makers:
        try:
            rows = make(L)
        except Exception:  # noqa: BLE001 - a row that cannot be built is reported, not fatal
            traceback.print_exc()
            continue
        for name, (fns, nbytes) in rows.items():
            if args.only and not any(name.startswith(p) for p in args.only.split(",")):
                continue
            micro = name.endswith("(us)")
            med = measure(timer, fns, repeat, 1000 if micro else (3 if args.quick else 10))
            unit = 1e6 if micro else 1e3
            cells = [f"{med[c] * unit:.3f}" if c in med else "-" for c in cols]
            bw = f"{nbytes / med['ember'] / 1e9:.0f}" if nbytes and "ember" in med else "-"
            ratios = [f"{med['ember'] / med[c]:.2f}" if "ember" in med and c in med else "-" for c in cols[1:]]
            print(f"| {name} | " + " | ".join(cells) + f" | {bw} | " + " | ".join(ratios) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
