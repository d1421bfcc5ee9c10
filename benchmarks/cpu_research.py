"""The researcher workloads of `bench_cpu.py` (issue #20): gradients through loops and
solvers, Hessians and Hessian-vector products of a flat parameter vector, a PINN
Laplacian and a Hutchinson trace estimate.

Each `make_*` returns `{row name: {"ember": fn, "numpy": fn, "jax": fn, "torch": fn,
"tcomp": fn}}` with None where a library has no counterpart; every fn runs one call
to completion (JAX's `block_until_ready`).  Inputs are built once, on each library's
own arrays, from the same numpy data.  PyTorch rows use `torch.func` where it applies,
its eager autograd (a Python loop) for the RNN and the solver; `tcomp` is
`torch.compile` of the same function (only with `--torch-compile`).
"""
from __future__ import annotations

import numpy as np

# --- a flat-parameter MLP, 32 -> 256 -> 8 (tanh): 32*256 + 256 + 256*8 + 8 = 10,504 ----------
MLP_IN, MLP_HID, MLP_OUT, MLP_BATCH = 32, 256, 8, 16
MLP_SHAPES = [(MLP_IN, MLP_HID), (MLP_HID,), (MLP_HID, MLP_OUT), (MLP_OUT,)]
MLP_PARAMS = sum(int(np.prod(s)) for s in MLP_SHAPES)
assert MLP_PARAMS == 10_504


def _unpack(theta, reshape):
    """The MLP's weights as slices of the flat vector `theta`, reshaped."""
    out, k = [], 0
    for s in MLP_SHAPES:
        n = int(np.prod(s))
        out.append(reshape(theta[k:k + n], s))
        k += n
    return out


def mlp_loss_for(xp, reshape, tanh, x, y):
    """loss(theta): mean squared error of the MLP unpacked from `theta` on (x, y)."""
    def loss(theta):
        w1, b1, w2, b2 = _unpack(theta, reshape)
        h = tanh(x @ w1 + b1)
        d = h @ w2 + b2 - y
        return (d * d).sum() / d.shape[0]
    return loss


def mlp_data(rng):
    theta = (rng.standard_normal(MLP_PARAMS) * 0.1).astype(np.float32)
    x = rng.standard_normal((MLP_BATCH, MLP_IN)).astype(np.float32)
    y = rng.standard_normal((MLP_BATCH, MLP_OUT)).astype(np.float32)
    v = rng.standard_normal(MLP_PARAMS).astype(np.float32)
    return theta, x, y, v


class Libs:
    """The libraries a row can use (None when not installed) and the torch.compile wrapper."""

    def __init__(self, ember, enp, jax, jnp, torch, tc):
        self.ember, self.enp, self.jax, self.jnp, self.torch, self.tc = ember, enp, jax, jnp, torch, tc


def _block(jax):
    return lambda f: (lambda: jax.block_until_ready(f()))


def _ember_mlp(L, theta, x, y):
    enp = L.enp
    return mlp_loss_for(enp, enp.reshape, enp.tanh, enp.asarray(x), enp.asarray(y)), enp.asarray(theta)


def _jax_mlp(L, theta, x, y):
    jnp = L.jnp
    return mlp_loss_for(jnp, jnp.reshape, jnp.tanh, jnp.asarray(x), jnp.asarray(y)), jnp.asarray(theta)


def _torch_mlp(L, theta, x, y):
    t = L.torch
    return (mlp_loss_for(t, lambda a, s: a.reshape(s), t.tanh, t.from_numpy(x), t.from_numpy(y)),
            t.from_numpy(theta.copy()))


def make_hessian(L, rng):
    """The full 10,504 x 10,504 Hessian of the flat-vector MLP loss."""
    theta, x, y, _ = mlp_data(rng)
    em, te = _ember_mlp(L, theta, x, y)
    row = {"ember": (lambda f: lambda: f(te))(L.ember.jit(L.ember.hessian(em)))}
    if L.jax:
        jm, tj = _jax_mlp(L, theta, x, y)
        row["jax"] = _block(L.jax)((lambda f: lambda: f(tj))(L.jax.jit(L.jax.hessian(jm))))
    if L.torch:
        tm, tt = _torch_mlp(L, theta, x, y)
        row["torch"] = (lambda f: lambda: f(tt))(L.torch.func.hessian(tm))
        c = L.tc(lambda: L.torch.func.hessian(tm))
        row["tcomp"] = c and (lambda: c(tt))
    return {f"hessian-flat {MLP_PARAMS}": row}


