"""Fit the parameters of an ODE by differentiating through its solver.

A damped pendulum

    theta'' = -omega^2 sin(theta) - gamma theta'

is integrated with fixed-step RK4 inside `ember.scan` (one scan step per
observation, a few RK4 sub-steps each), from several initial conditions at
once with `ember.vmap`.  Noisy observations of theta come from the true
parameters; the fit minimises the mean squared error over log(omega^2) and
log(gamma) by gradient descent, with `ember.grad` running backwards through
the scan.

The optimiser itself is compiled: `fit_chunk` is an `ember.while_loop` that
runs until the gradient norm falls below a tolerance (or a chunk of iterations
is done), and each iteration uses `ember.cond` to accept a trial step if it
lowers the loss (then grows the step size) or reject it (and halve the step
size).  Python only prints progress between chunks.

At the optimum, forward-mode `ember.jacfwd` of the residuals through the
solver gives the Gauss-Newton approximation of the parameters' standard errors.

Run:   python examples/ode_fit_scan.py                 # ~20 s on 2 cores
"""
from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

import ember
import ember.numpy as enp

from _common import Progress, add_output_args, pyplot, save_figure


# --- the model -------------------------------------------------------------------------

def pendulum(state, log_params):
    theta, omega_dot = state[0], state[1]
    omega2, gamma = enp.exp(log_params[0]), enp.exp(log_params[1])
    return enp.stack([omega_dot, -omega2 * enp.sin(theta) - gamma * omega_dot])


def rk4_step(state, log_params, dt):
    k1 = pendulum(state, log_params)
    k2 = pendulum(state + 0.5 * dt * k1, log_params)
    k3 = pendulum(state + 0.5 * dt * k2, log_params)
    k4 = pendulum(state + dt * k3, log_params)
    return state + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def make_solver(n_obs: int, dt: float, substeps: int):
    """solve(log_params, state0) -> theta at t = dt, 2 dt, ..., n_obs dt."""
    h = dt / substeps

    def solve(log_params, state0):
        def advance(state, _):
            for _ in range(substeps):  # unrolled: a few RK4 steps per observation
                state = rk4_step(state, log_params, h)
            return state, state[0]
        _, thetas = ember.scan(advance, state0, None, length=n_obs)
        return thetas

    return solve


# --- main ------------------------------------------------------------------------------

