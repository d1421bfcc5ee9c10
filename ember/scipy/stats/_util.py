"""Argument handling shared by the distribution modules: promotion as jax.scipy.stats
(integers to the default float, halves computed in float32 and rounded once),
broadcasting, and scipy's NaN for an invalid parameter."""
from __future__ import annotations

import numpy as np

from ..special import _in_float32, _real_args


def promote(name, *args):
    """The operands as one real floating dtype, broadcast together."""
    from ... import numpy as enp
    out = _real_args(name, *args)
    return enp.broadcast_arrays(*out) if len(out) > 1 else list(out)


def promote_shapes_apart(name, *args):
    """The operands as one real floating dtype, each keeping its own shape (for the
    multivariate families, whose operands do not broadcast against each other)."""
    import numpy as _np
    xs = [_real_args(name, a)[0] for a in args]
    dt = _np.result_type(*[x.dtype for x in xs])
    return [x if x.dtype == dt else x.astype(dt) for x in xs]


def run(fn, *xs):
    """fn over the promoted operands (half types in float32), NaN wherever any operand is
    NaN, as scipy: the support tests (x >= loc, ...) are False for NaN and would
    otherwise answer it with a boundary value."""
    from ... import numpy as enp

    def g(*xs):
        out = fn(*xs)
        isnan = enp.isnan(xs[0])
        for x in xs[1:]:
            isnan = isnan | enp.isnan(x)
        return enp.where(isnan, enp.full_like(out, np.nan), out)
    return _in_float32(g, *xs)


def nan_unless(ok, v):
    """v where the parameters are valid (scipy's `argcheck`), NaN elsewhere."""
    from ... import numpy as enp
    return enp.where(ok, v, enp.full_like(v, np.nan))


def safe(ok, v, fill=1.0):
    """v where ok, `fill` elsewhere: keeps a branch that a where discards away from the
    log / division that would put a NaN into its derivative."""
    from ... import numpy as enp
    return enp.where(ok, v, enp.full_like(v, fill))
