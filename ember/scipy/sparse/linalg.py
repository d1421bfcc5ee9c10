"""Matrix-free Krylov solvers with JAX's `jax.scipy.sparse.linalg` signatures: `cg` and
`gmres`.  Each runs in a `while_loop` inside `lax.custom_linear_solve`, so its gradient
is implicit (one more solve, with the transposed operator) and it works under jit, vmap,
jvp and grad.  `A` and `M` may be matrices or functions; `b` may be a pytree."""
from __future__ import annotations

import numpy as np

from ... import numpy as enp
from ...flatten_util import ravel_pytree
from ...fx.core import get_aval
from ...transforms.control_flow import fori_loop, while_loop
from ...transforms.implicit import custom_linear_solve
from ...transforms.misc import stop_gradient
from ...tree import tree_flatten, tree_unflatten

__all__ = ["cg", "gmres"]


def _as_operator(A, name, what, n=None):
    if callable(A):
        return A
    a = enp.asarray(A)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise TypeError(f"{name}: `{what}` must be a square matrix or a function, got "
                        f"{a.aval.str_user()}")
    if n is not None and a.shape[0] != n:
        raise TypeError(f"{name}: `{what}` must be {n} x {n} to match b's {n} entries, got "
                        f"{a.aval.str_user()}")
    return lambda x: _tree_map(lambda v: enp.matmul(a, v), x)


def _maxiter(name, maxiter, n):
    if maxiter is None:
        return 10 * n
    if isinstance(maxiter, bool) or not isinstance(maxiter, (int, np.integer)) or maxiter < 0:
        raise TypeError(f"{name}: maxiter must be a non-negative Python int or None, got "
                        f"{maxiter!r}")
    return int(maxiter)


def _tree_map(f, t):
    leaves, tree = tree_flatten(t)
    return tree_unflatten(tree, [f(v) for v in leaves])


def _flat_problem(A, b, x0, M, name):
    """The problem on one flat vector: (matvec_flat, b_flat, x0_flat, precond_flat, unravel)."""
    b_flat, unravel = ravel_pytree(b)
    n = b_flat.shape[0] if not callable(A) and not isinstance(b, (list, tuple, dict)) else None
    A = _as_operator(A, name, "A", n)
    M = (lambda x: x) if M is None else _as_operator(M, name, "M", n)
    if x0 is None:
        x0_flat = enp.zeros_like(b_flat)
    else:
        x0_flat, _ = ravel_pytree(x0)
        if get_aval(x0_flat) != get_aval(b_flat).update(weak_type=get_aval(x0_flat).weak_type):
            raise TypeError(f"{name}: x0 must have the structure, shapes and dtype of b: b is "
                            f"{get_aval(b_flat).str_user()} flattened, x0 is "
                            f"{get_aval(x0_flat).str_user()} (pass x0.astype({b_flat.dtype.name}))")

    def mv(v):
        return ravel_pytree(A(unravel(v)))[0]

    def pc(v):
        return ravel_pytree(M(unravel(v)))[0]
    _check_dtypes(name, mv, pc, b_flat)
    return A, mv, b_flat, x0_flat, pc, unravel


def _dot(x, y):
    """Re(x^H y), JAX's `_vdot_real_part`: real for the Hermitian forms CG and the norms
    need, and the plain dot product for real vectors."""
    if x.dtype.kind == "c" or y.dtype.kind == "c":
        return enp.sum(enp.real(x) * enp.real(y)) + enp.sum(enp.imag(x) * enp.imag(y))
    return enp.sum(x * y)


def _check_dtypes(name, mv, pc, b_flat):
    """A(x) and M(x) must keep b's dtype (the iteration's carry); a complex operator with a
    real b is the usual way to miss that."""
    from ...transforms.misc import eval_shape
    bt = get_aval(b_flat)
    for what, f in (("A", mv), ("M", pc)):
        out = eval_shape(f, b_flat)
        if out.shape != bt.shape or out.dtype != bt.dtype:
            hint = ""
            if out.shape == bt.shape:
                kind = "a complex" if out.dtype.kind == "c" else f"a {out.dtype.name}"
                hint = f" ({kind} {what} needs a {out.dtype.name} b: pass b.astype({out.dtype.name}))"
            raise TypeError(f"{name}: `{what}` must map b's shape and dtype to themselves: b is "
                            f"{bt.str_user()} flattened, {what}(b) is "
                            f"{out.dtype.name}{list(out.shape)}{hint}")


