"""Newton-CG for L2-regularised logistic regression with Hessian-vector products.

Each Newton step solves H d = -g with conjugate gradients, where the Hessian H
is never formed: CG only needs products H v, which are a forward-mode
derivative of the gradient, `ember.jvp(ember.grad(loss), (w,), (v,))`
("forward-over-reverse", about the cost of two gradient evaluations).  The CG
loop is an `ember.while_loop` that stops on a relative residual tolerance, and
the whole Newton direction computation is one `ember.jit`-compiled program.

For checking, every step direction is compared with the explicit solve
`ember.numpy.linalg.solve(ember.hessian(loss)(w), -g)` (65 x 65 here, so cheap),
and the gradient norm per iteration shows Newton's quadratic convergence.

Data: the bundled 8x8 digits, binary (default: "3" vs "8") or, with
`--one-vs-rest`, ten binary problems solved at once by `ember.vmap` over the
labels -- the vmapped while_loop runs until every class has converged.

Run:   python examples/newton_hvp.py                   # a few seconds
       python examples/newton_hvp.py --one-vs-rest
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import ember
import ember.numpy as enp
from ember.data import load_digits

from _common import add_output_args, pyplot, save_figure


# --- the objective ---------------------------------------------------------------------

@ember.custom_jvp
def softplus(z):
    """log(1 + e^z), computed without overflow."""
    return enp.maximum(z, 0.0) + enp.log1p(enp.exp(-enp.abs(z)))


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    # The max/abs form above has kinks at z = 0 whose derivative rules give a second
    # derivative of 0 there (the true value is 1/4). Newton's method starts at w = 0,
    # where every margin is exactly 0, so state the smooth derivative directly.
    (z,), (t,) = primals, tangents
    return softplus(z), ember.lax.logistic(z) * t


def make_loss(lam: float):
    def loss(w, x, y):
        """Mean logistic loss (labels y in {0, 1}) plus lam/2 ||w||^2; x has a bias column."""
        z = x @ w
        return enp.mean(softplus(z) - y * z) + 0.5 * lam * enp.sum(w * w)
    return loss


def make_newton_direction(loss, cg_tol: float, cg_maxiter: int):
    grad = ember.grad(loss)

    def hvp(w, v, x, y):
        return ember.jvp(lambda w_: grad(w_, x, y), (w,), (v,))[1]

    def newton_direction(w, x, y):
        """(d, cg iterations, g) with H d = -g solved by CG to ||r|| <= cg_tol ||g||."""
        g = grad(w, x, y)
        stop = (cg_tol ** 2) * enp.vdot(g, g)

        def keep_going(state):
            _, _, _, rr, k = state
            return (rr > stop) & (k < cg_maxiter)

        def cg_step(state):
            d, r, p, rr, k = state
            hp = hvp(w, p, x, y)
            alpha = rr / enp.vdot(p, hp)
            d = d + alpha * p
            r = r - alpha * hp
            rr_new = enp.vdot(r, r)
            p = r + (rr_new / rr) * p
            return d, r, p, rr_new, k + 1

        init = (enp.zeros_like(w), -g, -g, enp.vdot(g, g), enp.asarray(0, dtype="int32"))
        d, _, _, _, k = ember.while_loop(keep_going, cg_step, init)
        return d, k, g

    return newton_direction, hvp


def load(classes, one_vs_rest: bool):
    """float64 design matrices with a bias column; y: (n,) in {0,1} or (10, n) one-vs-rest."""
    out = []
    for split in ("train", "test"):
        ds = load_digits(split, flatten=True)
        x, labels = ds.arrays[0].astype(np.float64), ds.arrays[1]
        if one_vs_rest:
            y = (labels[None, :] == np.arange(10)[:, None]).astype(np.float64)
        else:
            keep = np.isin(labels, classes)
            x, labels = x[keep], labels[keep]
            y = (labels == classes[1]).astype(np.float64)
        x = np.concatenate([x, np.ones((len(x), 1))], axis=1)
        out.append((enp.asarray(x), enp.asarray(y), labels))
    return out


# --- main ------------------------------------------------------------------------------

def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--classes", type=int, nargs=2, default=[3, 8], help="binary problem: neg pos")
    ap.add_argument("--one-vs-rest", action="store_true", help="all ten classes, vmapped")
    ap.add_argument("--lam", type=float, default=1e-2, help="L2 regularisation strength")
    ap.add_argument("--iters", type=int, default=10, help="max Newton iterations")
    ap.add_argument("--tol", type=float, default=1e-10, help="stop when ||grad|| <= tol")
    ap.add_argument("--cg-tol", type=float, default=1e-8, help="relative CG residual")
    ap.add_argument("--cg-maxiter", type=int, default=200)
    add_output_args(ap, "runs/newton_hvp")
    args = ap.parse_args(argv)

    (x, y, _), (x_test, y_test, labels_test) = load(args.classes, args.one_vs_rest)
    loss = make_loss(args.lam)
    newton_direction, hvp = make_newton_direction(loss, args.cg_tol, args.cg_maxiter)
    d_feat = x.shape[1]

    if args.one_vs_rest:
        # one Newton step for all ten problems: vmap over the label vectors (and weights)
        direction = ember.jit(ember.vmap(newton_direction, in_axes=(0, None, 0)))
        w = enp.zeros((10, d_feat), dtype="float64")
        what = "one-vs-rest, 10 classes"
    else:
        direction = ember.jit(newton_direction)
        w = enp.zeros(d_feat, dtype="float64")
        what = f"digit {args.classes[0]} vs {args.classes[1]}"
    print(f"Newton-CG logistic regression ({what}): {x.shape[0]} examples, {d_feat} weights, "
          f"lambda={args.lam}")

    # the HVP against the explicit Hessian, once, at a random point
    rng = np.random.default_rng(0)
    w_rand, v = enp.asarray(rng.normal(size=d_feat) * 0.1), enp.asarray(rng.normal(size=d_feat))
    y0 = y[0] if args.one_vs_rest else y
    h = ember.hessian(loss)(w_rand, x, y0)
    hvp_err = float(enp.linalg.norm(hvp(w_rand, v, x, y0) - h @ v) / enp.linalg.norm(h @ v))
    print(f"check: ||hvp(v) - hessian @ v|| / ||hessian @ v|| = {hvp_err:.1e}")

    exact_direction = ember.jit(
        lambda w, x, y: enp.linalg.solve(ember.hessian(loss)(w, x, y), -ember.grad(loss)(w, x, y)))
    if args.one_vs_rest:
        exact_direction = ember.jit(ember.vmap(exact_direction, in_axes=(0, None, 0)))
    loss_all = ember.jit(ember.vmap(loss, in_axes=(0, None, 0)) if args.one_vs_rest else loss)

    print(f"{'iter':>4s} {'loss':>12s} {'||grad||':>10s} {'CG its':>8s} {'|d - d_exact|/|d_exact|':>24s}")
    history = []
    t0 = time.perf_counter()
    for it in range(args.iters):
        d, k, g = direction(w, x, y)
        d_exact = exact_direction(w, x, y)
        gnorm = float(enp.max(enp.linalg.norm(g, axis=-1)))
        rel = float(enp.max(enp.linalg.norm(d - d_exact, axis=-1) / enp.linalg.norm(d_exact, axis=-1)))
        lval = float(enp.sum(loss_all(w, x, y)))
        cg_its = k.tolist()
        history.append({"loss": lval, "grad_norm": gnorm, "cg_iters": cg_its, "direction_rel_err": rel})
        print(f"{it:4d} {lval:12.8f} {gnorm:10.3e} {str(cg_its) if not args.one_vs_rest else max(cg_its):>8} "
              f"{rel:24.2e}", flush=True)
        if gnorm <= args.tol:
            break
        w = w + d  # full Newton steps: the objective is smooth and strongly convex
    seconds = time.perf_counter() - t0

    scores = x_test @ (w.T if args.one_vs_rest else w)
    if args.one_vs_rest:
        acc = float(np.mean(np.argmax(np.asarray(scores), axis=1) == labels_test))
    else:
        acc = float(np.mean((np.asarray(scores) > 0) == (np.asarray(y_test) > 0.5)))
    print(f"converged to ||grad|| = {history[-1]['grad_norm']:.2e} after {len(history) - 1} Newton "
          f"steps in {seconds:.1f}s; test accuracy {acc:.3f}")
    figure = None if args.no_plot else plot_convergence(
        history, what, os.path.join(args.out_dir, "newton_convergence.png"))
    return {"history": history, "test_accuracy": acc, "hvp_check": hvp_err, "seconds": seconds,
            "figure": figure}


def plot_convergence(history: list[dict], what: str, path: str) -> str | None:
    """Gradient norm and the direction's error per Newton step (log scale): the
    quadratic convergence shows as a steepening line; CG iterations per step."""
    plt = pyplot("Newton-CG convergence figure")
    if plt is None:
        return None
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    its = np.arange(len(history))
    tiny = np.finfo(np.float64).tiny  # an exactly-zero norm would vanish from a log plot
    a.semilogy(its, [max(h["grad_norm"], tiny) for h in history], "o-", label="||grad||")
    a.semilogy(its, [max(h["direction_rel_err"], tiny) for h in history], "s--",
               label="|d - d_exact| / |d_exact|")
    a.set_xlabel("Newton step"); a.set_title(f"Newton-CG ({what})"); a.legend()
    b.bar(its, [max(np.atleast_1d(h["cg_iters"])) for h in history])
    b.set_xlabel("Newton step"); b.set_ylabel("CG iterations (max over problems)")
    return save_figure(fig, path)


if __name__ == "__main__":
    main()