def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--omega", type=float, default=2.0, help="true natural frequency")
    ap.add_argument("--gamma", type=float, default=0.3, help="true damping")
    ap.add_argument("--init-omega", type=float, default=1.5, help="initial guess")
    ap.add_argument("--init-gamma", type=float, default=0.1, help="initial guess")
    ap.add_argument("--n-obs", type=int, default=60, help="observations per trajectory")
    ap.add_argument("--dt", type=float, default=0.05, help="time between observations")
    ap.add_argument("--substeps", type=int, default=2, help="RK4 steps between observations")
    ap.add_argument("--n-init", type=int, default=4, help="trajectories (initial conditions)")
    ap.add_argument("--noise", type=float, default=0.05, help="observation noise std")
    ap.add_argument("--max-iters", type=int, default=1000)
    ap.add_argument("--chunk", type=int, default=50, help="iterations per compiled chunk")
    ap.add_argument("--tol", type=float, default=1e-6, help="stop when ||grad|| <= tol")
    ap.add_argument("--seed", type=int, default=0)
    add_output_args(ap, "runs/ode_fit_scan")
    args = ap.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    solve = make_solver(args.n_obs, args.dt, args.substeps)
    solve_all = ember.vmap(solve, in_axes=(None, 0))  # many initial conditions, one program

    true = enp.asarray(np.log([args.omega ** 2, args.gamma]))
    inits = np.stack([rng.uniform(-2.5, 2.5, args.n_init), rng.uniform(-1.0, 1.0, args.n_init)], axis=1)
    inits = enp.asarray(inits)
    clean = ember.jit(solve_all)(true, inits)
    observed = clean + enp.asarray(args.noise * rng.standard_normal(clean.shape))

    def residuals(log_params):
        return (solve_all(log_params, inits) - observed).reshape(-1)

    def loss(log_params):
        return enp.mean(residuals(log_params) ** 2)

    value_and_grad = ember.value_and_grad(loss)

    @ember.jit
    def fit_chunk(state, max_iters):
        """Adaptive gradient descent until ||grad|| <= tol or `max_iters` more iterations."""
        def keep_going(s):
            _, _, g, _, k = s
            return (enp.linalg.norm(g) > args.tol) & (k < max_iters)

        def iteration(s):
            p, l, g, lr, k = s
            trial = p - lr * g
            l_trial, g_trial = value_and_grad(trial)
            accept = l_trial < l
            return ember.cond(accept,
                              lambda: (trial, l_trial, g_trial, lr * 1.2, k + 1),
                              lambda: (p, l, g, lr * 0.5, k + 1))

        p, l, g, lr, _ = state
        return ember.while_loop(keep_going, iteration, (p, l, g, lr, enp.asarray(0, dtype="int32")))

    p0 = enp.asarray(np.log([args.init_omega ** 2, args.init_gamma]))
    print(f"damped pendulum: true omega={args.omega}, gamma={args.gamma}; "
          f"{args.n_init} trajectories x {args.n_obs} noisy observations (std {args.noise}); "
          f"RK4 with dt={args.dt / args.substeps:g} inside ember.scan")

    # reverse mode through the scan agrees with forward mode (a directional derivative)
    v = enp.asarray([0.3, -0.7], dtype="float64")   # a tangent has its primal's dtype
    fwd = float(ember.jvp(loss, (p0,), (v,))[1])
    rev = float(enp.vdot(ember.grad(loss)(p0), v))
    print(f"check: jvp {fwd:.8f} vs grad . v {rev:.8f} (rel diff {abs(fwd - rev) / abs(fwd):.1e})")

    t0 = time.perf_counter()
    l0, g0 = ember.jit(value_and_grad)(p0)
    state = (p0, l0, g0, enp.asarray(0.1, dtype="float64"), enp.asarray(0, dtype="int32"))
    done, history = 0, []
    bar = Progress(range(math.ceil(args.max_iters / args.chunk)), desc="fit (chunks)")
    for _ in bar:
        state = fit_chunk(state, min(args.chunk, args.max_iters - done))
        p, l, g, lr, k = state
        done += int(k)
        gnorm = float(enp.linalg.norm(g))
        omega, gamma = np.sqrt(np.exp(float(p[0]))), np.exp(float(p[1]))
        history.append((done, float(l), gnorm))
        bar.write(f"iter {done:5d}  loss {float(l):.6f}  ||grad|| {gnorm:.2e}  step {float(lr):.3g}  "
                  f"omega {omega:.4f}  gamma {gamma:.4f}  [{time.perf_counter() - t0:5.1f}s]")
        if gnorm <= args.tol or int(k) == 0 or done >= args.max_iters:
            break
    bar.close()
    seconds = time.perf_counter() - t0

    # Gauss-Newton standard errors: cov = s^2 (J^T J)^-1, J = d residuals / d log-params
    p = state[0]
    jac = ember.jacfwd(residuals)(p)
    s2 = float(enp.sum(residuals(p) ** 2)) / (jac.shape[0] - jac.shape[1])
    cov = s2 * np.linalg.inv(np.asarray(jac.T @ jac))
    se_log = np.sqrt(np.diag(cov))
    est_omega, est_gamma = np.sqrt(np.exp(float(p[0]))), np.exp(float(p[1]))
    se_omega = 0.5 * est_omega * se_log[0]  # delta method: omega = exp(p0 / 2)
    se_gamma = est_gamma * se_log[1]
    print(f"fit finished in {seconds:.1f}s ({done} iterations)")
    print(f"  omega: true {args.omega:.4f}  recovered {est_omega:.4f} +- {se_omega:.4f}")
    print(f"  gamma: true {args.gamma:.4f}  recovered {est_gamma:.4f} +- {se_gamma:.4f}")
    print(f"  residual std {np.sqrt(s2):.4f} (noise std {args.noise})")
    figure = None
    if not args.no_plot:
        figure = plot_fit(np.asarray(observed), np.asarray(ember.jit(solve_all)(p, inits)),
                          np.asarray(ember.jit(solve_all)(p0, inits)), np.asarray(clean),
                          args.dt, history, os.path.join(args.out_dir, "ode_fit.png"))
    return {"omega": est_omega, "gamma": est_gamma, "omega_se": float(se_omega),
            "gamma_se": float(se_gamma), "iterations": done, "history": history,
            "grad_check": abs(fwd - rev) / abs(fwd), "seconds": seconds, "figure": figure}


def plot_fit(observed, fitted, initial, clean, dt, history, path: str) -> str | None:
    """Observed angles, the initial guess and the fitted trajectories; the loss curve."""
    plt = pyplot("ODE-fit figure")
    if plt is None:
        return None
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    t = dt * np.arange(1, observed.shape[1] + 1)
    for i in range(observed.shape[0]):
        c = f"C{i % 10}"
        a.plot(t, observed[i], ".", color=c, ms=4)
        a.plot(t, fitted[i], "-", color=c, label="fit" if i == 0 else None)
        a.plot(t, initial[i], ":", color=c, alpha=0.6, label="initial guess" if i == 0 else None)
        a.plot(t, clean[i], "--", color="k", lw=0.8, alpha=0.5, label="true" if i == 0 else None)
    a.set_xlabel("t"); a.set_ylabel("theta"); a.set_title("damped pendulum: data and fit"); a.legend()
    iters, losses, _ = zip(*history)
    b.semilogy(iters, losses, "o-")
    b.set_xlabel("iteration"); b.set_ylabel("mean squared error"); b.set_title("fit")
    return save_figure(fig, path)


if __name__ == "__main__":
    main()
