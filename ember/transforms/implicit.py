"""Implicit differentiation: `custom_linear_solve` and `custom_root` (JAX's semantics).

`custom_linear_solve` is a primitive over (the values matvec, solve and transpose_solve
close over, b) with three sub-graphs: the solve (run forward), the matvec (used by the
JVP: d x = solve(db - dA x)) and the transposed solve (used by the transpose: the
cotangent of b is transpose_solve(A^T, ct)).  Its JVP and transpose bind the primitive
again, so derivatives of any order are implicit solves too; its batch rule vmaps the three
functions and binds a new one.  `custom_root` is a `custom_jvp` over the closure-converted
function whose JVP is the implicit function theorem, solved by the user's
`tangent_solve`.
"""
from __future__ import annotations

from .. import dtypes as _dt
from ..fx.core import Primitive, Zero, get_aval, tangent_aval
from ..fx.drivers import call_driver, register_driver
from ..fx.ir import eval_graph
from ..fx.prims.rules import bdim_to_front, instantiate
from ..fx.staging import consts_to_inputs, trace_flat
from ..tree import tree_flatten, tree_unflatten
from .closure import closure_convert
from .util import as_ember, at_user, fun_location

__all__ = ["custom_linear_solve", "custom_root"]

linear_solve_p = Primitive("custom_linear_solve", multiple_results=True)
linear_solve_p.kind = "control"


def _structure_error(api, what, fun, got_tree, got_avals, want_tree, want_avals):
    return TypeError(
        f"{api}: {what} ({fun_location(fun)}) must return the structure, shapes and dtypes "
        f"of b: expected {want_tree} of ({', '.join(a.str_user() for a in want_avals)}), "
        f"got {got_tree} of ({', '.join(a.str_user() for a in got_avals)}){at_user()}")


def _trace(fun, api, what, b_tree, b_avals, check_prefix, extra_out_ok):
    """Trace fun over b-shaped leaves; returns (const-free graph, consts, out_tree).  The
    first output leaves must match b's (the whole output when `extra_out_ok` is False)."""
    box = []

    def flat(*xs):
        out = fun(tree_unflatten(b_tree, list(xs)))
        if extra_out_ok:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError(f"{api}: with has_aux=True, {what} ({fun_location(fun)}) must "
                                f"return a pair (solution, aux){at_user()}")
            x, aux = out
        else:
            x, aux = out, None
        xl, xt = tree_flatten(x)
        al, at = tree_flatten(aux)
        xl = [as_ember(v) for v in xl]
        xa = [get_aval(v) for v in xl]
        if check_prefix and (xt != b_tree or [(a.shape, a.dtype) for a in xa]
                             != [(a.shape, a.dtype) for a in b_avals]):
            raise _structure_error(api, what, fun, xt, xa, b_tree, b_avals)
        box.append(at)
        return xl + [as_ember(v) for v in al]

    closed = trace_flat(flat, list(b_avals), fun_desc=fun_location(fun))
    g, consts = consts_to_inputs(closed)
    return g, consts, box[0]


def _bind(matvec, b, solve, transpose_solve, symmetric, has_aux, api="custom_linear_solve"):
    b_leaves, b_tree = tree_flatten(b)
    b_leaves = [as_ember(x) for x in b_leaves]
    b_avals = [get_aval(x) for x in b_leaves]
    for a in b_avals:
        if not _dt.is_inexact(a.dtype):
            raise TypeError(f"{api}: b must hold floating-point arrays, got {a.str_user()}"
                            f"{at_user()}")
    mv, mv_c, _ = _trace(matvec, api, "matvec", b_tree, b_avals, True, False)
    sv, sv_c, aux_tree = _trace(lambda r: solve(matvec, r), api, "solve", b_tree, b_avals,
                                True, has_aux)
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    tv, tv_c = None, []
    if transpose_solve is not None:
        vecmat = matvec if symmetric else _vecmat(matvec, b_tree, b_avals)
        tv, tv_c, _ = _trace(lambda r: transpose_solve(vecmat, r), api, "transpose_solve",
                             b_tree, b_avals, True, has_aux)
    consts = list(mv_c) + list(sv_c) + list(tv_c)
    outs = linear_solve_p.bind(
        *consts, *b_leaves, **_params(mv, sv, tv, len(mv_c), len(sv_c), len(tv_c),
                                      consts, b_avals, symmetric, has_aux))
    n = len(b_leaves)
    x = tree_unflatten(b_tree, outs[:n])
    if has_aux:
        return x, tree_unflatten(aux_tree, outs[n:])
    return x


