"""A physics-informed neural network (PINN) for the 2-D Poisson equation.

Problem, on the unit square Omega = (0, 1)^2:

    -(u_xx + u_yy) = f        in Omega,      f(x, y) = 2 pi^2 sin(pi x) sin(pi y)
                 u = 0        on the boundary

whose exact solution is u*(x, y) = sin(pi x) sin(pi y).

The network u_theta(x, y) is a tanh MLP written with `ember.numpy` over an
explicit parameter pytree.  The loss is the mean squared PDE residual at random
collocation points; the residual needs the Laplacian of the network with
respect to its *inputs*, i.e. second derivatives, which come from
`ember.hessian` (forward-over-reverse) applied per point under `ember.vmap`.
Training takes gradients of that loss with respect to the *parameters* (a third
level of differentiation) and the whole step (sampling aside) is compiled with
`ember.jit`.

Boundary conditions are imposed either exactly ("hard": u = x(1-x)y(1-y) * MLP,
the default, which converges fastest) or through a penalty on boundary points
("soft", the textbook PINN).

Run:   python examples/pinn_poisson.py                 # ~1 minute on 2 cores
       python examples/pinn_poisson.py --bc soft --steps 6000
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


# --- the model -------------------------------------------------------------------------

def init_mlp(rng: np.random.Generator, sizes) -> list:
    """Glorot-normal weights and zero biases, as a list of {"w", "b"} dicts."""
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        std = math.sqrt(2.0 / (fan_in + fan_out))
        params.append({"w": enp.asarray(rng.normal(0.0, std, (fan_in, fan_out)), dtype="float32"),
                       "b": enp.zeros(fan_out, dtype="float32")})
    return params


def mlp(params, xy):
    """The raw network: a point (2,) -> a scalar."""
    h = xy
    for layer in params[:-1]:
        h = enp.tanh(h @ layer["w"] + layer["b"])
    return (h @ params[-1]["w"] + params[-1]["b"])[0]


def make_solution(bc: str):
    """u_theta(params, xy) for the chosen way of imposing u = 0 on the boundary."""
    if bc == "hard":
        def u(params, xy):
            x, y = xy[0], xy[1]
            return x * (1.0 - x) * y * (1.0 - y) * mlp(params, xy)
    else:
        u = mlp
    return u


# --- the PDE ---------------------------------------------------------------------------

def exact(xy):
    return np.sin(np.pi * xy[..., 0]) * np.sin(np.pi * xy[..., 1])


def source(xy):
    """f = -Laplacian(u*), evaluated with ember so it can live inside the jitted step."""
    return 2.0 * math.pi ** 2 * enp.sin(math.pi * xy[..., 0]) * enp.sin(math.pi * xy[..., 1])


def make_loss(u, bc: str, bc_weight: float):
    def laplacian(params, xy):
        # d^2 u / d xy^2 at one point: a (2, 2) matrix from forward-over-reverse.
        h = ember.hessian(u, argnums=1)(params, xy)
        return h[0, 0] + h[1, 1]

    def loss(params, interior, boundary):
        lap = ember.vmap(laplacian, in_axes=(None, 0))(params, interior)
        pde = enp.mean((-lap - source(interior)) ** 2)
        if bc == "hard":
            return pde, pde
        ub = ember.vmap(u, in_axes=(None, 0))(params, boundary)
        return pde + bc_weight * enp.mean(ub ** 2), pde

    return loss


def sample_boundary(rng: np.random.Generator, n: int) -> np.ndarray:
    """n points spread over the four edges of the unit square."""
    t = rng.uniform(size=n)
    side = rng.integers(0, 4, size=n)
    x = np.where(side == 0, 0.0, np.where(side == 1, 1.0, t))
    y = np.where(side == 2, 0.0, np.where(side == 3, 1.0, t))
    return np.stack([x, y], axis=1)


def solution_field(u, params, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(predicted, exact) solution on an n x n grid over the unit square."""
    g = np.linspace(0.0, 1.0, n)
    xx, yy = np.meshgrid(g, g, indexing="ij")
    pts = np.stack([xx.ravel(), yy.ravel()], axis=1)
    pred = np.asarray(ember.jit(ember.vmap(u, in_axes=(None, 0)))(params, enp.asarray(pts, dtype="float32")))
    return pred.astype(np.float64).reshape(n, n), exact(pts).reshape(n, n)