def _cg_flat(mv, b, x0, pc, tol, atol, maxiter):
    bs = _dot(b, b)
    atol2 = enp.maximum(tol * tol * bs, atol * atol)
    r0 = b - mv(x0)
    z0 = pc(r0)

    def cond(s):
        x, r, gamma, p, k = s
        return (_dot(r, r) > atol2) & (k < maxiter)

    # gamma = Re(r^H z) and p^H A p are real for Hermitian A and M; the steps carry b's
    # dtype, as JAX's
    dt = b.dtype

    def body(s):
        x, r, gamma, p, k = s
        ap = mv(p)
        alpha = gamma / _dot(p, ap).astype(dt)
        x = x + alpha * p
        r = r - alpha * ap
        z = pc(r)
        gamma_new = _dot(r, z).astype(dt)
        p = z + (gamma_new / gamma) * p
        return x, r, gamma_new, p, k + 1

    return while_loop(cond, body, (x0, r0, _dot(r0, z0).astype(dt), z0, 0))[0]


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Solve `A x = b` for a symmetric (complex: Hermitian) positive-definite `A` by
    conjugate gradients (JAX's `jax.scipy.sparse.linalg.cg`).  Stops when ||r|| <= max(tol ||b||, atol) or after
    `maxiter` iterations (default 10 n); `M` is a preconditioner approximating A^-1.
    Returns `(x, info)` with `info` None, as JAX's.  Gradients are implicit: A is symmetric,
    so the backward pass is one more CG solve (for complex A, on the conjugated system).
    A complex A needs a complex `b` (and `x0`): `A(x)` must keep b's dtype.

    Example:
        >>> import ember, ember.numpy as enp
        >>> from ember.scipy.sparse.linalg import cg
        >>> a = enp.asarray([[4.0, 1.0], [1.0, 3.0]])
        >>> x, _ = cg(a, enp.asarray([1.0, 2.0]), tol=1e-7)
        >>> [round(v, 4) for v in x.tolist()]
        [0.0909, 0.6364]
        >>> g = ember.grad(lambda b: enp.sum(cg(a, b, tol=1e-7)[0]))(enp.ones(2))
        >>> [round(v, 4) for v in g.tolist()]
        [0.1818, 0.2727]
    """
    A_tree, mv, b_flat, x0_flat, pc, unravel = _flat_problem(A, b, x0, M, "cg")
    n = b_flat.shape[0]
    maxiter = _maxiter("cg", maxiter, n)
    x0_flat = stop_gradient(x0_flat)

    def solve(matvec, rhs):
        return unravel(_cg_flat(mv, ravel_pytree(rhs)[0], x0_flat, pc, tol, atol, maxiter))

    if b_flat.dtype.kind != "c":
        x = custom_linear_solve(A_tree, b, solve, symmetric=True)
        return x, None

    # complex Hermitian A: A^T = conj(A), so A^T y = c is A conj(y) = conj(c): the
    # transposed solve is the same CG on conjugated data (and keeps M a preconditioner)
    def transpose_solve(vecmat, rhs):
        c = ravel_pytree(rhs)[0]
        y = _cg_flat(mv, enp.conj(c), enp.conj(x0_flat), pc, tol, atol, maxiter)
        return unravel(enp.conj(y))
    x = custom_linear_solve(A_tree, b, solve, transpose_solve)
    return x, None


def _gmres_flat(mv, b, x0, pc, tol, atol, restart, maxiter):
    n = b.shape[0]
    m = max(1, min(restart, n))
    dt = b.dtype
    bnorm = enp.sqrt(_dot(b, b))
    thresh = enp.maximum(tol * bnorm, atol)

    def residual(x):
        return pc(b - mv(x))

    def cycle(x):
        r = residual(x)
        beta = enp.sqrt(_dot(r, r))
        safe_beta = enp.where(beta > 0, beta, enp.ones_like(beta))
        V = enp.zeros((m + 1, n), dt).at[0].set(r / safe_beta)
        H = enp.zeros((m + 1, m), dt)

        def arnoldi(j, vh):
            V, H = vh
            w = pc(mv(V[j]))
            # modified Gram-Schmidt against every basis vector (the ones not built yet
            # are zero), twice for orthogonality in floating point
            for _ in range(2):
                h = enp.conj(V) @ w
                w = w - h @ V
                H = H.at[:, j].add(h)
            hn = enp.sqrt(_dot(w, w))
            H = H.at[j + 1, j].set(hn)
            # a lucky breakdown (w == 0) leaves the next basis vector zero, not NaN
            V = V.at[j + 1].set(w / enp.where(hn > 0, hn, enp.ones_like(hn)))
            return V, H

        V, H = fori_loop(0, m, arnoldi, (V, H))
        g = enp.zeros((m + 1,), dt).at[0].set(beta)
        y = enp.linalg.pinv(H) @ g        # least squares, rank-deficient after a breakdown
        return x + y @ V[:m]

    def cond(s):
        x, rn, k = s
        return (rn > thresh) & (k < maxiter)

    def body(s):
        x, _, k = s
        x = cycle(x)
        r = b - mv(x)
        return x, enp.sqrt(_dot(r, r)), k + 1

    r0 = b - mv(x0)
    return while_loop(cond, body, (x0, enp.sqrt(_dot(r0, r0)), 0))[0]


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
    """Solve `A x = b` for a general (non-singular) `A` by restarted GMRES (JAX's
    `jax.scipy.sparse.linalg.gmres`): each cycle builds a `restart`-dimensional Krylov
    space (Arnoldi with re-orthogonalised Gram-Schmidt) and minimises the residual in it;
    at most `maxiter` cycles (default 10 n) until ||b - A x|| <= max(tol ||b||, atol).
    `M` is a left preconditioner.  `solve_method` is accepted for JAX compatibility
    ("batched" and "incremental" give the same minimiser here).  Returns `(x, None)`.
    Gradients are implicit: the backward pass runs GMRES on the transposed operator.
    Complex systems work as real ones (a complex A needs a complex `b`).

    Example:
        >>> import ember.numpy as enp
        >>> from ember.scipy.sparse.linalg import gmres
        >>> a = enp.asarray([[3.0, 1.0], [-1.0, 2.0]])
        >>> x, _ = gmres(a, enp.asarray([4.0, 1.0]))
        >>> [round(v, 4) for v in x.tolist()]
        [1.0, 1.0]
    """
    if solve_method not in ("batched", "incremental"):
        raise ValueError(f"gmres: solve_method must be 'batched' or 'incremental', got "
                         f"{solve_method!r}")
    A_tree, mv, b_flat, x0_flat, pc, unravel = _flat_problem(A, b, x0, M, "gmres")
    n = b_flat.shape[0]
    maxiter = _maxiter("gmres", maxiter, n)
    x0_flat = stop_gradient(x0_flat)

    def solve(matvec, rhs):
        return unravel(_gmres_flat(mv, ravel_pytree(rhs)[0], x0_flat, pc, tol, atol,
                                   restart, maxiter))

    def transpose_solve(vecmat, rhs):
        def vm(v):
            return ravel_pytree(vecmat(unravel(v)))[0]
        # the transposed system, unpreconditioned (M^T is not known for a function M)
        return unravel(_gmres_flat(vm, ravel_pytree(rhs)[0], enp.zeros_like(x0_flat),
                                   lambda v: v, tol, atol, restart, maxiter))

    x = custom_linear_solve(A_tree, b, solve, transpose_solve)
    return x, None
