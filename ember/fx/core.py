"""The tracing core: abstract values, primitives, traces, tracers and `bind`.

ember uses the *stackless* design: one current trace lives in a context
variable; `bind(prim, *args)` hands the primitive to it.  Each trace has a
parent and runs its rules with the parent as the current trace, so the rules'
own `bind`s go one level up.  A trace recognises its own tracers by identity
and treats every other value as a constant, so there are no levels to compare
and no perturbation confusion.  A finished trace is invalidated; a tracer of an
invalid trace that reaches a trace again raises `UnexpectedTracerError`.

Example:
    >>> from ember.fx.core import AbstractArray
    >>> str(AbstractArray((2, 3), "float32"))
    'f32[2,3]'
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from typing import Callable

import numpy as np

from .. import dtypes as _dt

# --- errors -----------------------------------------------------------------

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_STDLIB_DIR = os.path.dirname(os.path.abspath(contextlib.__file__))


def user_frame(depth: int = 2):
    """The innermost stack frame outside ember and the standard library (the user's code)."""
    f = sys._getframe(depth)
    while f is not None:
        fn = f.f_code.co_filename
        if not (fn.startswith(_EMBER_DIR) or fn.startswith(_STDLIB_DIR) or fn.startswith("<frozen")):
            return f
        f = f.f_back
    return None


# While a transform replays an equation (the backward pass transposing it), the line
# of the user's code that equation came from: what equations it creates record.
transform_source: contextvars.ContextVar[str] = contextvars.ContextVar("ember_transform_source", default="")


def user_source() -> str:
    """'file:line (function)' of the user's code that called into ember, or ''
    (inside the backward pass: the source of the forward equation being transposed)."""
    src = transform_source.get()
    if src:
        return src
    f = user_frame(2)
    if f is None:
        return ""
    return f"{f.f_code.co_filename}:{f.f_lineno} ({f.f_code.co_name})"


def _where() -> str:
    src = user_source()
    return f"\n  at {src}" if src else ""


class EmberError(Exception):
    """Base class of ember's own errors."""


class ConcretizationError(EmberError, TypeError):
    """A traced (abstract) value was used where a concrete Python value is needed."""


class UnexpectedTracerError(EmberError):
    """A tracer escaped the transform that created it."""


def shape_error(op: str, msg: str) -> TypeError:
    """A TypeError for bad shapes that names the operation and the user's line."""
    return TypeError(f"{op}: {msg}{_where()}")


# --- abstract values -----------------------------------------------------------

_CANONICAL = {d: d for d in _dt.ALL_DTYPES + (_dt.float0,)}


class AbstractArray:
    """The type of every value: shape, dtype, and whether the dtype is weak.

    Example:
        >>> AbstractArray((3,), "int8").size
        3
    """
    __slots__ = ("shape", "dtype", "weak_type", "_hash")

    def __init__(self, shape, dtype, weak_type: bool = False):
        self.shape = shape if type(shape) is tuple else tuple(int(d) for d in shape)
        d = _CANONICAL.get(dtype) if isinstance(dtype, np.dtype) else None
        self.dtype = d if d is not None else _dt.canonicalize(dtype)
        self.weak_type = bool(weak_type)
        self._hash = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def update(self, shape=None, dtype=None, weak_type=None) -> "AbstractArray":
        return AbstractArray(self.shape if shape is None else shape,
                             self.dtype if dtype is None else dtype,
                             self.weak_type if weak_type is None else weak_type)

    def strip_weak(self) -> "AbstractArray":
        return self if not self.weak_type else AbstractArray(self.shape, self.dtype, False)

    def __eq__(self, other):
        return (isinstance(other, AbstractArray) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        if self._hash is None:
            self._hash = hash((self.shape, self.dtype, self.weak_type))
        return self._hash

    def str_short(self) -> str:
        return f"{_dt.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    __str__ = str_short

    def str_user(self) -> str:
        """The spelling of error messages, with dtype names as users type them
        (the IR printer keeps the short `f32[3,4]`).

        Example:
            >>> AbstractArray((3, 4), "float32").str_user()
            'float32[3,4]'
        """
        name = "float0" if self.dtype == _dt.float0 else self.dtype.name
        return f"{name}[{','.join(map(str, self.shape))}]"

    def __repr__(self):
        w = ", weak_type=True" if self.weak_type else ""
        return f"AbstractArray({self.shape}, {self.dtype}{w})"


def get_aval(x) -> AbstractArray:
    """The abstract value of anything array-like (Array, Tracer, numpy, Python scalar)."""
    a = getattr(x, "aval", None)
    if a is not None:
        return a
    t = type(x)
    if t is bool or t is int or t is float or t is complex:
        d, w = _dt.dtype_and_weak(x)
        return AbstractArray((), d, w)
    if isinstance(x, np.generic):
        a = _SCALAR_AVALS.get(x.dtype)
        if a is None:
            a = _SCALAR_AVALS[x.dtype] = AbstractArray((), x.dtype)
        return a
    if isinstance(x, np.ndarray):
        return AbstractArray(x.shape, x.dtype)
    raise TypeError(f"{type(x).__name__} is not a valid ember value; "
                    f"expected an ember Array, a numpy array or a Python scalar")


_SCALAR_AVALS: dict = {}


def const(dtype, value):
    """`value` as a rank-0 numpy constant of `dtype`: the literal that n-ary
    elementwise primitives broadcast (the one helper for this; `const_like` takes
    the dtype of a value).

    Example:
        >>> const("float16", 1.5), const(np.int8, 3).dtype
        (np.float16(1.5), dtype('int8'))
    """
    return np.array(value, dtype=dtype)[()]


def const_like(x, value):
    """`value` as a rank-0 numpy constant of the dtype of `x` (an array or tracer).

    Example:
        >>> const_like(np.zeros(3, np.float32), 2).dtype
        dtype('float32')
    """
    return np.array(value, dtype=get_aval(x).dtype)[()]


def weak_const(value):
    """A rank-0 numpy `value` as a *weakly typed* concrete value: what a Python scalar
    becomes beside a weakly typed operand, so that the result stays weak (JAX's weak
    literal: `lax.add(2.0, 3.0) + 1.0` still promotes like a Python float).  A numpy
    scalar itself is strongly typed, so it cannot carry that.

    Example:
        >>> import ember
        >>> weak_const(np.float16(1.5)).aval.weak_type
        True
    """
    return _WRAP(value, None, AbstractArray((), value.dtype, True))


# --- primitives ----------------------------------------------------------------

class Primitive:
    """A primitive operation together with its rules.

    Rule slots (None until a rule is registered):
      abstract_eval(*avals, **params) -> aval | list[aval]
      impl(*numpy_values, **params)   -> numpy value | list   (reference semantics)
      jvp(primals, tangents, **params) -> (primal_out, tangent_out)   tangents may be `Zero`
      transpose(ct, *args, **params)  -> list of cotangents (linear args are `UndefinedPrimal`)
      batch(axis_size, args, dims, **params) -> (out, out_dim)   dims: int or None
      partial_eval(trace, args, params) -> outputs   (higher-order primitives only)
      taylor(primals, series, **params) -> (primal_out, series_out)   (ember.jet)

    What a scheduler needs to know, set by the factories that define it:
      kind: "elementwise" (one output element from the same element of each
            operand: defvectorized/defbroadcasting set it) |
            "identity" (elementwise and returns its operand: stop_gradient,
            checkpoint_name; a scheduler drops it) |
            "movement" (output elements are operand elements at computable
            indices: reshape, transpose, pad, ..., and iota) |
            "indexing" (reads at data-dependent indices: gather, dynamic_slice) |
            "reduction" (folds along axes: reduce_*, argmax, cumulative and
            windowed forms) | "contraction" (dot_general, convolution) |
            "scatter" (combines updates into an operand at indices) |
            "library" (no kernel form: sort, linalg, fft, bit casts) |
            "control" (higher-order: cond, scan, jit_call, ...) |
            "collective" (combines values across the members of a named axis:
            psum, all_gather, ...; a host library step when compiled) | None
            (unset: a test fails)
      cost: "cheap" | "expensive" (elementwise: worth materialising once
            when it has several consumers)
      effectful: True for primitives run for an effect (ember.debug's
            callbacks): DCE keeps them, CSE never merges them

    Example:
        >>> p = Primitive("my_neg")
        >>> p.name
        'my_neg'
    """

    def __init__(self, name: str, multiple_results: bool = False):
        self.name = name
        self.multiple_results = multiple_results
        self.abstract_eval: Callable | None = None
        self.impl: Callable | None = None
        self.jvp: Callable | None = None
        self.transpose: Callable | None = None
        self.batch: Callable | None = None
        self.partial_eval: Callable | None = None
        self.taylor: Callable | None = None
        self.kind: str | None = None
        self.cost: str = "cheap"
        # effectful: runs for its effect (a host callback); passes never drop, merge or reorder it
        self.effectful: bool = False
        # Rules not meaningful for this primitive (e.g. transpose of a non-linear
        # op, jvp of an integer op); the coverage test reads this.
        self.not_applicable: set[str] = set()
        PRIMITIVES[name] = self

    def bind(self, *args, **params):
        return current_trace().process_primitive(self, args, params)

    def __repr__(self):
        return self.name

    def __call__(self, *args, **params):
        return self.bind(*args, **params)


PRIMITIVES: dict[str, Primitive] = {}


# --- symbolic zeros and undefined primals -------------------------------------

class Zero:
    """A symbolic zero tangent/cotangent of the given abstract value."""
    __slots__ = ("aval",)

    def __init__(self, aval: AbstractArray):
        self.aval = aval

    @staticmethod
    def like(x) -> "Zero":
        return Zero(tangent_aval(get_aval(x)))

    def __repr__(self):
        return f"Zero({self.aval})"


def tangent_aval(aval: AbstractArray) -> AbstractArray:
    """Tangents of integer/bool values have dtype float0."""
    if _dt.is_inexact(aval.dtype):
        return AbstractArray(aval.shape, aval.dtype, aval.weak_type)
    return AbstractArray(aval.shape, _dt.float0)


class UndefinedPrimal:
    """Marks a linear input of an equation during transposition."""
    __slots__ = ("aval",)

    def __init__(self, aval: AbstractArray):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval})"


