"""Turning scalar and core-dimension functions into array functions: vectorize (numpy's
semantics, `signature=` and `excluded=` included, built on vmap), apply_along_axis,
apply_over_axes and piecewise.

Example:
    >>> import ember.numpy as enp
    >>> f = enp.vectorize(lambda a, b: a * b + 1)
    >>> f(enp.asarray([1.0, 2.0]), enp.asarray([[1.0], [3.0]])).tolist()
    [[2.0, 3.0], [4.0, 7.0]]
"""
from __future__ import annotations

import functools
import operator
import re

from ..fx.core import get_aval
from ._core import broadcast_shapes, broadcast_to, ensure_array

__all__ = ["vectorize", "apply_along_axis", "apply_over_axes", "piecewise"]

_DIM = r"\w+"
_CORE = rf"\((?:{_DIM}(?:,{_DIM})*)?\)"
_ARGS = rf"{_CORE}(?:,{_CORE})*"
_SIGNATURE = rf"^({_ARGS})?->({_ARGS})$"


def _parse_signature(signature):
    """'(m,n),(n)->(m)' -> ([('m', 'n'), ('n',)], [('m',)])."""
    s = signature.replace(" ", "")
    if not re.match(_SIGNATURE, s):
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r} (expected "
                         "something like '(m,n),(n)->(m)')")
    ins, outs = s.split("->")
    def groups(part):
        return [tuple(d for d in g.split(",") if d) for g in re.findall(r"\(([^)]*)\)", part)]
    return groups(ins), groups(outs)


class vectorize:  # noqa: N801 - numpy's name
    """Vectorise `pyfunc` over the leading (broadcast) dimensions of its array arguments,
    as numpy.vectorize does, by nested `vmap` (so the result traces, differentiates and
    compiles like any ember function). Without `signature` the function sees scalars; with a
    gufunc `signature` such as `"(n),(n)->()"` it sees the trailing core dimensions.
    `excluded` names positional indices or keyword names passed through unvectorised.
    `otypes` casts the outputs (typecodes such as "d" or dtypes, one per output); `cache`
    is accepted for numpy's signature (the function is traced, never probed, so there is
    nothing to cache).

    Example:
        >>> import ember.numpy as enp
        >>> dot = enp.vectorize(lambda a, b: (a * b).sum(), signature="(n),(n)->()")
        >>> dot(enp.ones((3, 2)), enp.asarray([1.0, 2.0])).tolist()
        [3.0, 3.0, 3.0]
    """

    def __init__(self, pyfunc, otypes=None, doc=None, excluded=None, cache=False,
                 signature=None):
        if not callable(pyfunc):
            raise TypeError(f"vectorize: pyfunc must be callable, got {type(pyfunc).__name__}")
        self.pyfunc = pyfunc
        self.excluded = frozenset() if excluded is None else frozenset(excluded)
        self.signature = signature
        self._core = None if signature is None else _parse_signature(signature)
        self.otypes = otypes
        self.__doc__ = pyfunc.__doc__ if doc is None else doc
        functools.update_wrapper(self, pyfunc, assigned=("__module__", "__name__",
                                                          "__qualname__"), updated=())

    def __call__(self, *args, **kwargs):
        from ..transforms.batching import vmap
        excluded_pos = {i for i in self.excluded if isinstance(i, int)}
        fixed_kw = {k: v for k, v in kwargs.items() if k in self.excluded}
        vec_kw = [k for k in kwargs if k not in self.excluded]
        pos = [i for i in range(len(args)) if i not in excluded_pos]
        arrays = [ensure_array(args[i]) for i in pos] + [ensure_array(kwargs[k]) for k in vec_kw]
        name = getattr(self.pyfunc, "__name__", "pyfunc")

        def call(*vals):
            full = list(args)
            for i, v in zip(pos, vals):
                full[i] = v
            kw = dict(fixed_kw)
            kw.update(zip(vec_kw, vals[len(pos):]))
            return self.pyfunc(*full, **kw)

        if self._core is None:
            cores = [()] * len(arrays)
            out_cores = None
        else:
            cores, out_cores = self._core
            if len(cores) != len(arrays):
                raise TypeError(f"vectorize({name}): the signature {self.signature!r} has "
                                f"{len(cores)} inputs, but {len(arrays)} vectorised arguments "
                                "were given")
        sizes = {}
        loops = []
        for k, (x, core) in enumerate(zip(arrays, cores)):
            shape = get_aval(x).shape
            if len(shape) < len(core):
                raise ValueError(f"vectorize({name}): argument {k} has shape "
                                 f"{get_aval(x).str_user()}, fewer dimensions than its core "
                                 f"dimensions {core} in {self.signature!r}")
            for dname, size in zip(core, shape[len(shape) - len(core):]):
                if sizes.setdefault(dname, size) != size:
                    raise ValueError(f"vectorize({name}): core dimension {dname!r} is "
                                     f"{sizes[dname]} in one argument and {size} in argument {k}")
            loops.append(shape[:len(shape) - len(core)])
        loop = broadcast_shapes(*loops, op=f"vectorize({name})") if loops else ()
        arrays = [broadcast_to(x, loop + get_aval(x).shape[len(l):])
                  for x, l in zip(arrays, loops)]
        fn = call
        for _ in loop:
            fn = vmap(fn)
        out = fn(*arrays)
        if out_cores is not None:
            self._check_outputs(out, out_cores, len(loop), name, sizes)
        if self.otypes is not None:
            out = self._cast(out, name)
        return out

    def _cast(self, out, name):
        import numpy as np
        types = list(self.otypes)  # a typecode string or a sequence of dtypes
        outs = out if isinstance(out, tuple) else (out,)
        if len(types) != len(outs):
            raise ValueError(f"vectorize({name}): otypes has {len(types)} entries for "
                             f"{len(outs)} outputs")
        cast = tuple(ensure_array(o).astype(np.dtype(t)) for o, t in zip(outs, types))
        return cast if isinstance(out, tuple) else cast[0]

    def _check_outputs(self, out, out_cores, nloop, name, sizes):
        outs = out if len(out_cores) > 1 else (out,)
        if len(out_cores) > 1 and (not isinstance(out, tuple) or len(out) != len(out_cores)):
            raise ValueError(f"vectorize({name}): the signature {self.signature!r} has "
                             f"{len(out_cores)} outputs; the function must return a tuple of "
                             "that length")
        for k, (o, core) in enumerate(zip(outs, out_cores)):
            shape = get_aval(ensure_array(o)).shape[nloop:]
            if len(shape) != len(core) or any(
                    sizes.setdefault(d, s) != s for d, s in zip(core, shape)):
                raise ValueError(f"vectorize({name}): output {k} has core shape {shape}, which "
                                 f"does not match {core} in {self.signature!r}")


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """Apply `func1d` to every 1-D slice of `arr` along `axis` (numpy's apply_along_axis, via
    vmap over the other axes); the slice's result dimensions replace `axis`.

    Example:
        >>> import ember.numpy as enp
        >>> x = enp.asarray([[1.0, 5.0], [3.0, 2.0]])
        >>> enp.apply_along_axis(lambda v: v.max() - v.min(), 0, x).tolist()
        [2.0, 3.0]
    """
    from ..transforms.batching import vmap
    from ._manipulation import moveaxis
    from ._util import canonicalize_axis
    arr = ensure_array(arr)
    nd = get_aval(arr).ndim
    axis = canonicalize_axis(operator.index(axis), nd, "apply_along_axis")

    def one(v):
        return func1d(v, *args, **kwargs)

    fn = one
    for _ in range(nd - 1):
        fn = vmap(fn)
    out = ensure_array(fn(moveaxis(arr, axis, -1)))
    # out has the nd - 1 other axes first, then the k axes of func1d's result: put those at
    # `axis`, numpy's layout
    k = get_aval(out).ndim - (nd - 1)
    if k == 0:
        return out
    return moveaxis(out, tuple(range(nd - 1, nd - 1 + k)), tuple(range(axis, axis + k)))