def evaluate(u, params, n: int) -> dict:
    """Relative L2 and max errors against the exact solution on an n x n grid."""
    pred, true = solution_field(u, params, n)
    err = pred - true
    return {"rel_l2": float(np.linalg.norm(err) / np.linalg.norm(true)),
            "max_abs": float(np.abs(err).max())}


def plot_solution(u, params, n: int, history, path: str) -> str | None:
    """The learned field, the pointwise error and the loss curve as one PNG."""
    plt = pyplot("solution-field figure")
    if plt is None:
        return None
    pred, true = solution_field(u, params, n)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    im = axes[0].imshow(pred.T, origin="lower", extent=(0, 1, 0, 1), cmap="viridis")
    axes[0].set_title("PINN solution u(x, y)")
    fig.colorbar(im, ax=axes[0])
    im = axes[1].imshow(np.abs(pred - true).T, origin="lower", extent=(0, 1, 0, 1), cmap="magma")
    axes[1].set_title("|u - exact|")
    fig.colorbar(im, ax=axes[1])
    steps, losses = zip(*history)
    axes[2].semilogy(steps, losses)
    axes[2].set_xlabel("step"); axes[2].set_ylabel("loss"); axes[2].set_title("training loss")
    return save_figure(fig, path)


# --- training --------------------------------------------------------------------------

def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=3000, help="Adam steps")
    ap.add_argument("--batch", type=int, default=256, help="interior collocation points per step")
    ap.add_argument("--width", type=int, default=32)
    ap.add_argument("--depth", type=int, default=2, help="hidden layers")
    ap.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (cosine decay)")
    ap.add_argument("--bc", choices=("hard", "soft"), default="hard")
    ap.add_argument("--bc-weight", type=float, default=100.0, help="boundary penalty (--bc soft)")
    ap.add_argument("--grid", type=int, default=101, help="evaluation grid size per axis")
    ap.add_argument("--log-every", type=int, default=250)
    ap.add_argument("--seed", type=int, default=0)
    add_output_args(ap, "runs/pinn_poisson")
    args = ap.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    u = make_solution(args.bc)
    loss_fn = make_loss(u, args.bc, args.bc_weight)
    params = init_mlp(rng, [2] + [args.width] * args.depth + [1])
    tx = optim.adam(lr=optim.cosine_decay(args.lr, args.steps, alpha=0.01))
    opt_state = tx.init(params)

    @ember.jit
    def train_step(params, opt_state, interior, boundary):
        (loss, pde), grads = ember.value_and_grad(loss_fn, has_aux=True)(params, interior, boundary)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss, pde

    n_params = sum(int(p.size) for p in ember.tree.leaves(params))
    print(f"PINN for -Laplace(u) = 2 pi^2 sin(pi x) sin(pi y) on (0,1)^2, boundary: {args.bc}")
    print(f"MLP 2 -> {' -> '.join([str(args.width)] * args.depth)} -> 1 ({n_params} parameters), "
          f"{args.batch} collocation points/step, {args.steps} Adam steps")
    before = evaluate(u, params, args.grid)

    t0 = time.perf_counter()
    history = []
    bar = Progress(range(args.steps), desc="train")
    for step in bar:
        interior = enp.asarray(rng.uniform(size=(args.batch, 2)), dtype="float32")
        boundary = enp.asarray(sample_boundary(rng, max(args.batch // 4, 4)), dtype="float32")
        params, opt_state, loss, pde = train_step(params, opt_state, interior, boundary)
        if step == 0:
            compile_s = time.perf_counter() - t0
        if step % args.log_every == 0 or step == args.steps - 1:
            history.append((step, float(loss)))
            msg = (f"step {step:5d}  loss {float(loss):.3e}  pde residual {float(pde):.3e}  "
                   f"[{time.perf_counter() - t0:6.1f}s]")
            bar.write(msg)
    bar.close()
    train_s = time.perf_counter() - t0

    after = evaluate(u, params, args.grid)
    print(f"first step (trace + compile + run): {compile_s:.1f}s; training total {train_s:.1f}s")
    print(f"error vs exact solution on a {args.grid}x{args.grid} grid:")
    print(f"  before training: relative L2 {before['rel_l2']:.3e}, max |err| {before['max_abs']:.3e}")
    print(f"  after training:  relative L2 {after['rel_l2']:.3e}, max |err| {after['max_abs']:.3e}")
    figure = None if args.no_plot else plot_solution(
        u, params, args.grid, history, os.path.join(args.out_dir, "solution.png"))
    return {"before": before, "after": after, "history": history, "seconds": train_s,
            "figure": figure}


if __name__ == "__main__":
    main()