def is_undefined(x) -> bool:
    return type(x) is UndefinedPrimal


# --- traces --------------------------------------------------------------------

class Trace:
    """An interpreter for primitives.  Subclasses implement `process_primitive`."""
    parent: "Trace | None"

    def __init__(self, parent: "Trace | None"):
        self.parent = parent
        self.valid = True
        self.origin = ""  # where the transform was entered, for leak errors

    def process_primitive(self, prim: Primitive, args, params):  # pragma: no cover
        raise NotImplementedError

    def is_ancestor_of_current(self) -> bool:
        t = current_trace()
        while t is not None:
            if t is self:
                return True
            t = t.parent
        return False

    def invalidate(self):
        self.valid = False

    def sources_of(self, tracer) -> tuple[list[str], list]:
        """(names of the traced function's arguments that `tracer` depends on,
        tracers of other traces it depends on): the error messages' provenance.
        A trace that stages a graph walks it (StagingTrace); others defer to the
        values inside the tracer."""
        return [], [x for x in tracer.inner_values() if isinstance(x, Tracer)]

    def describe(self) -> str:
        """How error messages name this trace ("jit(f)" for a jit trace)."""
        return type(self).__name__

    def __repr__(self):
        return f"{type(self).__name__}"


class EvalTrace(Trace):
    """The root trace: runs each primitive eagerly on its arguments' device.

    It knows neither the array class nor any backend: the array layer registers
    the first (`register_value_type`), and each primitive runs through the first
    operand's device, `device._execute(prim, buffers, params, device)`, or the
    primitive's numpy impl when the device says that is its eager implementation
    (the CPU and reference backends).  Every call is validated through
    `abstract_eval` first, memoised per signature, so eager and staged errors are
    identical.
    """

    def __init__(self):
        super().__init__(None)

    def process_primitive(self, prim, args, params):
        array_type = _VALUE_TYPE
        vals, avals = [], []
        device = None
        for x in args:
            if type(x) is array_type:
                vals.append(x._value)
                a = x._aval
                avals.append(a if a is not None else x.aval)
                if device is None:
                    device = x._device
                elif x._device is not device and device.host_buffers and not x._device.host_buffers:
                    # an operand on a GPU wins over host ones: the GPU backend copies
                    # host operands over, the host's impls cannot read device memory
                    device = x._device
            elif isinstance(x, Tracer):
                raise leaked_tracer_error(x, prim)
            else:
                a = get_aval(x)
                t = type(x)
                if t is float or t is int or t is bool or t is complex:
                    # a Python scalar is an array of its (weak) dtype to the impls too:
                    # np.broadcast_to(2.0, ...) would be float64 where the aval says float32
                    x = python_scalar_value(x, a.dtype, prim.name)
                vals.append(x)
                avals.append(a)
        # the memoised abstract evaluation (see _eager_abstract_eval), inlined: this is
        # the hot path of every eager operation
        try:
            key = (prim, tuple(avals), tuple(params.items())) if params else (prim, tuple(avals))
            out_aval = _EAGER_AVALS.get(key)
        except TypeError:
            key = out_aval = None
        if out_aval is None:
            out_aval = _eager_abstract_eval(prim, avals, params)
        if device is None:
            device = _DEFAULT_DEVICE()
        execute = device._execute
        try:
            if execute is None:   # the backend's eager execution is the impl itself
                out = prim.impl(*vals, **params)
            else:
                out = execute(prim, vals, params, device)
        except (ValueError, IndexError) as e:
            raise type(e)(f"{prim.name}: {e}{_where()}") from None
        wrap = _WRAP
        if _debug_nans:  # ember.debug.nans (config "debug_nans"): one global read when off
            _nan_hook(prim, vals, avals, out, out_aval, params)
        if prim.multiple_results:
            return [wrap(_checked(prim, o, a), device, a) for o, a in zip(out, out_aval)]
        if type(out) is not np.ndarray or out.shape != out_aval.shape or out.dtype != out_aval.dtype:
            out = _checked(prim, out, out_aval)
        return wrap(out, device, out_aval)


