"""Eager rule of `threefry2x32` over an array module `xp`: the reference impl's own
`threefry_rounds` (`fx/prims/random.py`: 20 rounds of wrapping uint32 adds,
rotations and xors) run with CuPy, so keys and
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

from ...fx.prims import random as RND
from .eager import eager_rule


@eager_rule(RND.threefry2x32_p)
def _threefry2x32(xp, k0, k1, x0, x1):
    return RND.threefry_rounds(xp, k0, k1, x0, x1)