def _params(mv, sv, tv, n_mv, n_sv, n_tv, consts, b_avals, symmetric, has_aux):
    avals = [get_aval(c) for c in consts] + list(b_avals)
    nb = len(b_avals)
    call = _over_all(sv, n_mv, n_sv, avals, nb)
    tcall = None if tv is None else _over_all(tv, n_mv + n_sv, n_tv, avals, nb)
    return dict(call=call, tcall=tcall, matvec=mv, counts=(n_mv, n_sv, n_tv),
                symmetric=bool(symmetric), has_aux=bool(has_aux))


def _over_all(g, start, count, avals, nb):
    """`g` (inputs: `count` consts then b) as a graph over every operand of the primitive:
    consts of the other functions are ignored.  This is what the compiled backends run."""
    def fun(*args):
        return eval_graph(g.graph, [], *args[start:start + count], *args[len(args) - nb:])
    return trace_flat(fun, avals)


def _vecmat(matvec, b_tree, b_avals):
    """The transpose of the linear map `matvec`, as a function of a b-shaped cotangent."""
    from .transpose import linear_transpose
    from ..numpy._creation import zeros

    def vecmat(y):
        examples = tree_unflatten(b_tree, [zeros(a.shape, a.dtype) for a in b_avals])
        return linear_transpose(matvec, examples)(y)[0]
    return vecmat


def _abstract(*avals, call, **_):
    return list(call.out_avals)


def _fns(consts, call, tcall, matvec, counts):
    """Python functions (for `_bind`) evaluating the primitive's graphs on its consts."""
    mv_c = list(consts[:counts[0]])

    def mv(x):
        xl, _ = tree_flatten(x)
        return eval_graph(matvec.graph, [], *mv_c, *xl)

    def solve_with(graph):
        def s(_matvec, r):
            rl, _ = tree_flatten(r)
            return eval_graph(graph.graph, [], *consts, *rl)
        return s

    return mv, solve_with(call), (None if tcall is None else solve_with(tcall))


def _rebind(mv, b_leaves, solve, tsolve, symmetric, has_aux):
    """Bind a new solve over flat leaves from flat functions: returns flat outputs."""
    nb = len(b_leaves)

    def lift(s):
        if s is None:
            return None

        def f(_m, r):
            outs = s(_m, r)
            return (list(outs[:nb]), list(outs[nb:])) if has_aux else list(outs[:nb])
        return f

    out = _bind(mv, list(b_leaves), lift(solve), lift(tsolve), symmetric, has_aux)
    if has_aux:
        x, aux = out
        return list(x) + list(aux)
    return list(out)