def int_overflow_error(bad, dtype, op: str, hint: str) -> OverflowError:
    """The error for an integer that does not fit `dtype`: the value, the range, a hint
    and the user's source line (one wording for constructors and primitives)."""
    info = np.iinfo(dtype)
    if np.dtype(dtype).itemsize == 8:
        hint = "use uint64" if 0 <= bad < 2 ** 64 else \
            "it needs more than 64 bits; use float64 (or split the value)"
    src = user_source()
    what = "Python int" if isinstance(bad, int) else "value"
    return OverflowError(f"{op}: {what} {bad!r} is out of range for dtype {dtype} "
                         f"[{info.min}, {info.max}]; {hint}" + (f"\n  at {src}" if src else ""))


def python_scalar_value(x, dtype, op):
    """A Python scalar as a rank-0 numpy array of `dtype` (its aval's), an int out of
    the dtype's range a clear OverflowError naming `op`.

    Example:
        >>> python_scalar_value(2.0, np.dtype("float32"), "add").dtype
        dtype('float32')
    """
    try:
        return np.asarray(x, dtype)
    except OverflowError:
        raise int_overflow_error(x, dtype, op, "pass an array of a wider dtype, e.g. "
                                          "ember.numpy.asarray(x, dtype='int64')") from None


def _checked(prim, out, aval):
    """The impl's result must be what abstract_eval promised: a mismatch is an
    ember bug, reported as such rather than returned as a silently wrong value.
    Only shape and dtype are read, so any backend's buffers pass through."""
    if not hasattr(out, "shape"):  # an impl that returned a Python scalar
        out = np.asarray(out)
    if out.shape != aval.shape or (out.dtype != aval.dtype and aval.dtype != _dt.float0):
        raise AssertionError(f"internal error in ember: the implementation of {prim.name} returned "
                             f"{out.dtype}{list(out.shape)} but its abstract evaluation says {aval.str_user()}")
    return out


