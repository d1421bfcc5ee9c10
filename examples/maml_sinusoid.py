"""MAML (Finn, Abbeel & Levine, 2017) on few-shot sinusoid regression.

Each task is a sine wave y = A sin(x - phi) with amplitude A in [0.1, 5] and
phase phi in [0, pi], observed at K points x in [-5, 5].  MAML learns an
initialisation theta such that a few plain SGD steps on a new task's K examples
("inner loop", `ember.grad`) give a good fit.  The meta-gradient differentiates
*through* those inner SGD steps (a gradient of a gradient, through an
`ember.fori_loop`), is averaged over a batch of tasks with `ember.vmap`, and
the whole meta step, Adam update included, is compiled with `ember.jit`.

For comparison, a "pretrained" network with the same architecture is trained
for the same number of steps to fit all tasks at once (no adaptation in the
objective), then fine-tuned on each held-out task with the same number of SGD
steps (at the best of a few step sizes).
`--first-order` drops the second-order terms (first-order MAML) with
`ember.stop_gradient`.

Run:   python examples/maml_sinusoid.py                # ~1.5 minutes on 2 cores
"""
from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

import ember
import ember.numpy as enp
from ember import optim

from _common import Progress, add_output_args, pyplot, save_figure


# --- tasks -----------------------------------------------------------------------------

def f32(a):
    return enp.asarray(a, dtype="float32")


def sample_tasks(rng: np.random.Generator, n_tasks: int, k_support: int, n_query: int,
                 query_grid: np.ndarray | None = None):
    """Support and query sets of `n_tasks` random sinusoids, arrays (tasks, points, 1).
    The query points are random, or `query_grid` (the same points for every task)."""
    amp = rng.uniform(0.1, 5.0, size=(n_tasks, 1, 1))
    phase = rng.uniform(0.0, math.pi, size=(n_tasks, 1, 1))
    xs = rng.uniform(-5.0, 5.0, size=(n_tasks, k_support, 1))
    if query_grid is None:
        xq = rng.uniform(-5.0, 5.0, size=(n_tasks, n_query, 1))
    else:
        xq = np.broadcast_to(query_grid.reshape(1, -1, 1), (n_tasks, query_grid.size, 1))
    return (f32(xs), f32(amp * np.sin(xs - phase)), f32(xq), f32(amp * np.sin(xq - phase)))


# --- the model -------------------------------------------------------------------------

def init_mlp(rng: np.random.Generator, sizes) -> list:
    """He-normal weights and zero biases for a ReLU MLP."""
    return [{"w": enp.asarray(rng.normal(0.0, math.sqrt(2.0 / a), (a, b)), dtype="float32"),
             "b": enp.zeros(b, dtype="float32")}
            for a, b in zip(sizes[:-1], sizes[1:])]


def net(params, x):
    h = x
    for layer in params[:-1]:
        h = enp.maximum(h @ layer["w"] + layer["b"], 0.0)
    return h @ params[-1]["w"] + params[-1]["b"]


def mse(params, x, y):
    return enp.mean((net(params, x) - y) ** 2)


def adapt(params, x, y, steps: int, inner_lr: float, first_order: bool = False):
    """`steps` SGD steps on one task's support set; differentiable w.r.t. `params`."""
    def sgd_step(_, p):
        g = ember.grad(mse)(p, x, y)
        if first_order:
            g = ember.stop_gradient(g)
        return ember.tree.map(lambda w, gw: w - inner_lr * gw, p, g)
    # static bounds: fori_loop lowers to scan, so reverse mode runs through it
    return ember.fori_loop(0, steps, sgd_step, params)


# --- figure ----------------------------------------------------------------------------

def plot_adaptation(results: dict, maml_params, base_params, args, path: str) -> str | None:
    """Left: held-out MSE against SGD steps for both models. Right: one new task,
    the true curve, its support points and each model before/after adapting."""
    plt = pyplot("adaptation figure")
    if plt is None:
        return None
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    steps = sorted(results["maml"])
    a.plot(steps, [results["maml"][s] for s in steps], "o-", label="MAML")
    a.plot(steps, [results["pretrained"][s] for s in steps], "s--", label="pretrained (best lr)")
    a.set_xlabel("SGD steps on the support set"); a.set_ylabel("held-out MSE"); a.legend()
    a.set_title("adaptation curves")
    rng = np.random.default_rng(args.seed + 20_000)
    grid = np.linspace(-5.0, 5.0, 200)
    xs, ys, xq, yq = sample_tasks(rng, 1, args.k_shot, 0, query_grid=grid)
    xs, ys, xq, yq = xs[0], ys[0], xq[0], yq[0]
    k = max(steps) if max(steps) > 0 else 1
    b.plot(grid, np.asarray(yq)[:, 0], "k-", lw=2, label="true")
    b.plot(np.asarray(xs)[:, 0], np.asarray(ys)[:, 0], "k^", label=f"{args.k_shot} support points")
    for name, params, style in (("MAML", maml_params, "C0"), ("pretrained", base_params, "C1")):
        b.plot(grid, np.asarray(net(params, xq))[:, 0], style, ls=":", label=f"{name}, 0 steps")
        adapted = adapt(params, xs, ys, k, args.inner_lr)
        b.plot(grid, np.asarray(net(adapted, xq))[:, 0], style, label=f"{name}, {k} steps")
    b.set_xlabel("x"); b.set_title("a held-out task"); b.legend(fontsize=7)
    return save_figure(fig, path)


# --- main ------------------------------------------------------------------------------