def _jvp(primals, tangents, *, call, tcall, matvec, counts, symmetric, has_aux):
    from .jvp import jvp_flat
    n_mv = counts[0]
    nb = len(matvec.in_avals) - n_mv
    outs = linear_solve_p.bind(*primals, call=call, tcall=tcall, matvec=matvec, counts=counts,
                               symmetric=symmetric, has_aux=has_aux)
    x = outs[:nb]
    mv_c = list(primals[:n_mv])
    t_mv = list(tangents[:n_mv])
    t_b = list(tangents[len(primals) - nb:])
    rhs = [None if type(t) is Zero else t for t in t_b]
    if any(type(t) is not Zero for t in t_mv):
        # d(A x) with x held: the product rule's other half, moved to the right-hand side
        _, dax = jvp_flat(lambda *c: eval_graph(matvec.graph, [], *c, *x), mv_c, t_mv)
        rhs = [(None if type(d) is Zero else -d) if r is None else
               (r if type(d) is Zero else r - d) for r, d in zip(rhs, dax)]
    aux_t = [Zero(tangent_aval(get_aval(a))) for a in outs[nb:]]
    if all(r is None for r in rhs):
        return outs, [Zero(tangent_aval(get_aval(v))) for v in x] + aux_t
    rhs = [instantiate(Zero(tangent_aval(get_aval(v)))) if r is None else r
           for r, v in zip(rhs, x)]
    dx = linear_solve_p.bind(*primals[:len(primals) - nb], *rhs, call=call, tcall=tcall,
                             matvec=matvec, counts=counts, symmetric=symmetric, has_aux=has_aux)
    return outs, list(dx[:nb]) + aux_t


def _transpose(cts, *args, call, tcall, matvec, counts, symmetric, has_aux):
    from ..fx.core import UndefinedPrimal
    n_mv, n_sv, n_tv = counts
    k = n_mv + n_sv + n_tv
    if any(isinstance(a, UndefinedPrimal) for a in args[:k]):
        raise TypeError("custom_linear_solve is linear only in b: the values matvec and solve "
                        "close over cannot be transposed" + at_user())
    if tcall is None:
        raise TypeError("custom_linear_solve: reverse-mode differentiation (grad, vjp) needs "
                        "transpose_solve, or symmetric=True when matvec is symmetric"
                        + at_user())
    nb = len(args) - k
    b_avals = [a.aval if isinstance(a, UndefinedPrimal) else get_aval(a) for a in args[k:]]
    ct_x = [instantiate(c) for c in cts[:nb]]
    mv, solve, tsolve = _fns(list(args[:k]), call, tcall, matvec, counts)
    vecmat = mv if symmetric else _vecmat(mv, tree_flatten([0] * nb)[1], b_avals)
    # the transposed system: A^T's solve is transpose_solve and vice versa
    out = _rebind(lambda y: list(vecmat(list(y))), ct_x, tsolve, solve, symmetric, has_aux)
    return [None] * k + list(out[:nb])


def _batch(axis_size, args, dims, *, call, tcall, matvec, counts, symmetric, has_aux):
    from .batching import vmap
    n_mv, n_sv, n_tv = counts
    k = n_mv + n_sv + n_tv
    consts = list(args[:k])
    cdims = list(dims[:k])
    # the solution is batched whenever anything is: an unbatched b is broadcast
    bs = [bdim_to_front(x, d, axis_size) for x, d in zip(args[k:], dims[k:])]
    mv_c, mv_d = consts[:n_mv], cdims[:n_mv]

    def mv(xb):
        return vmap(lambda c, x: eval_graph(matvec.graph, [], *c, *x), in_axes=(mv_d, 0),
                    axis_size=axis_size)(mv_c, list(xb))

    def solve_with(graph):
        if graph is None:
            return None

        def s(_m, rb):
            return vmap(lambda c, r: eval_graph(graph.graph, [], *c, *r), in_axes=(cdims, 0),
                        axis_size=axis_size)(consts, list(rb))
        return s

    out = _rebind(mv, bs, solve_with(call), solve_with(tcall), symmetric, has_aux)
    return out, [0] * len(out)


