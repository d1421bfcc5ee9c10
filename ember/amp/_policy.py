"""Mixed-precision policies in the spirit of DeepMind's jmp: which dtype
parameters are stored in, computed in, and returned in.

Example:
    >>> import ember.numpy as enp
    >>> p = Policy(compute_dtype="bfloat16")
    >>> str(p.cast_to_compute({"w": enp.ones(2)})["w"].dtype)
    'bfloat16'
    >>> get_policy("params=float32,compute=float16,output=float32").compute_dtype
    dtype('float16')
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import dtypes as _dt
from ._autocast import autocast

_ALIASES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64",
            "half": "float16", "full": "float32", "single": "float32", "double": "float64"}


def _dtype(d):
    return _dt.canonicalize(_ALIASES.get(d, d) if isinstance(d, str) else d)


@dataclass(frozen=True)
class Policy:
    """param_dtype: how parameters are stored (the float32 master weights);
    compute_dtype: what matmuls, convolutions and attention run in (other ops
    follow `autocast`'s lists); output_dtype: what the model/loss returns.

    Example:
        >>> Policy(compute_dtype="bf16").compute_dtype
        dtype(bfloat16)
    """
    param_dtype: np.dtype = field(default=np.dtype(np.float32))
    compute_dtype: np.dtype = field(default=np.dtype(np.float32))
    output_dtype: np.dtype = field(default=np.dtype(np.float32))

    def __post_init__(self):
        for name in ("param_dtype", "compute_dtype", "output_dtype"):
            d = _dtype(getattr(self, name))
            if not _dt.is_float(d):
                raise TypeError(f"Policy({name}={d}): a policy's dtypes are floating dtypes")
            object.__setattr__(self, name, d)

    def _cast(self, tree, to):
        from .. import tree as _tree
        from ..fx.core import get_aval
        from ..fx.prims.convert import convert_element_type

        def one(x):
            try:
                a = get_aval(x)
            except TypeError:
                return x
            return convert_element_type(x, to) if _dt.is_float(a.dtype) and a.dtype != to else x
        return _tree.map(one, tree)

    def cast_to_param(self, tree):
        """Floating leaves of `tree` cast to param_dtype (integers untouched)."""
        return self._cast(tree, self.param_dtype)

    def cast_to_compute(self, tree):
        """Floating leaves of `tree` cast to compute_dtype."""
        return self._cast(tree, self.compute_dtype)

    def cast_to_output(self, tree):
        """Floating leaves of `tree` cast to output_dtype."""
        return self._cast(tree, self.output_dtype)

    def autocast(self):
        """The autocast context of this policy (a no-op for a float32/float64 compute dtype)."""
        low = self.compute_dtype in (np.dtype(_dt.float16), np.dtype(_dt.bfloat16))
        return autocast(dtype=self.compute_dtype if low else "bfloat16", enabled=low)

    def with_output_dtype(self, dtype) -> "Policy":
        """The same policy returning `dtype`."""
        return Policy(self.param_dtype, self.compute_dtype, dtype)


def get_policy(spec: str) -> Policy:
    """A policy from jmp's string form: "params=float32,compute=bfloat16,output=float32"
    (short names p/c/o and f32/bf16/f16 accepted; a single dtype sets all three).

    Example:
        >>> get_policy("c=bf16").compute_dtype
        dtype(bfloat16)
    """
    spec = spec.strip()
    if "=" not in spec:
        d = _dtype(spec)
        return Policy(d, d, d)
    names = {"params": "param_dtype", "p": "param_dtype", "param": "param_dtype",
             "compute": "compute_dtype", "c": "compute_dtype",
             "output": "output_dtype", "o": "output_dtype"}
    kw = {}
    for part in spec.split(","):
        k, _, v = part.partition("=")
        k = k.strip()
        if k not in names:
            raise ValueError(f"get_policy({spec!r}): unknown key {k!r} (expected params, compute, "
                             "output, or p, c, o)")
        kw[names[k]] = v.strip()
    return Policy(**kw)