def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--meta-steps", type=int, default=8000)
    ap.add_argument("--meta-batch", type=int, default=25, help="tasks per meta step")
    ap.add_argument("--k-shot", type=int, default=10, help="support points per task")
    ap.add_argument("--n-query", type=int, default=10, help="query points per training task")
    ap.add_argument("--inner-steps", type=int, default=1, help="SGD steps in the inner loop")
    ap.add_argument("--inner-lr", type=float, default=0.01)
    ap.add_argument("--outer-lr", type=float, default=1e-3)
    ap.add_argument("--hidden", type=int, default=40)
    ap.add_argument("--first-order", action="store_true", help="first-order MAML")
    ap.add_argument("--eval-tasks", type=int, default=500, help="held-out tasks")
    ap.add_argument("--eval-steps", type=int, nargs="+", default=[0, 1, 5, 10],
                    help="numbers of inner steps to report at evaluation")
    ap.add_argument("--log-every", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    add_output_args(ap, "runs/maml_sinusoid")
    args = ap.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    sizes = [1, args.hidden, args.hidden, 1]
    tx = optim.adam(lr=args.outer_lr)

    def task_loss(params, xs, ys, xq, yq):
        adapted = adapt(params, xs, ys, args.inner_steps, args.inner_lr, args.first_order)
        return mse(adapted, xq, yq)

    def meta_loss(params, xs, ys, xq, yq):
        per_task = ember.vmap(task_loss, in_axes=(None, 0, 0, 0, 0))(params, xs, ys, xq, yq)
        return enp.mean(per_task)

    def joint_loss(params, xs, ys, xq, yq):
        # the baseline sees the same data but is not trained to adapt
        x = enp.concatenate([xs, xq], axis=1)
        y = enp.concatenate([ys, yq], axis=1)
        return enp.mean(ember.vmap(mse, in_axes=(None, 0, 0))(params, x, y))

    def make_step(objective):
        @ember.jit
        def step(params, opt_state, *batch):
            loss, grads = ember.value_and_grad(objective)(params, *batch)
            updates, opt_state = tx.update(grads, opt_state, params)
            return optim.apply_updates(params, updates), opt_state, loss
        return step

    def train(name, objective, params):
        step_fn = make_step(objective)
        opt_state = tx.init(params)
        t0 = time.perf_counter()
        running, history = None, []
        bar = Progress(range(args.meta_steps), desc=name)
        for i in bar:
            batch = sample_tasks(rng, args.meta_batch, args.k_shot, args.n_query)
            params, opt_state, loss = step_fn(params, opt_state, *batch)
            loss = float(loss)
            running = loss if running is None else 0.98 * running + 0.02 * loss
            if i % args.log_every == 0 or i == args.meta_steps - 1:
                history.append((i, running))
                msg = f"{name:10s} step {i:5d}  loss (smoothed) {running:7.4f}  [{time.perf_counter() - t0:6.1f}s]"
                bar.write(msg)
        bar.close()
        return params, history, time.perf_counter() - t0

    kind = "first-order MAML" if args.first_order else "MAML"
    print(f"{kind}: {args.k_shot}-shot sinusoid regression, {args.inner_steps} inner SGD step(s) "
          f"with lr {args.inner_lr}, {args.meta_batch} tasks per meta step, "
          f"{args.meta_steps} meta steps")
    init = init_mlp(rng, sizes)
    maml_params, maml_hist, maml_s = train("maml", meta_loss, init)
    base_params, base_hist, base_s = train("pretrained", joint_loss, init)

    # held-out tasks from their own generator, each scored on 100 points covering [-5, 5]
    eval_rng = np.random.default_rng(args.seed + 10_000)
    held_out = sample_tasks(eval_rng, args.eval_tasks, args.k_shot, 0,
                            query_grid=np.linspace(-5.0, 5.0, 100))

    def eval_after(params, xs, ys, xq, yq, steps, lr):
        def one(xs, ys, xq, yq):
            return mse(adapt(params, xs, ys, steps, lr), xq, yq)
        return enp.mean(ember.vmap(one)(xs, ys, xq, yq))
    # `steps` is a loop bound, so it is static: one compile per step count (lr is traced)
    eval_after = ember.jit(eval_after, static_argnums=5)

    # The pretrained net is not trained to be adaptable: with MAML's inner step size its
    # fine-tuning can diverge, so it gets the best of several step sizes (an advantage).
    base_lrs = [args.inner_lr * f for f in (1.0, 0.3, 0.1, 0.03)]
    results = {"maml": {}, "pretrained": {}, "pretrained_lr": {}}
    print(f"\nheld-out tasks: {args.eval_tasks}, adapted on {args.k_shot} points, "
          f"MSE on 100 points over [-5, 5]")
    print(f"{'SGD steps':>10s} {'MAML':>10s} {'pretrained':>12s}  (pretrained: best step size of "
          f"{', '.join(f'{lr:g}' for lr in base_lrs)})")
    for s in args.eval_steps:
        m = float(eval_after(maml_params, *held_out, s, args.inner_lr))
        with np.errstate(all="ignore"):  # a diverging step size may overflow; it just loses
            tried = [(float(eval_after(base_params, *held_out, s, lr)), lr) for lr in base_lrs]
        b, blr = min(tried, key=lambda t: t[0] if np.isfinite(t[0]) else np.inf)
        results["maml"][s], results["pretrained"][s], results["pretrained_lr"][s] = m, b, blr
        print(f"{s:10d} {m:10.4f} {b:12.4f}  (step size {blr:g})")
    print(f"training time: MAML {maml_s:.1f}s, pretrained {base_s:.1f}s")
    figure = None if args.no_plot else plot_adaptation(
        results, maml_params, base_params, args, os.path.join(args.out_dir, "adaptation.png"))
    return {"results": results, "maml_history": maml_hist, "pretrained_history": base_hist,
            "seconds": maml_s + base_s, "figure": figure}


if __name__ == "__main__":
    main()