# Eager ops validate through abstract_eval exactly as staged ones do (so a bad
# call fails the same way in both modes and result avals keep weak types); the
# result is memoised per (primitive, input avals, params), so the steady-state
# cost is one dict lookup.
_EAGER_AVALS: dict = {}


def _eager_abstract_eval(prim, avals, params):
    try:
        key = (prim, tuple(avals), tuple(params.items())) if params else (prim, tuple(avals))
        hit = _EAGER_AVALS.get(key)
    except TypeError:  # unhashable params: validate without memoising
        key, hit = None, None
    if hit is None:
        if prim.abstract_eval is None or prim.impl is None:
            raise NotImplementedError(f"primitive {prim.name} cannot run eagerly: it has no "
                                      f"abstract evaluation or reference implementation")
        hit = prim.abstract_eval(*avals, **params)
        if key is not None:
            if len(_EAGER_AVALS) > 100_000:
                _EAGER_AVALS.clear()
            _EAGER_AVALS[key] = hit
    return hit


# --- the eager hook, filled in from above ---------------------------------------------
# fx defines what an eager value is only through this registration, so the core
# imports neither the array class nor a backend (the arrows point one way).

def _unregistered(*_args):
    raise EmberError("ember.fx.core: no concrete array type is registered "
                     "(import ember, which registers ember.Array)")

