"""What is built on Taylor mode: directional `derivatives`, the forward `laplacian`,
and `hvp` (forward over reverse).

`laplacian` is the *forward Laplacian*: one forward pass carrying, through every
primitive, the value, its Jacobian with respect to x (n columns) and its
Laplacian (one array).  Each primitive's step reuses its Taylor rule at order 2:
vmapped over the Jacobian's columns with a zero second-order input it gives the
quadratic part sum_i f''[J_i, J_i] / 2; at order 1 on the incoming Laplacian
it gives the linear part f' L.  Linear primitives thus cost one application to
the Laplacian, where trace(hessian) pays n.

Example:
    >>> import ember, ember.numpy as enp
    >>> lap = ember.laplacian(lambda x: enp.sum(x ** 3))
    >>> lap(enp.array([1.0, 2.0])).item()   # 6 * (1 + 2)
    18.0
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..fx.core import Trace, Tracer, check_foreign, current_trace, get_aval, new_trace, set_current_trace
from ..tree import tree_flatten, tree_unflatten
from .jet import _at, jet, late_rule
from .util import PrimalTracer, as_ember_args


def derivatives(f, x, v, order: int):
    """[f(x), D f(x)[v], D^2 f(x)[v, v], ..., D^order f(x)[v, ..., v]]: the directional
    derivatives of `f` at `x` along `v`, by one `jet` of the line x + t v.

    Example:
        >>> import ember, ember.numpy as enp
        >>> [round(float(d), 6) + 0.0 for d in derivatives(enp.cos, 0.0, 1.0, 4)]
        [1.0, 0.0, -1.0, 0.0, 1.0]
    """
    order = int(order)
    if order < 0:
        raise ValueError(f"derivatives: order must be >= 0, got {order}{_at()}")
    from ..numpy import asarray
    x = asarray(x)
    v = asarray(v, dtype=x.dtype) if _dt.is_inexact(x.dtype) else asarray(v)
    if v.shape != x.shape:
        raise TypeError(f"derivatives: the direction v has shape {get_aval(v).str_user()} but x is "
                        f"{get_aval(x).str_user()}: v must have x's shape{_at()}")
    if order == 0:
        return [f(x)]
    # concrete zeros (even under jit) stay symbolic in the jet: the line has one term
    z = np.zeros(get_aval(v).shape, get_aval(v).dtype)
    y, ys = jet(f, (x,), ([v] + [z] * (order - 1),))
    return [y] + list(ys)


def hvp(f, x, v):
    """The Hessian-vector product H(x) v of a scalar function, forward over reverse
    (jvp of grad): one gradient's cost, no Hessian.

    Example:
        >>> import ember.numpy as enp
        >>> hvp(lambda x: enp.sum(x ** 3), enp.array([1.0, 2.0]), enp.array([1.0, 0.0])).tolist()
        [6.0, 0.0]
    """
    from .jvp import jvp
    from .vjp import grad
    return jvp(grad(f), (x,), (v,))[1]


# --- the forward Laplacian trace -------------------------------------------------------

class LaplacianTracer(PrimalTracer):
    """A value with its Jacobian `jac` (leading axis: the n input directions) and
    Laplacian `lap` (None where zero).

    Example:
        >>> seen = []
        >>> _ = laplacian(lambda x: seen.append(type(x).__name__) or x)(np.ones(2))
        >>> seen
        ['LaplacianTracer']
    """
    __slots__ = ("primal", "jac", "lap")

    def __init__(self, trace, primal, jac, lap):
        self._trace = trace
        self.primal = primal
        self.jac = jac
        self.lap = lap

    def inner_values(self):
        return tuple(t for t in (self.primal, self.jac, self.lap) if t is not None)


class LaplacianTrace(Trace):
    """Propagates (value, Jacobian, Laplacian) through each primitive's Taylor rule.

    Example:
        >>> from ember.fx.core import eval_trace
        >>> LaplacianTrace(eval_trace()).describe()
        'laplacian'
    """

    def lift(self, x, prim=None):
        if isinstance(x, LaplacianTracer) and x._trace is self:
            return x.primal, x.jac, x.lap
        if isinstance(x, Tracer):
            check_foreign(self, x, prim)
        return x, None, None

    def describe(self):
        return "laplacian"

    def process_primitive(self, prim, args, params):
        lifted = [self.lift(x, prim) for x in args]
        if all(j is None and l is None for _, j, l in lifted):
            with set_current_trace(self.parent):
                return prim.bind(*[p for p, _, _ in lifted], **params)
        if prim.taylor is None and late_rule(prim) is None:
            raise TypeError(f"ember.laplacian: the primitive '{prim.name}' has no Taylor rule{_at()}")
        primals = [p for p, _, _ in lifted]
        multi = prim.multiple_results
        with set_current_trace(self.parent):
            fast = self._elementwise(prim, primals, lifted, params)
            if fast is not None:
                return self.wrap(*fast)
            ans, jacs, quad = self._quadratic(prim, primals, lifted, params)
            lin = None
            if any(l is not None for _, _, l in lifted):
                ans, lin = prim.taylor(primals, [[l] for _, _, l in lifted], **params)
                lin = [s[0] for s in lin] if multi else [lin[0]]
            outs = ans if multi else [ans]
            res = []
            for i, o in enumerate(outs):
                lap = _add(lin[i] if lin is not None else None, quad[i])
                res.append(self.wrap(o, jacs[i], lap))
        return res if multi else res[0]

    def _elementwise(self, prim, primals, lifted, params):
        """(output, Jacobian, Laplacian) of a real elementwise primitive that is
        nonlinear in its one operand with a Jacobian, from one order-2 Taylor rule:
        with the first-order input 1 it gives y1 = f'(x) and y2 = f''(x) / 2, so
        J_out = f' J, L_out = f' L + f'' sum_i J_i^2 (the forward Laplacian's
        rule for activations).  Per element of the n columns that is one product
        and one square, where the rule vmapped over the columns repeats its
        recurrence n times.  None where this does not apply (the general path)."""
        idx = [i for i, (_, j, l) in enumerate(lifted) if j is not None or l is not None]
        if prim.kind != "elementwise" or prim.multiple_results or len(idx) != 1 or prim.taylor is None:
            return None
        (i,) = idx
        x, jac, lap = lifted[i]
        xa, out = get_aval(x), prim.abstract_eval(*[get_aval(p) for p in primals], **params)
        out = out[0] if isinstance(out, (tuple, list)) else out
        if (jac is None or not _dt.is_float(xa.dtype) or out.dtype != xa.dtype
                or tuple(out.shape) != tuple(xa.shape)):
            return None
        from ..fx.prims.elementwise import mul
        from ..fx.prims.reduce import reduce_sum
        from ..fx.prims.shape import broadcast_in_dim
        from ..numpy import ones
        series = [[None, None] for _ in primals]
        series[i] = [ones(xa.shape, xa.dtype), None]
        ans, (d1, d2) = prim.taylor(primals, series, **params)
        if d1 is None or d2 is None:
            return None   # linear in x (or constant): the general path applies it to J as it is
        ja = get_aval(jac)
        jac_out = mul(broadcast_in_dim(d1, ja.shape, tuple(range(1, ja.ndim))), jac)
        two = np.array(2, out.dtype)[()]
        lap_out = mul(mul(d2, two), reduce_sum(mul(jac, jac), (0,)))
        if lap is not None:
            lap_out = _add(mul(d1, lap), lap_out)
        return ans, jac_out, lap_out

    def _quadratic(self, prim, primals, lifted, params):
        """(outputs, their Jacobians, sum_i 2 * y2 along each Jacobian column)."""
        multi = prim.multiple_results
        idx = [i for i, (_, j, _) in enumerate(lifted) if j is not None]
        if not idx:
            ans = prim.bind(*primals, **params)
            n = len(ans) if multi else 1
            return ans, [None] * n, [None] * n
        from .batching import vmap

        def column(*cols):
            series = [[None, None] for _ in primals]
            for i, c in zip(idx, cols):
                series[i] = [c, None]
            _, s = prim.taylor(primals, series, **params)
            s = s if multi else [s]
            return [t[0] for t in s], [t[1] for t in s]

        j1, j2 = vmap(column)(*[lifted[i][1] for i in idx])
        ans = prim.bind(*primals, **params)
        from ..fx.prims.elementwise import mul
        from ..fx.prims.reduce import reduce_sum
        quad = [None if t is None else mul(reduce_sum(t, (0,)), np.array(2, get_aval(t).dtype)[()])
                for t in j2]
        return ans, list(j1), quad

    def wrap(self, primal, jac, lap):
        if jac is None and lap is None or not _dt.is_inexact(get_aval(primal).dtype):
            return primal
        return LaplacianTracer(self, primal, jac, lap)


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    from ..fx.prims.elementwise import add
    return add(a, b)


def _zeros_like(o):
    from ..numpy import zeros as _z
    a = get_aval(o)
    return _z(a.shape, a.dtype)


def laplacian(f, argnums: int = 0):
    """The function x -> sum_i d^2 f / dx_i^2 (the Laplacian of each output element,
    over every element of the argument `argnums`), by the forward Laplacian: one
    forward pass carrying value, gradient and Laplacian (not trace(hessian)).
    Compose with `vmap` for a batch of points and `jit` to compile.

    Example:
        >>> import ember, ember.numpy as enp
        >>> u = lambda x: enp.sin(x[0]) * enp.exp(x[1])      # Laplacian: 0
        >>> abs(ember.laplacian(u)(enp.array([0.3, 0.2]))) < 1e-6
        Array(True, dtype=bool)
    """
    if not isinstance(argnums, int):
        raise TypeError(f"laplacian: argnums must be one int (the argument to differentiate), got "
                        f"{argnums!r}{_at()}")

    def lap_fun(*args):
        if not -len(args) <= argnums < len(args):
            raise TypeError(f"laplacian: argnums={argnums} but the function got {len(args)} "
                            f"argument(s){_at()}")
        leaves, tree = tree_flatten(tuple(args))
        args = list(tree_unflatten(tree, as_ember_args("laplacian", f, leaves, tree)))
        x = args[argnums]
        a = get_aval(x)
        if not _dt.is_inexact(a.dtype):
            raise TypeError(f"laplacian: the argument {argnums} is {a.str_user()}; the Laplacian "
                            f"needs a float argument (convert it, e.g. x.astype('float32')){_at()}")
        n = a.size
        from ..numpy import eye, reshape
        jac0 = reshape(eye(n, dtype=a.dtype), (n,) + a.shape)
        trace = LaplacianTrace(current_trace())
        with new_trace(trace):
            args[argnums] = LaplacianTracer(trace, x, jac0, None)
            out = f(*args)
            outs, otree = tree_flatten(out)
            laps = []
            for o in outs:
                if isinstance(o, LaplacianTracer) and o._trace is trace:
                    laps.append(o.lap if o.lap is not None else _zeros_like(o))
                else:
                    if isinstance(o, Tracer):
                        check_foreign(trace, o)
                    laps.append(_zeros_like(o))
        return tree_unflatten(otree, laps)

    lap_fun.__name__ = f"laplacian({getattr(f, '__name__', 'f')})"
    lap_fun.__doc__ = f"The Laplacian of {getattr(f, '__name__', 'f')} (ember.laplacian)."
    return lap_fun
