"""`ravel_pytree`: a pytree of arrays as one flat vector and the function that rebuilds it
(JAX's `jax.flatten_util`), composed from ember.numpy so every transform applies."""
from __future__ import annotations

from . import dtypes as _dt
from .fx.core import get_aval
from .tree import tree_flatten, tree_unflatten

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree):
    """Flatten a pytree of arrays (and Python scalars) into one 1-D array; returns
    `(flat, unravel)` where `unravel(flat)` rebuilds the pytree with each leaf's shape and
    dtype.  Leaves of mixed dtypes are promoted to their `result_type` in `flat` (float32
    and int32 give float32; Python scalars are weak), and `unravel` casts back.  Both
    directions are differentiable, batchable and jittable.

    Example:
        >>> import ember.numpy as enp
        >>> flat, unravel = ravel_pytree({"w": enp.ones((2, 2)), "b": enp.zeros(3)})
        >>> flat.shape, flat.tolist()[:4]
        ((7,), [0.0, 0.0, 0.0, 1.0])
        >>> unravel(flat)["w"].shape
        (2, 2)
    """
    from .numpy import _core, concatenate, ravel, reshape, zeros
    from .lax import convert_element_type, slice as lax_slice
    leaves, tree = tree_flatten(pytree)
    # promotion sees Python scalars as weak, as JAX's does
    dtype = _dt.result_type(*leaves) if leaves else _dt.default_float
    leaves = [_core.asarray(x) if not hasattr(x, "aval") else x for x in leaves]
    avals = [get_aval(x) for x in leaves]
    sizes = [a.size for a in avals]
    total = sum(sizes)
    if leaves:
        flat = concatenate([ravel(convert_element_type(x, dtype)) for x in leaves])
    else:
        flat = zeros((0,), dtype)

    def unravel(flat_vector):
        """Rebuild the pytree `ravel_pytree` flattened from a vector like `flat`."""
        v = flat_vector if hasattr(flat_vector, "aval") else _core.asarray(flat_vector)
        a = get_aval(v)
        if a.shape != (total,):
            raise TypeError(f"unravel: expected a vector {dtype.name}[{total}], got "
                            f"{a.str_user()}")
        if a.dtype != dtype:
            raise TypeError(f"unravel: expected a vector of dtype {dtype.name}, got "
                            f"{a.str_user()}; cast it with .astype({dtype.name!r})")
        out, start = [], 0
        for av, n in zip(avals, sizes):
            piece = lax_slice(v, (start,), (start + n,))
            out.append(convert_element_type(reshape(piece, av.shape), av.dtype))
            start += n
        return tree_unflatten(tree, out)

    return flat, unravel