def make_hvp(L, rng):
    """Hessian-vector products of the flat MLP loss three ways."""
    theta, x, y, v = mlp_data(rng)
    rows = {}
    E, enp = L.ember, L.enp
    em, te = _ember_mlp(L, theta, x, y)
    ve = enp.asarray(v)
    ember_fns = {
        "fwd-rev": lambda th, u: E.jvp(E.grad(em), (th,), (u,))[1],
        "rev-rev": lambda th, u: E.grad(lambda t: enp.vdot(E.grad(em)(t), u))(th),
        "rev-fwd": lambda th, u: E.grad(lambda t: E.jvp(em, (t,), (u,))[1])(th),
    }
    if L.jax:
        jax, jnp = L.jax, L.jnp
        jm, tj = _jax_mlp(L, theta, x, y)
        vj = jnp.asarray(v)
        jax_fns = {
            "fwd-rev": lambda th, u: jax.jvp(jax.grad(jm), (th,), (u,))[1],
            "rev-rev": lambda th, u: jax.grad(lambda t: jnp.vdot(jax.grad(jm)(t), u))(th),
            "rev-fwd": lambda th, u: jax.grad(lambda t: jax.jvp(jm, (t,), (u,))[1])(th),
        }
    if L.torch:
        tf = L.torch.func
        tm, tt = _torch_mlp(L, theta, x, y)
        vt = L.torch.from_numpy(v)
        torch_fns = {
            "fwd-rev": lambda th, u: tf.jvp(tf.grad(tm), (th,), (u,))[1],
            "rev-rev": lambda th, u: tf.grad(lambda t: L.torch.dot(tf.grad(tm)(t), u))(th),
            "rev-fwd": lambda th, u: tf.grad(lambda t: tf.jvp(tm, (t,), (u,))[1])(th),
        }
    for kind, f in ember_fns.items():
        row = {"ember": (lambda g: lambda: g(te, ve))(E.jit(f))}
        if L.jax:
            row["jax"] = _block(L.jax)((lambda g: lambda: g(tj, vj))(L.jax.jit(jax_fns[kind])))
        if L.torch:
            row["torch"] = (lambda g: lambda: g(tt, vt))(torch_fns[kind])
            c = L.tc((lambda g: lambda: g)(torch_fns[kind]))
            row["tcomp"] = c and (lambda c=c: c(tt, vt))
        rows[f"hvp-{kind} {MLP_PARAMS}"] = row
    return rows


def make_hutchinson(L, rng, probes=16):
    """tr(H) of the flat MLP loss from `probes` Rademacher vectors: mean of z.Hz, the
    HVPs (forward over reverse) vmapped over the probes."""
    theta, x, y, _ = mlp_data(rng)
    z = np.where(rng.random((probes, MLP_PARAMS)) < 0.5, -1.0, 1.0).astype(np.float32)
    E, enp = L.ember, L.enp
    em, te = _ember_mlp(L, theta, x, y)
    ze = enp.asarray(z)

    def est(th, zs):
        hz = E.vmap(lambda u: E.jvp(E.grad(em), (th,), (u,))[1])(zs)
        return (hz * zs).sum() / zs.shape[0]
    row = {"ember": (lambda g: lambda: g(te, ze))(E.jit(est))}
    if L.jax:
        jax, jnp = L.jax, L.jnp
        jm, tj = _jax_mlp(L, theta, x, y)
        zj = jnp.asarray(z)

        def jest(th, zs):
            hz = jax.vmap(lambda u: jax.jvp(jax.grad(jm), (th,), (u,))[1])(zs)
            return (hz * zs).sum() / zs.shape[0]
        row["jax"] = _block(jax)((lambda g: lambda: g(tj, zj))(jax.jit(jest)))
    if L.torch:
        tf = L.torch.func
        tm, tt = _torch_mlp(L, theta, x, y)
        zt = L.torch.from_numpy(z)

        def test(th, zs):
            hz = tf.vmap(lambda u: tf.jvp(tf.grad(tm), (th,), (u,))[1])(zs)
            return (hz * zs).sum() / zs.shape[0]
        row["torch"] = lambda: test(tt, zt)
        c = L.tc(lambda: test)
        row["tcomp"] = c and (lambda: c(tt, zt))
    return {f"hutchinson {MLP_PARAMS} k{probes}": row}


