"""Gradient all-reduce in buckets: the leaves of a gradient pytree are flattened
into buffers of about `bucket_bytes` per dtype, each reduced with ONE collective,
then split back — one MPI call per bucket instead of one per parameter.

Buckets are filled in reverse leaf order, as PyTorch DDP fills them: for a
model's gradients in `named_parameters()` order that is the order the backward
pass produces them (last layer first), so the first bucket is complete early.
In a compiled step on a backend that overlaps collectives (the CPU backend,
`ember.config` "overlap_collectives"), each bucket's all-reduce starts as soon
as its gradients are computed and is waited for just before the optimiser reads
it, so the rest of the backward pass runs while it is in flight
(backends/kernels/overlap.py).  The bucketing decides which values are reduced
together, not how: the result is the same with or without the overlap.

Example:
    >>> import ember, ember.numpy as enp
    >>> g = {"w": enp.ones((2, 2)), "b": enp.ones(2)}
    >>> out = ember.vmap(lambda g: all_reduce_gradients(g, "i"), axis_name="i")(
    ...     ember.tree.map(lambda x: enp.stack([x, 3 * x]), g))
    >>> out["b"].tolist()
    [[2.0, 2.0], [2.0, 2.0]]
"""
from __future__ import annotations

DEFAULT_BUCKET_BYTES = 25 << 20     # PyTorch DDP's default bucket size (bucket_cap_mb=25)


def check_bucket_bytes(bucket_bytes, where: str) -> None:
    """A clear error for a bucket size that is not a positive number of bytes.

    Example:
        >>> check_bucket_bytes(1 << 20, "TrainStep")
    """
    import numbers
    if isinstance(bucket_bytes, bool) or not isinstance(bucket_bytes, numbers.Integral) or bucket_bytes <= 0:
        raise ValueError(f"{where}: bucket_bytes must be a positive int (bytes per bucket, e.g. "
                         f"{DEFAULT_BUCKET_BYTES} = 25 MiB, PyTorch DDP's default), got {bucket_bytes!r}")


def buckets(avals, bucket_bytes: int = DEFAULT_BUCKET_BYTES) -> list:
    """Leaf indices grouped into buckets: leaves taken last to first, one open
    bucket per dtype, a bucket closed when the next leaf would take it past
    `bucket_bytes` (a leaf larger than that is a bucket of its own). Buckets come
    in the order they were opened, which is the order their reductions are issued.

    Example:
        >>> from ember.fx.core import AbstractArray
        >>> import numpy as np
        >>> f32 = [AbstractArray((n,), np.dtype("float32")) for n in (4, 4, 4)]
        >>> buckets(f32, bucket_bytes=32)
        [[2, 1], [0]]
    """
    check_bucket_bytes(bucket_bytes, "all_reduce_gradients")
    out: list = []
    open_bucket: dict = {}   # dtype -> (index in out, bytes so far)
    for i in range(len(avals) - 1, -1, -1):
        a = avals[i]
        nbytes = a.size * a.dtype.itemsize
        cur = open_bucket.get(a.dtype)
        if cur is not None and cur[1] + nbytes <= bucket_bytes:
            out[cur[0]].append(i)
            open_bucket[a.dtype] = (cur[0], cur[1] + nbytes)
        else:
            out.append([i])
            open_bucket[a.dtype] = (len(out) - 1, nbytes)
    return out


def all_reduce_gradients(grads, axis_name="batch", *, mean: bool = True,
                         bucket_bytes: int = DEFAULT_BUCKET_BYTES):
    """The mean (or sum) of `grads` over the members of `axis_name`, reduced in
    buckets of about `bucket_bytes` bytes filled from the last leaf (smaller
    buckets start sooner in a compiled step, larger ones make fewer calls).

    Example:
        >>> import ember, ember.numpy as enp
        >>> g = [enp.ones(3), enp.ones(3)]
        >>> out = ember.vmap(lambda g: all_reduce_gradients(g, "i", mean=False, bucket_bytes=12),
        ...                  axis_name="i")([enp.ones((2, 3)), enp.ones((2, 3))])
        >>> out[0].tolist()
        [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]
    """
    from .. import lax, tree as _tree
    from ..fx.core import get_aval
    from ..fx.prims.collective import axis_size
    leaves, treedef = _tree.flatten(grads)
    avals = [get_aval(leaf) for leaf in leaves]
    groups = buckets(avals, bucket_bytes)
    if not leaves:
        return grads
    n = axis_size(axis_name)
    out = [None] * len(leaves)
    for idx in groups:
        dtype = avals[idx[0]].dtype
        if len(idx) == 1:     # a bucket of one leaf is reduced as it is: no packing copy
            total = lax.psum(leaves[idx[0]], axis_name)
            out[idx[0]] = lax.div(total, lax.convert_element_type(n, dtype)) if mean else total
            continue
        flat = lax.concatenate([lax.reshape(leaves[i], (avals[i].size,)) for i in idx], 0)
        total = lax.psum(flat, axis_name)
        if mean:
            total = lax.div(total, lax.convert_element_type(n, dtype))
        start = 0
        for i in idx:
            a = avals[i]
            out[i] = lax.reshape(lax.slice(total, (start,), (start + a.size,)), a.shape)
            start += a.size
    return _tree.unflatten(treedef, out)
