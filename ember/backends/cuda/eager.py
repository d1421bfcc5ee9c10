"""The CUDA backend's eager table: primitive -> a function of device arrays.

Each rule is written against an array module `xp` (CuPy on the GPU, numpy in the
tests here), `rule(xp, *operands, **params)`, and reproduces the primitive's
reference impl (`fx/prims/*`): the same result dtype, half precision computed in
float32 and rounded once, numpy's integer division by zero, IEEE maximum/minimum
with -0 < +0, saturating float->int conversion.  Because the same code runs with
`xp=numpy`, `tests/backends/cuda/test_cuda_eager_table.py` checks every rule
against the reference impl on this machine, without a GPU.

A rule returns `NOT_COVERED` for operands it does not handle (complex dtypes for
most math, the bfloat16 conversions that need round-to-odd); those calls, and the
primitives without a rule, run as a cached one-op compiled program instead
(`backend.CudaBackend._one_op`).  Nothing here moves data to the host.

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.elementwise import add_p
    >>> run_rule(np, add_p, [np.float32(1), np.float32(2)], {}).item()
    3.0
"""
from __future__ import annotations

import contextlib

import numpy as np

from ... import dtypes as _dt

NOT_COVERED = object()   # a rule's answer for operands it leaves to the compiled path

EAGER: dict = {}         # Primitive -> rule(xp, *operands, **params)

LOWP = (_dt.float16, _dt.bfloat16)


def eager_rule(*prims):
    """Register `fn(xp, *operands, **params)` as the eager rule of `prims`.

    Example:
        >>> from ember.fx.prims.elementwise import add_p
        >>> add_p in EAGER
        True
    """
    def register(fn):
        for p in prims:
            EAGER[p] = fn
        return fn
    return register


def run_rule(xp, prim, operands, params):
    """The rule's result for `prim` on `operands` (arrays of `xp`), `NOT_COVERED`
    when it has no rule or declines these operands.

    Example:
        >>> import numpy as np
        >>> from ember.fx.prims.elementwise import neg_p
        >>> run_rule(np, neg_p, [np.arange(3, dtype=np.int8)], {}).tolist()
        [0, -1, -2]
    """
    _load_families()
    rule = EAGER.get(prim)
    if rule is None:
        return NOT_COVERED
    return rule(xp, *operands, **params)


_LOADED = False


def _load_families():
    # the families register themselves on import; imported once, at the first rule.
    # The device library's functions (sort, linalg, scans, fft, ...) have the rules'
    # signature and are rules too, except those it serves only for some equations.
    global _LOADED
    if not _LOADED:
        from . import (eager_elementwise, eager_indexing, eager_random, eager_reduce,  # noqa: F401
                       eager_structure)
        from .library import DEVICE_LIBRARY, DEVICE_WHEN
        for prim, fn in DEVICE_LIBRARY.items():
            if prim not in DEVICE_WHEN:
                EAGER.setdefault(prim, fn)
        _LOADED = True


def quiet(xp):
    """numpy's floating-point warnings off (CuPy never warns): the rules produce
    inf/NaN on purpose where the reference does."""
    if xp is np:
        return np.errstate(all="ignore")
    return contextlib.nullcontext()


def is_lowp(d) -> bool:
    """float16 or bfloat16 (computed in float32 and rounded back, as the reference does)."""
    return d.itemsize == 2 and d in LOWP


def is_float(d) -> bool:
    """A real floating dtype, half precision included (bfloat16 is kind 'V' in numpy)."""
    return d.kind == "f" or d == _dt.bfloat16


def special(xp):
    """The scipy.special of `xp`: scipy's for numpy, cupyx's for CuPy.

    Example:
        >>> float(special(np).erf(0.0))
        0.0
    """
    if xp is np:
        import scipy.special as sp
        return sp
    import cupyx.scipy.special as sp  # the GPU's own: imported only with CuPy
    return sp


# Importing the families here would be circular (they import this module); they
# load at the first `run_rule`, and `covered()` loads them for introspection.

def covered() -> frozenset:
    """The primitives that have an eager rule.

    Example:
        >>> from ember.fx.prims.shape import reshape_p
        >>> reshape_p in covered()
        True
    """
    _load_families()
    return frozenset(EAGER)