# --- PINN: u(x) an MLP 2 -> 64 -> 64 -> 1 (tanh), the Laplacian at 1000 points ----------------

def make_pinn(L, rng, points=1000, width=64):
    ws = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32)
          for s in [(2, width), (width, width), (width, 1)]]
    bs = [np.zeros(s, np.float32) for s in (width, width, 1)]
    pts = rng.standard_normal((points, 2)).astype(np.float32)

    def u_for(tanh, W, B):
        def u(p):
            h = tanh(p @ W[0] + B[0])
            h = tanh(h @ W[1] + B[1])
            return (h @ W[2] + B[2])[0]
        return u
    E, enp = L.ember, L.enp
    ue = u_for(enp.tanh, [enp.asarray(w) for w in ws], [enp.asarray(b) for b in bs])
    lap = E.jit(E.vmap(lambda p: enp.trace(E.hessian(ue)(p))))
    pe = enp.asarray(pts)
    row = {"ember": lambda: lap(pe)}
    if L.jax:
        jax, jnp = L.jax, L.jnp
        uj = u_for(jnp.tanh, [jnp.asarray(w) for w in ws], [jnp.asarray(b) for b in bs])
        jl = jax.jit(jax.vmap(lambda p: jnp.trace(jax.hessian(uj)(p))))
        pj = jnp.asarray(pts)
        row["jax"] = lambda: jl(pj).block_until_ready()
    if L.torch:
        t, tf = L.torch, L.torch.func
        ut = u_for(t.tanh, [t.from_numpy(w) for w in ws], [t.from_numpy(b) for b in bs])
        tl = tf.vmap(lambda p: t.trace(tf.hessian(ut)(p)))
        ptt = t.from_numpy(pts)
        row["torch"] = lambda: tl(ptt)
        c = L.tc(lambda: tf.vmap(lambda p: t.trace(tf.hessian(ut)(p))))
        row["tcomp"] = c and (lambda: c(ptt))
    return {f"pinn-laplacian {points}": row}


# --- grad of a tanh RNN through scan -----------------------------------------------------------