# set by ember.debug.nans.enable (config "debug_nans"): the eager NaN/Inf check
_debug_nans = False
_nan_hook = None


_VALUE_TYPE: type | None = None
_WRAP: Callable = _unregistered
_DEFAULT_DEVICE: Callable = _unregistered


def register_value_type(array_type: type, wrap: Callable, default_device: Callable):
    """Tell the eager trace what a concrete value is: `array_type` instances carry
    `_value` (a backend buffer), `_aval` (an AbstractArray or None, then `aval`
    computes it) and `_device` (whose `_execute(prim, buffers, params, device)` runs
    a primitive, or is None when the primitive's impl is the device's eager
    implementation); `wrap(buffer, device, aval)` makes a result one of them;
    `default_device()` is where an operation on no such value runs.  `ember.array`
    registers `Array`.

    Example:
        >>> import ember
        >>> _VALUE_TYPE is ember.Array
        True
    """
    global _VALUE_TYPE, _WRAP, _DEFAULT_DEVICE
    _VALUE_TYPE, _WRAP, _DEFAULT_DEVICE = array_type, wrap, default_device


def leaked_tracer_error(t: "Tracer", prim=None) -> UnexpectedTracerError:
    trace = t._trace
    what = f" (passed to {prim.name})" if prim is not None else ""
    origin = f" entered at {trace.origin}" if trace.origin else ""
    state = "has finished" if not trace.valid else "is not active here"
    return UnexpectedTracerError(
        f"Encountered a tracer of type {t.aval.str_user()} from a {type(trace).__name__}{origin} that "
        f"{state}{what}. A value computed inside a transformed function escaped it "
        f"(e.g. stored in a global or on self). Return it as an output instead."
        f"{_where()}")


_eval_trace = EvalTrace()
_trace_var: contextvars.ContextVar[Trace] = contextvars.ContextVar("ember_trace", default=_eval_trace)
current_trace = _trace_var.get


@contextlib.contextmanager
def set_current_trace(trace: Trace):
    token = _trace_var.set(trace)
    try:
        yield trace
    finally:
        _trace_var.reset(token)


@contextlib.contextmanager
def new_trace(trace: Trace):
    """Make `trace` current for a transform's body, and invalidate it afterwards."""
    trace.origin = user_source()
    token = _trace_var.set(trace)
    try:
        yield trace
    finally:
        _trace_var.reset(token)
        trace.invalidate()


