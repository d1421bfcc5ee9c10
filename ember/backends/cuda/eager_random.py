"""Eager rule of `threefry2x32` (`fx/prims/random.py`) over an array module `xp`:
the same 20 rounds of wrapping uint32 adds, rotations and xors, so keys and
random bits made on a GPU are bit for bit those of the CPU.  `sampler_math` (the
samplers' log/exp/erf step) has no rule on purpose: its one implementation is the
host's, which keeps samples identical on every path; it runs compiled.

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.random import threefry2x32_p
    >>> from .eager import run_rule
    >>> [hex(int(v)) for v in run_rule(np, threefry2x32_p, [np.uint32(0)] * 4, {})]
    ['0x6b200159', '0x99ba4efe']
"""
from __future__ import annotations

import numpy as np

from ...fx.prims import random as RND
from .eager import eager_rule


@eager_rule(RND.threefry2x32_p)
def _threefry2x32(xp, k0, k1, x0, x1):
    shape = np.broadcast_shapes(k0.shape, k1.shape, x0.shape, x1.shape)

    def flat(v):   # a fresh contiguous uint32 vector: the rounds update it in place
        return xp.ascontiguousarray(xp.broadcast_to(v.astype(np.uint32), shape)).reshape(-1).copy()

    k0, k1, x0, x1 = flat(k0), flat(k1), flat(x0), flat(x1)
    ks = (k0, k1, k0 ^ k1 ^ np.uint32(RND.KS_PARITY))
    tmp = xp.empty_like(x0)
    xp.add(x0, ks[0], out=x0)
    xp.add(x1, ks[1], out=x1)
    for group in range(5):
        for r in RND.ROTATIONS[group % 2]:
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