def piecewise(x, condlist, funclist, *args, **kw):
    """Evaluate `funclist[i]` where `condlist[i]` holds (numpy's piecewise): later
    conditions win where several hold; one extra function (or value) is the default where
    none does, else 0. Entries of funclist are functions of x or constants; the result has
    x's dtype. Every function is evaluated on all of x and the results selected, so they
    must be elementwise (as with numpy, which passes them x[cond]).

    Example:
        >>> import ember.numpy as enp
        >>> x = enp.asarray([-2.0, 0.5, 3.0])
        >>> enp.piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v * 10, 0.0]).tolist()
        [2.0, 0.0, 30.0]
    """
    from ._creation import zeros_like
    from ._searching import where
    from ._utility import any as _any
    x = ensure_array(x)
    xa = get_aval(x)
    if hasattr(condlist, "shape") and not isinstance(condlist, (list, tuple)):
        c = ensure_array(condlist)
        conds = [c] if get_aval(c).ndim == xa.ndim else [c[i] for i in range(get_aval(c).shape[0])]
    elif isinstance(condlist, (list, tuple)):
        conds = [ensure_array(c) for c in condlist]
    else:
        conds = [ensure_array(condlist)]
    conds = [c.astype(bool) if c.dtype != bool else c for c in conds]
    n, nf = len(conds), len(funclist)
    if nf == n + 1:
        from ._manipulation import stack
        none = ~_any(stack([broadcast_to(c, xa.shape) for c in conds]), axis=0) if n else \
            broadcast_to(ensure_array(True), xa.shape)
        conds = conds + [none]
    elif nf != n:
        raise ValueError(f"piecewise: funclist has {nf} entries; with {n} conditions it needs "
                         f"{n} (or {n + 1}, the last being the default)")
    out = zeros_like(x)
    for c, f in zip(conds, funclist):
        v = f(x, *args, **kw) if callable(f) else f
        v = broadcast_to(ensure_array(v).astype(xa.dtype), xa.shape)
        out = where(broadcast_to(c, xa.shape), v, out)
    return out


def apply_over_axes(func, a, axes):
    """`func(a, axis)` applied for each axis in turn, keeping the rank: a result with one
    axis fewer gets it back as a unit axis (numpy's apply_over_axes, e.g. with enp.sum).

    Example:
        >>> import ember.numpy as enp
        >>> enp.apply_over_axes(enp.sum, enp.ones((2, 3, 4)), [0, 2]).shape
        (1, 3, 1)
    """
    from ._core import ensure_array
    from ._manipulation import expand_dims
    from ..fx.core import get_aval
    val = ensure_array(a)
    n = get_aval(val).ndim
    for axis in ([axes] if isinstance(axes, int) else axes):
        ax = axis + n if axis < 0 else axis
        res = ensure_array(func(val, ax))
        if get_aval(res).ndim == get_aval(val).ndim:
            val = res
        elif get_aval(res).ndim == get_aval(val).ndim - 1:
            val = expand_dims(res, ax)
        else:
            raise ValueError(f"apply_over_axes: func must return an array of rank {n} or "
                             f"{n - 1}, got {get_aval(res).str_user()} for axis {axis}")
    return val