def eval_trace() -> EvalTrace:
    return _eval_trace


def bind(prim: Primitive, *args, **params):
    """Apply a primitive under the current trace."""
    return _trace_var.get().process_primitive(prim, args, params)


def argument_sources(x) -> list[str]:
    """The arguments of the traced (jitted) functions that the value `x` depends on,
    e.g. ["`threshold` of jit(f)"], following tracers through every enclosing
    transform.  Iterative: a worklist of tracers, each trace walking its own graph.

    Example:
        >>> import ember
        >>> seen = []
        >>> _ = ember.jit(lambda a, b: seen.append(argument_sources(b * 2.0)) or a)(1.0, 2.0)
        >>> seen[0]
        ['`b` of jit(<lambda>)']
    """
    out, seen = [], set()
    todo = [x] if isinstance(x, Tracer) else []
    while todo:
        t = todo.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        names, more = t._trace.sources_of(t)
        out.extend(n for n in names if n not in out)
        todo.extend(more)
    return out


def argument_note(x) -> str:
    """' because it depends on the value of the argument `a` of jit(f)', or ''."""
    src = argument_sources(x)
    if not src:
        return ""
    return (" because it depends on the value of the argument" + ("s " if len(src) > 1 else " ")
            + ", ".join(src))


CONCRETIZATION_HINT = ("Use ember.cond / ember.lax.while_loop for value-dependent control flow "
                       "(ember.numpy.where for elementwise choices), or mark the argument static "
                       "with static_argnums / static_argnames.")


def check_foreign(trace: Trace, x: "Tracer", prim=None):
    """A tracer that is not `trace`'s own must belong to an active ancestor."""
    t = trace.parent
    owner = x._trace
    while t is not None:
        if t is owner:
            return
        t = t.parent
    raise leaked_tracer_error(x, prim)


# --- tracers -------------------------------------------------------------------

class Tracer:
    """A value flowing through a trace.  Subclasses define `aval`.

    Its Python operators and array methods (`+`, `x[i]`, `.sum()`) are the same as
    an Array's; the numpy layer installs them (`ember.ops_mixin.install`), so the
    core never imports `ember.numpy`."""
    __slots__ = ("_trace",)
    __array_priority__ = 1000

    @property
    def aval(self) -> AbstractArray:  # pragma: no cover
        raise NotImplementedError

    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self):
        return len(self.aval.shape)

    @property
    def size(self):
        return self.aval.size

    @property
    def weak_type(self):
        return self.aval.weak_type

    def concrete_value(self):
        """The concrete value behind this tracer, or None when it is abstract."""
        return None

    def inner_values(self) -> tuple:
        """The values this tracer wraps (a parent trace's values), for provenance."""
        return ()

    def _concretize(self, what: str):
        v = self.concrete_value()
        if v is not None:
            return v
        raise ConcretizationError(
            f"{what} of an abstract value {self.aval.str_user()} under {self._trace.describe()}: "
            f"the value is not known while tracing{argument_note(self)}. "
            f"{CONCRETIZATION_HINT}{_where()}")

    def __bool__(self):
        return bool(self._concretize("bool()"))

    def __int__(self):
        return int(self._concretize("int()"))

    def __float__(self):
        return float(self._concretize("float()"))

    def __complex__(self):
        return complex(self._concretize("complex()"))

    def __index__(self):
        return int(self._concretize("__index__"))

    def __array__(self, dtype=None, copy=None):
        v = self._concretize("Conversion to numpy")
        return np.asarray(v, dtype=dtype)

    def item(self):
        return self._concretize("item()").item()

    def tolist(self):
        return np.asarray(self._concretize("tolist()")).tolist()

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of a 0-d array")
        return self.aval.shape[0]

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.aval.shape[0]))

    def __hash__(self):
        raise TypeError(f"unhashable type: {type(self).__name__} (arrays are not hashable; "
                        f"pass it as a non-static argument)")

    def __repr__(self):
        return f"{type(self).__name__}<{self.aval}>"