linear_solve_p.abstract_eval = _abstract
# the solve's graph runs through the shared driver: interpreted by the reference,
# compiled by a native backend
register_driver(linear_solve_p, call_driver("call"))
linear_solve_p.jvp = _jvp
linear_solve_p.transpose = _transpose
linear_solve_p.batch = _batch


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False, has_aux=False):
    """Solve `matvec(x) = b` with `solve(matvec, b)`, differentiated implicitly (JAX's
    `lax.custom_linear_solve`): the solve itself is never differentiated (it may use
    `while_loop`); `jvp` solves again for `db - dA x`, and `grad` solves the transposed
    system with `transpose_solve(vecmat, ct)` (`vecmat`, the transpose of `matvec`, comes
    from autodiff; with `symmetric=True`, `solve` serves for both).  `b` may be a pytree;
    `matvec` must be linear in `x` and may close over arrays being differentiated.  With
    `has_aux`, `solve` and `transpose_solve` return `(x, aux)` and so does this.

    Example:
        >>> import ember, ember.numpy as enp
        >>> a = enp.asarray([[4.0, 1.0], [1.0, 3.0]])
        >>> def solve(matvec, b):
        ...     return enp.linalg.solve(a, b)
        >>> def f(b):
        ...     return enp.sum(ember.lax.custom_linear_solve(lambda x: a @ x, b, solve,
        ...                                                  symmetric=True))
        >>> [round(v, 4) for v in ember.grad(f)(enp.ones(2)).tolist()]
        [0.1818, 0.2727]
    """
    return _bind(matvec, b, solve, transpose_solve, symmetric, has_aux)


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """Find a root of `f` with `solve(f, initial_guess)`, differentiated implicitly (JAX's
    `lax.custom_root`): by the implicit function theorem, the derivative of the solution
    x*(theta) with respect to the arrays `f` closes over is
    `-tangent_solve(g, d_theta f(x*))` where `g` is the linearisation of `f` in x at x*
    (`tangent_solve(g, y)` solves `g(x) = y`; for scalars `lambda g, y: y / g(1.0)`).
    `solve` is never differentiated; no derivative flows to `initial_guess`.  With
    `has_aux`, `solve` returns `(solution, aux)` and so does this.

    Example:
        >>> import ember, ember.numpy as enp
        >>> def newton_sqrt(a):
        ...     f = lambda x: x ** 2 - a
        ...     def solve(f, x0):
        ...         step = lambda _, x: x - f(x) / ember.grad(f)(x)
        ...         return ember.fori_loop(0, 20, step, x0)
        ...     return ember.lax.custom_root(f, 1.0, solve, lambda g, y: y / g(1.0))
        >>> round(float(newton_sqrt(2.0)), 6), round(float(ember.grad(newton_sqrt)(2.0)), 6)
        (1.414214, 0.353553)
    """
    from .custom_derivatives import custom_jvp
    from .jvp import jvp
    from .misc import stop_gradient
    guess_leaves, guess_tree = tree_flatten(initial_guess)
    guess = tree_unflatten(guess_tree, [as_ember(g) for g in guess_leaves])
    f_conv, consts = closure_convert(f, guess)
    n = len(consts)

    def run(guess, *cs):
        return solve(lambda x: f_conv(x, *cs), stop_gradient(guess))

    root = custom_jvp(run)

    @root.defjvp
    def _root_jvp(primals, tangents):
        guess, cs = primals[0], primals[1:]
        tcs = tangents[1:]
        out = root(guess, *cs)
        sol = out[0] if has_aux else out
        if n == 0:
            t = tree_unflatten(*_zeros_like_tree(sol))
        else:
            _, rhs = jvp(lambda *c: f_conv(sol, *c), tuple(cs), tuple(tcs))

            def lin(v):
                return jvp(lambda x: f_conv(x, *cs), (sol,), (v,))[1]
            t = _tree_neg(tangent_solve(lin, rhs))
        if has_aux:
            aux_l, aux_t = tree_flatten(out[1])
            return out, (t, tree_unflatten(aux_t, [_zeros_of(a) for a in aux_l]))
        return out, t

    out = root(guess, *consts)
    return out


def _zeros_of(x):
    from ..numpy._creation import zeros
    a = get_aval(x)
    return zeros(a.shape, a.dtype)


def _zeros_like_tree(t):
    leaves, tree = tree_flatten(t)
    return tree, [_zeros_of(v) for v in leaves]


def _tree_neg(t):
    leaves, tree = tree_flatten(t)
    return tree_unflatten(tree, [-as_ember(v) for v in leaves])

