"""The eager fast path: `x + 1` on a concrete Array without the general dispatch.

An eager elementwise call goes operator -> `ember.numpy` -> `promote_args` ->
`bind` -> `EvalTrace` -> the primitive's exact-dtype impl -> numpy, and every
step re-derives what depends only on the operands' *types*: the promoted dtype
of a weak Python scalar, the abstract evaluation, the device.  This module
memoises that per (operand avals, Python scalar type), per function, and then
runs the numpy function directly.  It is not a second set of rules: an entry is
made by running the general path's own pieces (`promote_args`, the eager
abstract-eval memo of `fx.core`, the impl's `direct` function) on the operands'
types, and only when promotion leaves the arrays untouched (no conversion, no
broadcast) and the primitive runs on the host as its numpy impl.  Everything
else, and every first call, takes the general path, so errors are its errors.

The memo applies only at the root trace (no transform active: a tracer operand
is not an Array, so leaked-tracer detection stays with `EvalTrace`), while
`debug_nans` is off, and within one `dtypes.default_epoch` (a new default float,
debug flag or profiler session clears every memo).

Example:
    >>> import ember.numpy as enp
    >>> x = enp.asarray([1.0, 2.0])
    >>> (x + 1).tolist(), (x + 1).dtype
    ([2.0, 3.0], dtype('float32'))
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..array import Array
from ..fx import core as _core
from ._core import _SCALAR_CACHE, _scalar_as, promote_args

_trace_get = _core._trace_var.get
_ROOT = _core._eval_trace
_new = object.__new__
_ndarray = np.ndarray

# A Python scalar's promotion depends on its type only (weak typing), so one
# representative value per type finds the dtype it converts to.
_REPRESENTATIVE = {bool: True, int: 1, float: 1.0, complex: 1j}
PY_SCALAR_TYPES = frozenset(_REPRESENTATIVE)

_MEMOS: list[dict] = []
_LASTS: list[list] = []
_EPOCH = [_dt.default_epoch]
_MAX_ENTRIES = 4096


def _new_epoch():
    """The default dtypes (or debug flags) changed: forget every entry."""
    for m in _MEMOS:
        m.clear()
    for last in _LASTS:
        last[0] = (None, None, None)
    _EPOCH[0] = _dt.default_epoch


def _entry(prim, name, to_inexact, reflected, x, o, t):
    """The memo entry for `x op o` (or `o op x`): (dtype a Python scalar converts to or
    None, result aval, its dtype, function to call, device, cache of converted
    scalars), or False where the general path
    must run (promotion changes an array, a non-host device, an error)."""
    dev = x._device
    if dev._execute is not None or not dev.host_buffers or prim.multiple_results:
        return False
    if t is Array:
        if o._device is not dev:
            return False
        other = o
    else:
        other = _REPRESENTATIVE[t]
    args = (other, x) if reflected else (x, other)
    try:
        a, b = promote_args(name, *args, to_inexact=to_inexact)
        avals = [_core.get_aval(a), _core.get_aval(b)]
        out_aval = _core._eager_abstract_eval(prim, avals, {})
    except Exception:  # the general path raises (and words) the error itself
        return False
    scalar_dtype = None
    for given, got in zip(args, (a, b)):
        if given is other and t is not Array:
            if not isinstance(got, np.generic):
                return False
            scalar_dtype = got.dtype
        elif got is not given:   # converted or broadcast: not a single primitive
            return False
    return scalar_dtype, out_aval, out_aval.dtype, _direct(prim, avals[0].dtype), dev, {}


def _direct(prim, dtype):
    """What to call for operands of `dtype`: the impl's `direct(dtype)` (its numpy
    function, where the impl would only call it) or the impl itself."""
    impl = prim.impl
    direct = getattr(impl, "direct", None)
    fn = direct(dtype) if direct is not None else None
    return impl if fn is None else fn


def _finish(prim, out, out_aval, dev, vals, fn):
    """The slow end of a fast call: what `EvalTrace` does with an impl result that is
    not already an ndarray of the promised dtype and shape."""
    if fn is not prim.impl:   # the impl's exact-dtype cast (and the check) decide
        out = prim.impl(*vals)
    return _core._WRAP(_core._checked(prim, out, out_aval), dev, out_aval)


def _scalar(name, o, t, sd, cache):
    """`o` as the numpy scalar the general path makes (`_scalar_as`), kept in the entry's
    own cache where `_scalar_as` caches it (never -0.0 or NaN, so keys equal by value
    are the same scalar)."""
    b = _scalar_as(name, o, sd)
    if len(cache) < 256 and _SCALAR_CACHE.get((t, o, sd)) is b:
        cache[o] = b
    return b


def binary_method(prim, name, to_inexact, reflected, general, operator):
    """An Array operator (`__add__`, `__radd__`, ...) with the memoised fast path;
    `general(x1, x2)` is the numpy function's general path and `operator` the shared
    ArrayOps method (taken for operands that are neither Arrays nor Python scalars).

    Example:
        >>> import ember.numpy as enp
        >>> (2 - enp.asarray([1, 2])).tolist()
        [1, 0]
    """
    memo: dict = {}
    _MEMOS.append(memo)
    # a one-entry inline cache in front of the memo (loops repeat one signature): the
    # identity test avoids hashing avals; one tuple, replaced whole, so a thread never
    # sees one signature's avals with another's entry; emptied with the memo
    last = [(None, None, None)]
    _LASTS.append(last)
    trace_get, root, core, dt, epoch, ndarray, new = _trace_get, _ROOT, _core, _dt, _EPOCH, _ndarray, _new
    py_types = PY_SCALAR_TYPES

    def method(self, o):
        t = type(o)
        if trace_get() is root and not core._debug_nans and dt.default_epoch == epoch[0]:
            xa = self._aval or self.aval
            if t is Array:
                other = o._aval or o.aval
            elif t in py_types:
                other = t
            else:
                return operator(self, o)
            seen = last[0]
            if seen[0] is xa and seen[1] is other:
                e = seen[2]
            else:
                key = (xa, other)
                e = memo.get(key)
                if e is None:
                    if len(memo) >= _MAX_ENTRIES:
                        memo.clear()
                    e = memo[key] = _entry(prim, name, to_inexact, reflected, self, o, t)
                    e = None   # the first call runs the general path
                else:
                    last[0] = (xa, other, e)
            if e:
                sd, out_aval, od, fn, dev, scache = e
                if self._device is dev:
                    if sd is None:
                        b = o._value if o._device is dev else None
                    else:
                        b = scache.get(o)
                        if b is None:
                            b = _scalar(name, o, t, sd, scache)
                    if b is not None:
                        v = self._value
                        try:
                            out = fn(b, v) if reflected else fn(v, b)
                        except Exception:  # the general path words the error
                            return general(o, self) if reflected else general(self, o)
                        if type(out) is not ndarray or out.dtype is not od \
                                or out.shape != out_aval.shape:
                            return _finish(prim, out, out_aval, dev,
                                           (b, v) if reflected else (v, b), fn)
                        out.setflags(False)   # read-only (positional: keyword parsing costs ~0.2 us)
                        # the Array is built in place here and in `unary_fast`: a shared
                        # helper's call would cost ~0.1 us of a ~1.6 us operation
                        r = new(Array)
                        r._value = out
                        r._aval = out_aval
                        r._device = dev
                        return r
        elif dt.default_epoch != epoch[0]:
            _new_epoch()
        if t is Array or t in PY_SCALAR_TYPES:
            return general(o, self) if reflected else general(self, o)
        return operator(self, o)
    return method


def unary_fast(prim):
    """`f(x)` for a float-valued unary function on an inexact Array, memoised per aval;
    returns None where the general path must run.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.fx.prims import elementwise as ew
        >>> sin, x = unary_fast(ew.sin_p), enp.asarray([0.0])
        >>> sin(x) is None   # the first call fills the memo (the general path runs)
        True
        >>> sin(x).tolist()
        [0.0]
    """
    memo: dict = {}
    _MEMOS.append(memo)

    def fast(x):
        if _trace_get() is not _ROOT or _core._debug_nans or _dt.default_epoch != _EPOCH[0]:
            if _dt.default_epoch != _EPOCH[0]:
                _new_epoch()
            return None
        xa = x._aval or x.aval
        e = memo.get(xa)
        if e is None:
            dev = x._device
            e = False
            if dev._execute is None and dev.host_buffers:
                try:
                    e = (_core._eager_abstract_eval(prim, [xa], {}), _direct(prim, xa.dtype), dev)
                except Exception:
                    e = False
            if len(memo) >= _MAX_ENTRIES:
                memo.clear()
            memo[xa] = e
            return None
        if not e or x._device is not e[2]:
            return None
        out_aval, fn, dev = e
        v = x._value
        try:
            out = fn(v)
        except Exception:
            return None
        if type(out) is not _ndarray or out.dtype is not out_aval.dtype or out.shape != out_aval.shape:
            return _finish(prim, out, out_aval, dev, (v,), fn)
        out.setflags(False)   # read-only (positional: keyword parsing costs ~0.2 us)
        r = _new(Array)
        r._value = out
        r._aval = out_aval
        r._device = dev
        return r
    return fast


# (operator, ember.numpy name, reflected)
_OPERATORS = (
    ("__add__", "add", False), ("__radd__", "add", True),
    ("__sub__", "subtract", False), ("__rsub__", "subtract", True),
    ("__mul__", "multiply", False), ("__rmul__", "multiply", True),
    ("__truediv__", "divide", False), ("__rtruediv__", "divide", True),
    ("__and__", "bitwise_and", False), ("__rand__", "bitwise_and", True),
    ("__or__", "bitwise_or", False), ("__ror__", "bitwise_or", True),
    ("__xor__", "bitwise_xor", False), ("__rxor__", "bitwise_xor", True),
    ("__lt__", "less", False), ("__le__", "less_equal", False),
    ("__gt__", "greater", False), ("__ge__", "greater_equal", False),
    ("__eq__", "equal", False), ("__ne__", "not_equal", False),
)


def install(namespace, array_type, ops):
    """Give `array_type` the memoised operators of the `namespace` functions made by
    `_elementwise._binary` (they carry `_eager = (prim, name, to_inexact, general)`);
    `ops` is the shared ArrayOps class, the fallback for other operands.

    Example:
        >>> import ember, ember.numpy as enp
        >>> ember.Array.__add__ is not ember.ops_mixin.ArrayOps.__add__
        True
    """
    for op, fname, reflected in _OPERATORS:
        info = getattr(getattr(namespace, fname), "_eager", None)
        if info is None:
            continue
        prim, name, to_inexact, general = info
        m = binary_method(prim, name, to_inexact, reflected, general, ops.__dict__[op])
        m.__name__ = m.__qualname__ = op
        m.__doc__ = ops.__dict__[op].__doc__
        setattr(array_type, op, m)
