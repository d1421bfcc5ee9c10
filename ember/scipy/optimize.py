"""`minimize` with BFGS (JAX's `jax.scipy.optimize.minimize` signature and result), one
`while_loop` with a backtracking line search inside, so it runs eagerly, under jit and
under vmap."""
from __future__ import annotations

from typing import NamedTuple

from .. import numpy as enp
from ..transforms.control_flow import while_loop
from ..transforms.vjp import value_and_grad

__all__ = ["minimize", "OptimizeResults"]


class OptimizeResults(NamedTuple):
    """What `minimize` returns (JAX's fields): `x` the solution, `success`, `status`
    (0 converged, 1 the iteration limit reached, 3 the line search found no decrease),
    `fun` and `jac` at x, `hess_inv` (BFGS's inverse-Hessian estimate), `nfev`, `njev`
    (function and gradient evaluations), `nit` (iterations).

    Example:
        >>> import ember.numpy as enp
        >>> r = minimize(lambda x: enp.sum((x - 3.0) ** 2), enp.zeros(2), method="BFGS")
        >>> bool(r.success), [round(v, 4) for v in r.x.tolist()]
        (True, [3.0, 3.0])
    """
    x: object
    success: object
    status: object
    fun: object
    jac: object
    hess_inv: object
    nfev: object
    njev: object
    nit: object


_OPTIONS = {"maxiter", "norm", "gtol", "line_search_maxiter"}


def minimize(fun, x0, args=(), *, method, tol=None, options=None):
    """Minimise `fun(x, *args)` over a 1-D `x` from `x0` with BFGS (JAX's
    `jax.scipy.optimize.minimize`; `method="BFGS"` is the one method, as in JAX).  Stops
    when the gradient's infinity norm (`options['norm']`) is below `gtol` (`tol` if given,
    else 1e-5), or after `options['maxiter']` iterations (default 200 * len(x0)).  Each
    step is a backtracking (Armijo) line search of at most `line_search_maxiter` (30)
    halvings along the quasi-Newton direction; the inverse-Hessian update is skipped when
    the curvature y.s is not positive, which keeps the estimate positive definite.

    Example:
        >>> import ember, ember.numpy as enp
        >>> def rosen(x):
        ...     return enp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
        >>> r = ember.jit(lambda x0: minimize(rosen, x0, method="BFGS"))(
        ...     enp.asarray([-1.2, 1.0], dtype="float64"))
        >>> int(r.status), [round(v, 5) for v in r.x.tolist()]
        (0, [1.0, 1.0])
    """
    if not isinstance(method, str) or method.lower() != "bfgs":
        raise ValueError(f"minimize: method must be 'BFGS' (the method ember implements, as "
                         f"JAX does), got {method!r}")
    options = dict(options or {})
    unknown = set(options) - _OPTIONS
    if unknown:
        raise TypeError(f"minimize: unknown BFGS option(s) {sorted(unknown)}; options: "
                        f"{sorted(_OPTIONS)}")
    if not isinstance(args, tuple):
        raise TypeError(f"minimize: `args` must be a tuple of extra arguments to fun, got "
                        f"{type(args).__name__}")
    x0 = enp.asarray(x0)
    if x0.ndim != 1:
        raise TypeError(f"minimize: x0 must be 1-D (ravel a pytree with "
                        f"ember.flatten_util.ravel_pytree), got {x0.aval.str_user()}")
    if x0.dtype.kind not in "f" and x0.dtype.name != "bfloat16":
        x0 = x0.astype(enp.result_type(float))
    n = x0.shape[0]
    maxiter = options.get("maxiter", 200 * n)
    norm = options.get("norm", float("inf"))
    gtol = options.get("gtol", 1e-5 if tol is None else tol)
    ls_max = int(options.get("line_search_maxiter", 30))
    dt = x0.dtype
    vg = value_and_grad(lambda x: fun(x, *args))

    def gnorm(g):
        if norm == float("inf"):
            return enp.max(enp.abs(g))
        return enp.sum(enp.abs(g) ** norm) ** (1.0 / norm)

    f0, g0 = vg(x0)
    eye = enp.eye(n, dtype=dt)

    def line_search(x, f, g, p):
        slope = enp.sum(g * p)

        def cond(s):
            alpha, f_new, _, i, ok = s
            return (~ok) & (i < ls_max)

        def body(s):
            alpha, _, _, i, _ = s
            alpha = alpha * 0.5
            f_new, g_new = vg(x + alpha * p)
            ok = enp.isfinite(f_new) & (f_new <= f + 1e-4 * alpha * slope)
            return alpha, f_new, g_new, i + 1, ok

        f1, g1 = vg(x + p)
        ok1 = enp.isfinite(f1) & (f1 <= f + 1e-4 * slope)
        return while_loop(cond, body, (enp.asarray(1.0, dtype=dt), f1, g1, 0, ok1))

    def cond(s):
        k, x, f, g, H, nfev, done, status = s
        return (~done) & (k < maxiter)

    def body(s):
        k, x, f, g, H, nfev, done, status = s
        p = -(H @ g)
        # not a descent direction (H lost definiteness numerically): steepest descent
        p = enp.where(enp.sum(p * g) < 0, p, -g)
        alpha, f_new, g_new, ls_iters, ok = line_search(x, f, g, p)
        s_k = alpha * p
        y_k = g_new - g
        ys = enp.sum(y_k * s_k)
        rho = 1.0 / enp.where(ys > 0, ys, enp.ones_like(ys))
        A = eye - rho * enp.outer(s_k, y_k)
        H_new = A @ H @ A.T + rho * enp.outer(s_k, s_k)
        H = enp.where(ok & (ys > 0), H_new, H)
        x = enp.where(ok, x + s_k, x)
        f = enp.where(ok, f_new, f)
        g = enp.where(ok, g_new, g)
        converged = gnorm(g) < gtol
        status = enp.where(converged, 0, enp.where(ok, 1, 3))
        return (k + 1, x, f, g, H, nfev + ls_iters + 1, converged | ~ok, status)

    init = (0, x0, f0, g0, eye, 1, gnorm(g0) < gtol, enp.where(gnorm(g0) < gtol, 0, 1))
    k, x, f, g, H, nfev, done, status = while_loop(cond, body, init)
    success = status == 0
    return OptimizeResults(x=x, success=success, status=status, fun=f, jac=g, hess_inv=H,
                           nfev=nfev, njev=nfev, nit=k)

