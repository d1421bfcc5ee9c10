"""Testing utilities: derivative checks against finite differences, vmap vs a loop.

Example:
    >>> import ember.numpy as enp
    >>> check_grads(enp.sin, (0.3,), order=2)
"""
from __future__ import annotations


import numpy as np

from . import dtypes as _dt
from .tree import tree_flatten, tree_map, tree_unflatten


def _np(x):
    return np.asarray(x)


def _tol(dtype, atol, rtol):
    d = np.dtype(dtype)
    default = {np.dtype(np.float64): 1e-5, np.dtype(np.complex128): 1e-5}.get(d, 2e-2)
    return atol if atol is not None else default, rtol if rtol is not None else default


def _inner(a, b):
    # Re(sum(a * b)) with no conjugation: ember's transposes are plain (bilinear)
    # transposes, as in JAX, so Re<ct, J t> == Re<J^T ct, t> holds for real,
    # holomorphic and non-holomorphic (R-linear) complex functions alike.
    return float(np.real(np.sum(np.asarray(a, np.complex128) * np.asarray(b, np.complex128))))


def _rand_like(rng, x):
    x = np.asarray(x)
    if np.iscomplexobj(x):
        return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
    return rng.standard_normal(x.shape).astype(x.dtype)


def _as64(x):
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return x.astype(np.complex128)
    if x.dtype.kind == "f" or x.dtype == _dt.bfloat16:
        return x.astype(np.float64)
    return x


def numerical_jvp(f, primals, tangents, eps):
    """Central finite difference of f at primals along tangents (flat lists)."""
    plus = f(*[p + eps * t for p, t in zip(primals, tangents)])
    minus = f(*[p - eps * t for p, t in zip(primals, tangents)])
    return [(_np(a).astype(np.complex128 if np.iscomplexobj(_np(a)) else np.float64)
             - _np(b)) / (2 * eps) for a, b in zip(plus, minus)]


def check_jvp(f, args, atol=None, rtol=None, eps=1e-4, seed=0):
    """Check ember.jvp of f against central differences in float64."""
    from . import jvp
    from .numpy import asarray
    rng = np.random.default_rng(seed)
    leaves, tree = tree_flatten(tuple(args))
    leaves64 = [_as64(x) for x in leaves]
    flat = _flat_fun(f, tree)
    tangents = [_rand_like(rng, x) for x in leaves64]
    out, tout = jvp(lambda *xs: flat(*xs), [asarray(x) for x in leaves64], [asarray(t) for t in tangents])
    num = numerical_jvp(lambda *xs: [_np(o) for o in flat(*[asarray(x) for x in xs])],
                        leaves64, tangents, eps)
    for a, b in zip(tout, num):
        at, rt = _tol(np.float64, atol, rtol)
        np.testing.assert_allclose(_np(a), b, atol=at, rtol=rt, err_msg="jvp vs finite differences")


def _flat_fun(f, tree):
    def flat(*xs):
        out = f(*tree_unflatten(tree, list(xs)))
        return tree_flatten(out)[0]
    return flat


def check_vjp(f, args, atol=None, rtol=None, eps=1e-4, seed=0):
    """Check ember.vjp against ember.jvp through the dot-product identity, and the
    jvp against finite differences: <ct, J t> == <J^T ct, t>."""
    from . import jvp, vjp
    from .numpy import asarray
    rng = np.random.default_rng(seed)
    leaves, tree = tree_flatten(tuple(args))
    leaves64 = [asarray(_as64(x)) for x in leaves]
    flat = _flat_fun(f, tree)
    tangents = [asarray(_rand_like(rng, x)) for x in leaves64]
    _, tout = jvp(lambda *xs: flat(*xs), leaves64, tangents)
    out, f_vjp = vjp(lambda *xs: flat(*xs), *leaves64)
    cts = [asarray(_rand_like(rng, o)) for o in out]
    cts_in = f_vjp(cts)
    lhs = sum(_inner(c, t) for c, t in zip(cts, tout))
    rhs = sum(_inner(c, t) for c, t in zip(cts_in, tangents))
    at, rt = _tol(np.float64, atol, rtol)
    np.testing.assert_allclose(rhs, lhs, atol=at * 10, rtol=rt, err_msg="vjp vs jvp (dot-product test)")


def check_grads(f, args, order: int = 1, modes=("fwd", "rev"), atol=None, rtol=None, eps=1e-4):
    """Check derivatives of `f` up to `order` against float64 finite differences.

    "fwd" checks jvp against central differences; "rev" checks vjp against jvp
    (which is itself checked).  Higher orders check the derivative functions
    themselves recursively, as JAX's check_grads does.

    Example:
        >>> import ember.numpy as enp
        >>> check_grads(lambda x: enp.exp(x) * x, (0.5,), order=3)
    """
    from . import jvp, vjp
    from .numpy import asarray
    args = tuple(tree_map(lambda x: asarray(_as64(x)), a) for a in args)

    def _check(fn, args, k):
        if "fwd" in modes:
            check_jvp(fn, args, atol, rtol, eps)
        if "rev" in modes:
            check_vjp(fn, args, atol, rtol, eps)
        if k < order:
            rng = np.random.default_rng(k + 7)
            leaves, tree = tree_flatten(tuple(args))
            if "fwd" in modes:
                ts = [asarray(_rand_like(rng, x)) for x in leaves]

                def f_jvp(*xs):
                    return jvp(_flat_fun(fn, tree), list(xs), ts)[1]
                _check(f_jvp, tuple(leaves), k + 1)
            if "rev" in modes:
                out = _flat_fun(fn, tree)(*leaves)
                cts = [asarray(_rand_like(rng, o)) for o in out]

                def f_vjp(*xs):
                    return vjp(_flat_fun(fn, tree), *xs)[1](cts)
                _check(f_vjp, tuple(leaves), k + 1)

    _check(f, args, 1)


def check_vmap(f, args, in_axes=0, out_axes=0, atol=1e-6, rtol=1e-6):
    """Check ember.vmap(f) against a Python loop over the mapped axis.

    Example:
        >>> import ember.numpy as enp
        >>> check_vmap(enp.sin, (enp.ones((3, 2)),))
    """
    from . import vmap
    from .numpy import asarray
    got = vmap(f, in_axes=in_axes, out_axes=out_axes)(*args)
    axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
    sizes = [np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None]
    n = sizes[0]
    rows = []
    for i in range(n):
        sl = [a if ax is None else asarray(np.take(np.asarray(a), i, axis=ax)) for a, ax in zip(args, axes)]
        rows.append(f(*sl))
    g_leaves, g_tree = tree_flatten(got)
    row_leaves = [tree_flatten(r)[0] for r in rows]
    oaxes = out_axes if isinstance(out_axes, (tuple, list)) else (out_axes,) * len(g_leaves)
    for j, g in enumerate(g_leaves):
        expect = np.stack([np.asarray(r[j]) for r in row_leaves], axis=oaxes[j])
        g = np.asarray(g)
        assert g.shape == expect.shape, f"vmap output {j}: shape {g.shape} vs loop {expect.shape}"
        assert g.dtype == expect.dtype, f"vmap output {j}: dtype {g.dtype} vs loop {expect.dtype}"
        if g.dtype.kind in "fc" or g.dtype == _dt.bfloat16:
            np.testing.assert_allclose(g.astype(np.complex128 if g.dtype.kind == "c" else np.float64),
                                       expect.astype(np.complex128 if g.dtype.kind == "c" else np.float64),
                                       atol=atol, rtol=rtol)
        else:
            np.testing.assert_array_equal(g, expect)