def make_rnn(L, rng, steps, hidden=32, inputs=16, batch=16):
    wx = (rng.standard_normal((inputs, hidden)) / np.sqrt(inputs)).astype(np.float32)
    wh = (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
    b = np.zeros(hidden, np.float32)
    xs = rng.standard_normal((steps, batch, inputs)).astype(np.float32)
    E, enp = L.ember, L.enp

    def e_loss(params, xs_):
        wx_, wh_, b_ = params

        def step(h, x):
            h = enp.tanh(x @ wx_ + h @ wh_ + b_)
            return h, (h * h).sum()
        _, per = E.lax.scan(step, enp.zeros((batch, hidden)), xs_)
        return per.sum()
    eg = E.jit(E.grad(e_loss))
    ep, exs = tuple(enp.asarray(a) for a in (wx, wh, b)), enp.asarray(xs)
    row = {"ember": lambda: eg(ep, exs)}
    if L.jax:
        jax, jnp = L.jax, L.jnp

        def j_loss(params, xs_):
            wx_, wh_, b_ = params

            def step(h, x):
                h = jnp.tanh(x @ wx_ + h @ wh_ + b_)
                return h, (h * h).sum()
            _, per = jax.lax.scan(step, jnp.zeros((batch, hidden)), xs_)
            return per.sum()
        jg = jax.jit(jax.grad(j_loss))
        jp, jxs = tuple(jnp.asarray(a) for a in (wx, wh, b)), jnp.asarray(xs)
        row["jax"] = lambda: jax.block_until_ready(jg(jp, jxs))
    if L.torch:
        t = L.torch
        tp = [t.from_numpy(a.copy()).requires_grad_() for a in (wx, wh, b)]
        txs = t.from_numpy(xs)

        def t_loss(wx_, wh_, b_, xs_):
            h = t.zeros(batch, hidden)
            total = 0.0
            for i in range(xs_.shape[0]):   # PyTorch's way: a Python loop
                h = t.tanh(xs_[i] @ wx_ + h @ wh_ + b_)
                total = total + (h * h).sum()
            return total

        def t_grad():
            return t.autograd.grad(t_loss(*tp, txs), tp)
        row["torch"] = t_grad
        if steps <= 100:   # torch.compile unrolls the loop: T=1000 compiles for minutes
            c = L.tc(lambda: t_loss)
            row["tcomp"] = c and (lambda: t.autograd.grad(c(*tp, txs), tp))
    return {f"rnn-grad T{steps} h{hidden}": row}


# --- jit(grad) through a fixed-point solver (while_loop + custom_vjp) -------------------------

def make_fixed_point(L, rng, n=64, tol=1e-6, max_iter=200):
    """z* = tanh(W z* + x) by iteration in a while_loop; the custom VJP solves the
    adjoint fixed point a = g + W^T (a * (1 - z*^2)) the same way (implicit function
    theorem); loss = sum(z*^2), gradient w.r.t. (W, x)."""
    w = (0.3 * rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    x = rng.standard_normal(n).astype(np.float32)
    E, enp = L.ember, L.enp

    def solve(lax_, xp, f, z0):
        def cond(s):
            z, dz, i = s
            return (dz > tol) & (i < max_iter)

        def body(s):
            z, _, i = s
            zn = f(z)
            return zn, xp.max(xp.abs(zn - z)), i + 1
        return lax_.while_loop(cond, body, (z0, xp.asarray(1.0, dtype=xp.float32), xp.asarray(0)))[0]

    def make(custom_vjp, lax_, xp):
        @custom_vjp
        def fixed_point(w_, x_):
            return solve(lax_, xp, lambda z: xp.tanh(w_ @ z + x_), xp.zeros_like(x_))

        def fwd(w_, x_):
            z = fixed_point(w_, x_)
            return z, (w_, z)

        def bwd(res, g):
            w_, z = res
            d = 1 - z * z
            a = solve(lax_, xp, lambda a_: g + w_.T @ (a_ * d), g)
            u = a * d
            return xp.outer(u, z), u
        fixed_point.defvjp(fwd, bwd)
        return lambda w_, x_: (fixed_point(w_, x_) ** 2).sum()
    eg = E.jit(E.grad(make(E.custom_vjp, E.lax, enp), argnums=(0, 1)))
    ew, ex = enp.asarray(w), enp.asarray(x)
    row = {"ember": lambda: eg(ew, ex)}
    if L.jax:
        jax, jnp = L.jax, L.jnp
        jg = jax.jit(jax.grad(make(jax.custom_vjp, jax.lax, jnp), argnums=(0, 1)))
        jw, jx = jnp.asarray(w), jnp.asarray(x)
        row["jax"] = lambda: jax.block_until_ready(jg(jw, jx))
    if L.torch:
        t = L.torch

        def t_solve(f, z0):
            z, dz, i = z0, 1.0, 0
            while dz > tol and i < max_iter:   # the loop test reads the value: a Python loop
                zn = f(z)
                dz = float((zn - z).abs().max())
                z, i = zn, i + 1
            return z

        class FixedPoint(t.autograd.Function):
            @staticmethod
            def forward(ctx, w_, x_):
                z = t_solve(lambda z: t.tanh(w_ @ z + x_), t.zeros_like(x_))
                ctx.save_for_backward(w_, z)
                return z

            @staticmethod
            def backward(ctx, g):
                w_, z = ctx.saved_tensors
                d = 1 - z * z
                a = t_solve(lambda a_: g + w_.T @ (a_ * d), g)
                u = a * d
                return t.outer(u, z), u
        tw, tx = t.from_numpy(w.copy()).requires_grad_(), t.from_numpy(x.copy()).requires_grad_()
        row["torch"] = lambda: t.autograd.grad((FixedPoint.apply(tw, tx) ** 2).sum(), (tw, tx))
    return {f"fixed-point-grad n{n}": row}


# (the first word of the row names, which `--only` selects, builder)
BUILDERS = (
    ("rnn-grad", lambda L, rng: {**make_rnn(L, rng, 100), **make_rnn(L, rng, 1000)}),
    ("fixed-point-grad", make_fixed_point),
    ("hessian-flat", make_hessian),
    ("hvp-fwd-rev", make_hvp), ("hvp-rev-rev", make_hvp), ("hvp-rev-fwd", make_hvp),
    ("pinn-laplacian", make_pinn),
    ("hutchinson", make_hutchinson),
)
ROW_NAMES = tuple(name for name, _ in BUILDERS)


def make_selected(L, rng, only=()):
    """The rows whose first word is in `only` (all when empty), each builder run once."""
    rows, done = {}, set()
    for name, make in BUILDERS:
        if (only and name not in only) or make in done:
            continue
        done.add(make)
        rows.update((k, v) for k, v in make(L, rng).items() if not only or k.split()[0] in only)
    return rows
