"""`jit(..., donate_argnums=...)`: donated arguments' buffers go to the program's
outputs, and a donated array cannot be used again.

After a call, each donated ember Array is deleted (its buffer replaced by a
marker whose every use raises `DonatedArrayError`), and its buffer joins the
executable's pool of output arrays, so the next call writes a same-shaped output
into it instead of allocating (the LLVM executable recycles outputs of 128 KiB
and more; a buffer that is a view, or that anything else still references, is
never reused).  An output that *is* a donated input (the function returns it)
keeps the buffer without a copy.  Donation applies to concrete arrays outside
transforms; under `grad` / `vmap` / an outer `jit` it is ignored, as in JAX.

Example:
    >>> import ember, ember.numpy as enp
    >>> step = ember.jit(lambda x: x * 2.0, donate_argnums=0)
    >>> x = enp.ones(3)
    >>> y = step(x)
    >>> try:
    ...     x + 1.0
    ... except DonatedArrayError as e:
    ...     print(str(e).split(";")[0])
    this Array was donated to jit(<lambda>) (donate_argnums)
"""
from __future__ import annotations

import numpy as np

from ..fx.core import EmberError, user_source
from ..tree import tree_leaves


class DonatedArrayError(EmberError, RuntimeError):
    """A donated Array was used after the call it was donated to."""


class _Donated:
    """What a donated Array holds instead of its buffer: every use raises."""
    __slots__ = ("_msg",)

    def __init__(self, msg):
        object.__setattr__(self, "_msg", msg)

    def __getattr__(self, name):
        raise DonatedArrayError(object.__getattribute__(self, "_msg"))

    def __array__(self, *a, **k):
        raise DonatedArrayError(self._msg)

    def __repr__(self):
        return "<donated>"


def normalize(donate_argnums, static_argnums, fun) -> tuple:
    """`donate_argnums` as a sorted tuple of non-negative ints, checked against the
    static arguments.

    Example:
        >>> normalize(1, (), None)
        (1,)
    """
    nums = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums or ())
    for n in nums:
        if type(n) is not int or n < 0:
            raise TypeError(f"jit: donate_argnums must be non-negative ints (positions of positional "
                            f"arguments), got {donate_argnums!r}")
    both = sorted(set(nums) & set(static_argnums))
    if both:
        raise ValueError(f"jit: argument(s) {both} are both static and donated; a static argument is a "
                         f"Python value, not a buffer: remove it from donate_argnums")
    return tuple(sorted(set(nums)))


def donate(args, nums, exe, name: str) -> None:
    """Delete the donated Arrays among `args` (positions `nums`) and offer their
    buffers to `exe`'s output pool (called by jit after a concrete call).

    Example:
        >>> import ember
        >>> from ember.array import Array
        >>> a = ember.numpy.ones(2)
        >>> donate((a,), (0,), None, "f")
        >>> isinstance(a._value, _Donated)
        True
    """
    from ..array import Array
    where = user_source()
    msg = (f"this Array was donated to jit({name}) (donate_argnums); its buffer now belongs to the "
           f"call's outputs{' (at ' + where + ')' if where else ''}. Use the returned value instead, "
           f"or leave the argument out of donate_argnums")
    bufs = []
    seen = set()
    for n in nums:
        if n >= len(args):
            continue
        for leaf in tree_leaves(args[n]):
            if type(leaf) is Array and id(leaf) not in seen and not isinstance(leaf._value, _Donated):
                seen.add(id(leaf))
                if leaf._aval is None:
                    leaf._aval = leaf.aval
                bufs.append(leaf._value)
                # both the buffer and the device: every path to the data (numpy
                # conversion reads the device first) meets the marker
                leaf._value = leaf._device = _Donated(msg)
    _offer(exe, bufs)


def _offer(exe, bufs) -> None:
    """Put each buffer in the recycling slots of a same-shaped output of `exe` (its
    next call takes it if nothing else holds it)."""
    st = getattr(exe, "_state", None)
    fresh = getattr(exe, "_fresh", None)
    if st is None or fresh is None or st.recycled is None:
        return
    free = [b for b in bufs if type(b) is np.ndarray and b.base is None and b.flags.c_contiguous
            and b.flags.owndata]
    for b, shape, dtype, recycle in fresh:
        if not recycle:
            continue
        for i, buf in enumerate(free):
            # ours, the loop's, getrefcount's argument and the list: nobody else holds it
            # safe to offer whoever else holds it: `_recycled` takes a slot only when the
            # slot is its last holder
            if buf is not None and buf.shape == shape and buf.dtype == dtype:
                slots = st.recycled.setdefault(b, [])
                slots.insert(0, buf)
                del slots[2:]
                free[i] = None
                break
