"""The Threefry-2x32 (20 rounds) block cipher that `ember.random` hashes counters
with: `threefry2x32_composite`, written with `ember.lax` uint32 add/xor/shift/or
(what `ember.random` stages by default), and the `threefry2x32` primitive, the same
function as one equation whose reference implementation is numpy uint32
wrap-around arithmetic (bit-identical; `ember.random.set_threefry_impl("primitive")`
selects it for shorter graphs and faster eager draws).
`sampler_math` is the samplers' transcendental step (log, log1p, exp, erf,
erf_inv, tan), evaluated by the eager implementation on every path.

Example:
    >>> import numpy as np
    >>> y0, y1 = threefry2x32(np.uint32(0), np.uint32(0), np.uint32(0), np.uint32(0))
    >>> hex(int(y0)), hex(int(y1))
    ('0x6b200159', '0x99ba4efe')
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ..core import AbstractArray, Primitive, Zero, const_like, get_aval, shape_error, tangent_aval
from .rules import bdim_to_front
from ..spelling import user_str

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
KS_PARITY = 0x1BD11BDA

threefry2x32_p = Primitive("threefry2x32", multiple_results=True)
threefry2x32_p.kind = "library"


def _abstract(k0, k1, x0, x1):
    avals = (k0, k1, x0, x1)
    for a, what in zip(avals, ("k0", "k1", "x0", "x1")):
        if a.dtype != _dt.uint32:
            raise TypeError(f"threefry2x32: {what} must be uint32, got {user_str(a)}")
    shapes = {a.shape for a in avals if a.shape != ()}
    if len(shapes) > 1:
        raise shape_error("threefry2x32", f"operands must have equal shapes or be rank 0, got "
                                          f"{', '.join(user_str(a) for a in avals)}")
    shape = shapes.pop() if shapes else ()
    out = AbstractArray(shape, _dt.uint32)
    return [out, out]


def threefry_rounds(xp, k0, k1, x0, x1):
    """Threefry-2x32's 20 rounds over arrays of the module `xp` (numpy for the
    reference impl, CuPy for the GPU's eager op): the same bits on every device."""
    shape = np.broadcast_shapes(np.shape(k0), np.shape(k1), np.shape(x0), np.shape(x1))
    # Flat 1-d arrays: numpy wraps uint32 arithmetic on arrays silently (it warns on
    # scalar overflow), and in-place ufuncs keep them arrays.
    n = int(np.prod(shape, dtype=np.int64))

    def flat(v):
        return xp.ascontiguousarray(xp.broadcast_to(xp.asarray(v, np.uint32), shape)).reshape(n).copy()

    k0, k1, x0, x1 = flat(k0), flat(k1), flat(x0), flat(x1)
    ks = (k0, k1, k0 ^ k1 ^ np.uint32(KS_PARITY))
    tmp = xp.empty_like(x0)
    xp.add(x0, ks[0], out=x0)
    xp.add(x1, ks[1], out=x1)
    for group in range(5):
        for r in ROTATIONS[group % 2]:
            xp.add(x0, x1, out=x0)
            xp.left_shift(x1, np.uint32(r), out=tmp)
            xp.right_shift(x1, np.uint32(32 - r), out=x1)
            xp.bitwise_or(x1, tmp, out=x1)
            xp.bitwise_xor(x1, x0, out=x1)
        s = group + 1
        xp.add(x0, ks[s % 3], out=x0)
        xp.add(x1, ks[(s + 1) % 3], out=x1)
        xp.add(x1, np.uint32(s), out=x1)
    return [x0.reshape(shape), x1.reshape(shape)]


def _impl(k0, k1, x0, x1):
    return threefry_rounds(np, k0, k1, x0, x1)


def _batch(axis_size, args, dims):
    from .shape import broadcast_in_dim
    avals = [get_aval(a) for a in args]
    logical = max(((a.shape if d is None else a.shape[:d] + a.shape[d + 1:])
                   for a, d in zip(avals, dims)), key=len)
    full = (axis_size,) + tuple(logical)
    ops = []
    for a, d in zip(args, dims):
        m = bdim_to_front(a, d, axis_size)
        if get_aval(m).shape != full:  # a batched rank-0 operand: spread it over the counters
            m = broadcast_in_dim(m, full, (0,))
        ops.append(m)
    return threefry2x32_p.bind(*ops), [0, 0]


def _jvp(primals, tangents):
    outs = threefry2x32_p.bind(*primals)
    return outs, [Zero(tangent_aval(get_aval(o))) for o in outs]


threefry2x32_p.abstract_eval = _abstract
threefry2x32_p.impl = _impl
threefry2x32_p.batch = _batch
threefry2x32_p.jvp = _jvp
threefry2x32_p.not_applicable.add("transpose")


def threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32/20 of the counter words `(x0, x1)` under the key words `(k0, k1)`
    (uint32 arrays of one shape, or rank 0); returns the two output word arrays.

    Example:
        >>> import numpy as np
        >>> [hex(int(v)) for v in threefry2x32(*(np.uint32(0xFFFFFFFF),) * 4)]
        ['0x1cb996fc', '0xbb002be7']
    """
    return threefry2x32_p.bind(k0, k1, x0, x1)


def threefry2x32_composite(k0, k1, x0, x1):
    """The same function as `threefry2x32`, written with `ember.lax` uint32 add, xor,
    shifts and or (wrap-around arithmetic), for backends that inline it.

    Example:
        >>> import numpy as np
        >>> [hex(int(v)) for v in threefry2x32_composite(*(np.uint32(0),) * 4)]
        ['0x6b200159', '0x99ba4efe']
    """
    from .elementwise import add, bitwise_or, bitwise_xor, shift_left, shift_right_logical
    from .shape import broadcast_in_dim
    avals = _abstract(*(get_aval(v) for v in (k0, k1, x0, x1)))
    shape = avals[0].shape

    def full(v):
        return v if get_aval(v).shape == shape else broadcast_in_dim(v, shape, ())

    k0, k1, x0, x1 = (full(v) for v in (k0, k1, x0, x1))
    ks = (k0, k1, bitwise_xor(bitwise_xor(k0, k1), np.uint32(KS_PARITY)))
    x0 = add(x0, ks[0])
    x1 = add(x1, ks[1])
    for group in range(5):
        for r in ROTATIONS[group % 2]:
            x0 = add(x0, x1)
            rot = bitwise_or(shift_left(x1, np.uint32(r)), shift_right_logical(x1, np.uint32(32 - r)))
            x1 = bitwise_xor(rot, x0)
        s = group + 1
        x0 = add(x0, ks[s % 3])
        x1 = add(add(x1, ks[(s + 1) % 3]), np.uint32(s))
    return [x0, x1]


# --- the transcendental step of the samplers -----------------------------------------
#
# A sampler turns uniform bits into, e.g., -log1p(-u).  Compiled kernels evaluate
# `log1p` with their own vectorised approximations, which can differ from the eager
# (numpy) result by an ulp -- and the same key must give the same numbers eagerly and
# under jit.  `sampler_math` is that step as one primitive whose only implementation
# is the eager one (the elementwise primitive's numpy impl, half precision included):
# no backend has a native rule for it, so compiled programs run it as a library step
# on whole buffers and every path computes the same function on the same values.
# Everything else in a sampler is integer arithmetic, + - * / and sqrt, which are
# exact (correctly rounded) everywhere.

sampler_math_p = Primitive("sampler_math")
sampler_math_p.kind = "library"


def _elementwise(fn):
    from . import elementwise as ew
    return {"log": ew.log_p, "log1p": ew.log1p_p, "exp": ew.exp_p, "erf": ew.erf_p,
            "erf_inv": ew.erf_inv_p, "tan": ew.tan_p}[fn]


def _sm_abstract(x, *, fn):
    return _elementwise(fn).abstract_eval(x)


def _sm_impl(x, *, fn):
    return _elementwise(fn).impl(x)


def _sm_batch(axis_size, args, dims, *, fn):
    return sampler_math_p.bind(args[0], fn=fn), dims[0]


def _sm_jvp(primals, tangents, *, fn):
    from . import elementwise as ew
    (x,), (g,) = primals, tangents
    ans = sampler_math_p.bind(x, fn=fn)
    if type(g) is Zero:
        return ans, g

    def c(v):
        return const_like(ans, v)

    if fn == "log":
        t = ew.div(g, x)
    elif fn == "log1p":
        t = ew.div(g, ew.add(x, c(1.0)))
    elif fn == "exp":
        t = ew.mul(g, ans)
    elif fn == "erf":
        t = ew.mul(g, ew.mul(c(2.0 / np.sqrt(np.pi)), ew.exp(ew.neg(ew.mul(x, x)))))
    elif fn == "tan":
        t = ew.mul(g, ew.add(c(1.0), ew.mul(ans, ans)))
    else:  # erf_inv
        t = ew.mul(g, ew.mul(c(np.sqrt(np.pi) / 2.0), ew.exp(ew.mul(ans, ans))))
    return ans, t


sampler_math_p.abstract_eval = _sm_abstract
sampler_math_p.impl = _sm_impl
sampler_math_p.batch = _sm_batch
sampler_math_p.jvp = _sm_jvp
sampler_math_p.not_applicable.add("transpose")

SAMPLER_MATH = ("log", "log1p", "exp", "erf", "erf_inv", "tan")


def sampler_math(fn, x):
    """`fn(x)` for fn in "log", "log1p", "exp", "erf", "erf_inv", "tan", computed by the
    eager (numpy) implementation on every path, so samplers built on it give
    bit-identical numbers eagerly, under jit and under vmap.

    Example:
        >>> import numpy as np
        >>> float(sampler_math("log1p", np.float32(0.5))) == float(np.log1p(np.float32(0.5)))
        True
    """
    if fn not in SAMPLER_MATH:
        raise ValueError(f"sampler_math: fn must be one of {', '.join(SAMPLER_MATH)}, got {fn!r}")
    return sampler_math_p.bind(x, fn=fn)
