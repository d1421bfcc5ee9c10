"""`jit`: stage a function once per input signature and run it compiled.

A jitted call is the `jit_call` primitive whose param is the staged graph, so
every other transform sees it: `grad(jit(f))` differentiates the graph into a
new `jit_call`, `vmap(jit(f))` batches it, and both stay compiled.

Example:
    >>> import ember, ember.numpy as enp
    >>> f = ember.jit(lambda x: enp.sin(x) * 2.0)
    >>> round(float(f(0.5)), 4)
    0.9589
"""
from __future__ import annotations

import functools
import inspect
import sys

import numpy as np

from .. import config
from .. import profiler as _prof
from .. import array as _array
from .. import dtypes as _dt
from .._host import from_host
from ..array import Array, wrap_buffer
from ..backends.base import get_backend
from ..fx.drivers import call_driver, register_driver
from ..fx.core import (AbstractArray, Primitive, Tracer, Zero, current_trace, eval_trace, get_aval,
                       is_undefined, tangent_aval, user_source)
from ..fx import core as _core
from ..fx import trace_context
from ..fx.ir import ClosedGraph, Graph
from ..fx.passes import optimize
from ..fx.prims.rules import instantiate, moveaxis
from ..fx.staging import consts_to_inputs, trace_flat
from ..tree import tree_flatten, tree_unflatten
from . import captured_state
from .batching import batch_graph
from .donation import donate, normalize as normalize_donation
from .gc_pause import collector_paused
from .jvp import jvp_graph
from .partial_eval import partial_eval_graph
from .transpose import backward_pass
from .util import argument_names, as_ember, as_ember_args, flatten_outputs, static_key

jit_call_p = Primitive("jit_call", multiple_results=True)
jit_call_p.kind = "control"
_EVAL = eval_trace()


def _jit_abstract(*avals, graph, name, backend):
    return list(graph.out_avals)


def executable_for(graph: ClosedGraph, backend: str, name: str = "fun"):
    """Compile (once per graph and backend) and return the executable."""
    exe = graph._cache.get(backend)
    if exe is None:
        b = get_backend(backend)
        t0 = _prof._now_us() if _prof.active else None
        with collector_paused():
            exe = graph._cache[backend] = b.compile(graph, b.devices()[0])
        if t0 is not None:  # ember.profiler: the compile event
            _prof.note_compile(name, backend, t0, _prof._now_us() - t0, len(graph.equations))
    if _core._debug_nans:  # ember.debug.nans: locate the equation behind a NaN/Inf result
        from ..debug.nans import checked
        exe = checked(exe, graph)
    if _prof.active:  # ember.profiler: time the call and its steps
        exe = _prof.profiled(exe, graph, name, backend)
    return exe


def _jit_impl(*vals, graph, name, backend):
    return executable_for(graph, backend, name)(*vals)


def bind_graph(closed: ClosedGraph, args, name, backend):
    """Bind a jit_call of `closed`, passing its consts as leading operands."""
    g, consts = consts_to_inputs(closed)
    return jit_call_p.bind(*consts, *args, graph=g, name=name, backend=backend)


def _jit_jvp(primals, tangents, *, graph, name, backend):
    nonzeros = [type(t) is not Zero for t in tangents]
    jg, out_nz = jvp_graph(graph, nonzeros)
    outs = bind_graph(jg, list(primals) + [t for t in tangents if type(t) is not Zero],
                      f"jvp({name})", backend)
    n = len(graph.out_avals)
    p_out, t_it = outs[:n], iter(outs[n:])
    t_out = [next(t_it) if nz else Zero(tangent_aval(a)) for a, nz in zip(graph.out_avals, out_nz)]
    return p_out, t_out


def _jit_batch(axis_size, args, dims, *, graph, name, backend):
    vals = [x if d is None else moveaxis(x, d, 0) for x, d in zip(args, dims)]
    bg, out_b = batch_graph(graph, axis_size, [d is not None for d in dims])
    outs = bind_graph(bg, vals, f"vmap({name})", backend)
    return outs, [0 if b else None for b in out_b]


def _jit_partial_eval(trace, args, params):
    graph, name, backend = params["graph"], params["name"], params["backend"]
    unknowns = [trace.is_unknown(x) for x in args]
    kg, ug, out_unknown, nres = partial_eval_graph(graph, unknowns)
    known_args = [x for x, u in zip(args, unknowns) if not u]
    kouts = trace.forward_known(jit_call_p, [*consts_to_inputs(kg)[1], *known_args],
                                dict(graph=consts_to_inputs(kg)[0], name=name, backend=backend))
    n_known = len(kouts) - nres
    known_outs, residuals = kouts[:n_known], kouts[n_known:]
    unknown_args = [x for x, u in zip(args, unknowns) if u]
    atoms = [trace.to_atom(x) for x in list(residuals) + unknown_args]
    uouts = trace.stage(jit_call_p, atoms, dict(graph=ug, name=name, backend=backend))
    k_it, u_it = iter(known_outs), iter(uouts)
    return [next(u_it) if u else next(k_it) for u in out_unknown]


def _jit_transpose(cts, *args, graph, name, backend):
    lin = [is_undefined(a) for a in args]
    g = graph.graph
    known_vars = [v for v, m in zip(g.inputs, lin) if not m]
    lin_vars = [v for v, m in zip(g.inputs, lin) if m]
    lg = Graph(known_vars, lin_vars, g.equations, g.outputs)
    known_vals = [a for a, m in zip(args, lin) if not m]
    ct_nz = [type(c) is not Zero for c in cts]
    nk = len(known_vals)

    def fun(*xs):
        it = iter(xs[nk:])
        full = [next(it) if nz else c for c, nz in zip(cts, ct_nz)]
        res = backward_pass(lg, list(xs[:nk]), full)
        return [instantiate(r) for r in res]

    in_avals = [get_aval(a) for a in known_vals] + [get_aval(c) for c, nz in zip(cts, ct_nz) if nz]
    tg = trace_flat(fun, in_avals)
    outs = bind_graph(tg, known_vals + [c for c, nz in zip(cts, ct_nz) if nz],
                      f"transpose({name})", backend)
    it = iter(outs)
    return [next(it) if m else None for m in lin]


jit_call_p.abstract_eval = _jit_abstract
jit_call_p.impl = _jit_impl
# compiled programs run a nested jit_call natively (its impl compiles it for its own backend)
register_driver(jit_call_p, call_driver("graph"), reference_impl=False)
jit_call_p.jvp = _jit_jvp
jit_call_p.batch = _jit_batch
jit_call_p.partial_eval = _jit_partial_eval
jit_call_p.transpose = _jit_transpose


# --- the user-facing wrapper ---------------------------------------------------------

def _to_operand(x):
    """Flattened jit arguments: arrays pass through; Python scalars become weakly
    typed rank-0 numpy values; numpy arrays keep their dtype."""
    if isinstance(x, (Array, Tracer)):
        return x, x.aval
    t = type(x)
    if t is bool or t is int or t is float or t is complex:
        a = get_aval(x)
        return np.asarray(x, dtype=a.dtype), a
    if isinstance(x, (np.ndarray, np.generic)):
        y = from_host(x)
        return y, y.aval
    y = as_ember(x)
    return y, get_aval(y)


_NUMPY_AVALS: dict = {}


def _borrowable_aval(x):
    """The aval of a numpy argument that `_borrowed_operand` would read in place, or
    None; memoised per (shape, dtype), the fast path's cost of a numpy argument."""
    key = (x.shape, x.dtype)
    av = _NUMPY_AVALS.get(key)
    if av is not None:
        fl = x.flags
        return av if fl.c_contiguous and fl.aligned else None
    o = _borrowed_operand(x)
    if o is None:
        return None
    if len(_NUMPY_AVALS) >= 1024:
        _NUMPY_AVALS.clear()
    _NUMPY_AVALS[key] = o.aval
    return o.aval


def _call_device(x):
    """The device a positional argument of the fast path lives on (numpy: the default one)."""
    t = type(x)
    if t is Array:
        return x._device
    if t is np.ndarray:
        d = _array.default_device()
        return d if d.host_buffers else None
    return None


def _borrowed_operand(x):
    """A numpy argument of an eager call read in place: a read-only view of its memory
    (no copy: `jit(f)(big_numpy_array)` does not double the memory), or None where it
    must be copied (not C-contiguous, misaligned, foreign byte order, a dtype ember
    does not have).  Only for the duration of one call at the root trace: under a
    transform the Array could outlive the call (a staged constant, a residual) and see
    the caller's later writes; compiled programs never write their inputs, and outputs
    that alias one are copied (`_unaliased`)."""
    if type(x) is not np.ndarray:
        return None
    fl = x.flags
    if not (fl.c_contiguous and fl.aligned) or not x.dtype.isnative:
        return None
    try:
        d = _dt.canonicalize(x.dtype)
    except TypeError:
        return None
    v = x.view()
    v.setflags(False)
    return wrap_buffer(v, None, AbstractArray(x.shape, d))


def _unaliased(bufs, borrowed):
    """`bufs` with every buffer that may share memory with a borrowed numpy argument
    copied: an output must not change when the caller later writes its array (the
    identity `jit(lambda x: x)`, a reshape or a slice of an input return its memory)."""
    out = []
    for b in bufs:
        if type(b) is np.ndarray and any(np.may_share_memory(b, a) for a in borrowed):
            b = b.copy()
            b.setflags(False)
        out.append(b)
    return out


def _show_static(static):
    # with types: the log must explain why 2 and 2.0 compiled twice
    return "(" + ", ".join(f"{k}={v!r}:{type(v).__name__}" for k, v in static) + ")"


def _infer_statics(fun, nums: tuple, names: tuple) -> tuple[tuple, tuple, frozenset]:
    """`static_argnums`/`static_argnames` completed with what the signature of
    `fun` maps them to (a positional-or-keyword parameter named in one is static
    however it is passed), and the numbers that have a name."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):   # builtins and some callables have none
        return nums, names, frozenset()
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    index = {p.name: i for i, p in enumerate(positional)
             if p.kind is p.POSITIONAL_OR_KEYWORD}
    nums = nums + tuple(index[k] for k in names if k in index and index[k] not in nums)
    names = names + tuple(k for k, i in index.items() if i in nums and k not in names)
    return nums, names, frozenset(i for k, i in index.items() if k in names)


class _Entry:
    __slots__ = ("graph", "consts", "out_tree", "cacheable", "const_buffers", "out_avals",
                 "guards", "warned")


class JitFunction:
    """A jitted function: call it like the original.  See `jit`."""

    def __init__(self, fun, static_argnums=(), static_argnames=(), donate_argnums=(),
                 backend=None):
        if isinstance(static_argnums, int):
            static_argnums = (static_argnums,)
        if isinstance(static_argnames, str):
            static_argnames = (static_argnames,)
        self.fun = fun
        # as in JAX, each of static_argnums / static_argnames implies the other
        # through the signature, so f(x, 2) and f(x, s=2) are both static
        self.static_argnums, self.static_argnames, self._named_nums = _infer_statics(
            fun, tuple(static_argnums), tuple(static_argnames))
        self.donate_argnums = normalize_donation(donate_argnums, self.static_argnums, fun)
        # None: run on the backend the arguments live on (see _backend_of)
        self.backend = backend
        self._cache: dict = {}
        # positional Array arguments only: avals -> (executable, entry, single output)
        self._fast: dict = {}
        self._last_fast: tuple = ([], None)
        self._fast_epoch = _dt.default_epoch   # the default float the fast entries were traced under
        self._last_keys: dict = {}
        self.compile_count = 0
        functools.update_wrapper(self, fun, updated=())

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def _operands(self, leaves, in_tree, n, nums, borrowed=None):
        """(operands, avals) of the flattened arguments; with a `borrowed` list (an eager
        call), numpy arrays that can be read in place are, and are appended to it."""
        ops, avals = [], []
        try:
            for x in leaves:
                if borrowed is not None and type(x) is np.ndarray:
                    o = _borrowed_operand(x)
                    if o is not None:
                        borrowed.append(x)
                        ops.append(o)
                        avals.append(o.aval)
                        continue
                o, a = _to_operand(x)
                ops.append(o)
                avals.append(a)
        except TypeError:
            # name the offending argument (as_ember_args raises at it)
            as_ember_args(self._desc(), self.fun, leaves, in_tree,
                          [i for i in range(n) if i not in nums], with_kwargs=True)
            raise
        return ops, avals

    def _desc(self) -> str:
        return f"jit({getattr(self.fun, '__name__', 'fun')})"

    def _cache_size(self) -> int:
        return len(self._cache)

    def _signature(self, args, kwargs):
        n = len(args)
        nums = set()
        for i in self.static_argnums:
            if i >= n and i in self._named_nums:
                continue   # its parameter is passed by name (or left to its default)
            if not -n <= i < n:
                raise ValueError(f"jit: static_argnums={i} is out of range for a call with {n} "
                                 f"positional arguments")
            nums.add(i % n)
        static = []
        dyn_args = []
        for i, a in enumerate(args):
            if i in nums:
                try:
                    hash(a)
                except TypeError:
                    raise TypeError(f"jit: static argument {i} of type {type(a).__name__} is not "
                                    f"hashable; static arguments must be hashable (use a tuple "
                                    f"instead of a list, or pass arrays as non-static arguments)"
                                    + (f"\n  at {user_source()}" if user_source() else "")) from None
                static.append((i, a))
            else:
                dyn_args.append(a)
        dyn_kwargs = {}
        for k, v in kwargs.items():
            if k in self.static_argnames:
                try:
                    hash(v)
                except TypeError:
                    raise TypeError(f"jit: static argument {k!r} of type {type(v).__name__} is "
                                    f"not hashable") from None
                static.append((k, v))
            else:
                dyn_kwargs[k] = v
        return tuple(static), dyn_args, dyn_kwargs, nums

    @staticmethod
    def _static_cache_key(static):
        # (type, value) per static, as JAX does: f(x, 2) and f(x, 2.0) are different programs
        return tuple((k, static_key(v)) for k, v in static)

    def __call__(self, *args, **kwargs):
        if _JIT_DISABLED[-1]:
            return self.fun(*args, **kwargs)
        if (self._fast and not kwargs and current_trace() is _EVAL and not trace_context.active()
                and self._fast_epoch == _dt.default_epoch):
            # Fastest path: a repeated call with Arrays of one device (or numpy arrays
            # read in place, for a host default device) as its only positional
            # arguments needs no pytree flattening, signature or key building.
            avals = []
            dev = _call_device(args[0]) if args else None
            host = None
            for a in args:
                t = type(a)
                if t is Array:
                    if a._device is not dev:
                        break
                    av = a._aval
                    avals.append(av if av is not None else a.aval)
                elif t is np.ndarray:
                    av = _borrowable_aval(a)
                    # read in place only on the host device that numpy data is put on
                    if av is None or dev is not _array.default_device() or not dev.host_buffers:
                        break
                    avals.append(av)
                    host = [a] if host is None else host + [a]
                else:
                    break
            else:
                last = self._last_fast
                # the avals of the last call (list equality tries identity first): no hashing
                if avals == last[0]:
                    hit = last[1]
                else:
                    hit = self._fast.get(tuple(avals))
                    if hit is not None:
                        self._last_fast = (avals, hit)
                if hit is not None and hit[3] is dev:  # compiled for this device's backend
                    exe, entry, single, _ = hit
                    if host is None:
                        outs = exe(*entry.const_buffers, *[a._value for a in args])
                    else:   # compiled programs never write their inputs; outputs may alias them
                        outs = _unaliased(exe(*entry.const_buffers, *[a._value if type(a) is Array else a
                                                                      for a in args]), host)
                    if single:
                        return wrap_buffer(outs[0], dev, entry.out_avals[0])
                    return tree_unflatten(entry.out_tree, [wrap_buffer(b, dev, a)
                                                           for b, a in zip(outs, entry.out_avals)])
        static, dyn_args, dyn_kwargs, nums = self._signature(args, kwargs)
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        # numpy arguments of an eager call are read in place, not copied (_borrowed_operand)
        borrowed = [] if current_trace() is _EVAL else None
        ops, avals = self._operands(leaves, in_tree, len(args), nums, borrowed)
        backend = self.backend or self._backend_of(ops, in_tree, len(args), nums)
        # what the function traces to also depends on the default float (constructors and
        # Python floats read it) and on trace-time settings such as amp.autocast
        key = (in_tree, tuple(avals), self._static_cache_key(static), backend,
               (_dt.default_float, trace_context.key()))
        entry = self._cache.get(key)
        if entry is None:
            t0 = _prof._now_us() if _prof.active else None
            with collector_paused():
                entry = self._trace(args, static, nums, in_tree, avals)
            if entry.cacheable:
                self._cache[key] = entry
            self._log_compile(key, in_tree, avals, static, t0)
        if entry.guards:  # captured module state: warn if it changed since tracing
            captured_state.check(entry, getattr(self.fun, "__qualname__", "fun"))
        if current_trace() is _EVAL and entry.cacheable and all(type(o) is Array for o in ops):
            # Fast path for concrete arrays of the executable's backend outside any
            # transform: exactly what the eval trace would do for jit_call, without the
            # generic dispatch.
            dev = ops[0]._device if ops else None
            if dev is None or (dev.backend.name == backend and all(o._device is dev for o in ops)):
                exe = executable_for(entry.graph, backend, getattr(self.fun, "__name__", "fun"))
                if (not kwargs and not self.static_argnums and not self.static_argnames and not entry.guards
                        and not self.donate_argnums
                        and not key[4][1] and len(ops) == len(args)
                        and sum(type(a) is Array for a in args) + len(borrowed) == len(args)):
                    if self._fast_epoch != _dt.default_epoch:
                        self._fast.clear()
                        self._last_fast = ([], None)
                        self._fast_epoch = _dt.default_epoch
                    self._fast[tuple(avals)] = (exe, entry, entry.out_tree.is_leaf(), dev)
                outs = exe(*entry.const_buffers, *[o._value for o in ops])
                if borrowed:
                    outs = _unaliased(outs, borrowed)
                if self.donate_argnums:  # transforms/donation.py: delete donated arrays, reuse buffers
                    donate(args, self.donate_argnums, getattr(exe, "exe", exe), getattr(self.fun, "__name__", "fun"))
                return tree_unflatten(entry.out_tree, [wrap_buffer(b, dev, a)
                                                       for b, a in zip(outs, entry.out_avals)])
        outs = jit_call_p.bind(*entry.consts, *ops, graph=entry.graph,
                               name=getattr(self.fun, "__name__", "fun"), backend=backend)
        if borrowed:   # fresh Arrays of this call: an aliasing one gets its own copy
            for o, b in zip(outs, _unaliased([o._value for o in outs], borrowed)):
                if b is not o._value:
                    o._value = b
        if self.donate_argnums and current_trace() is _EVAL:  # transforms/donation.py
            donate(args, self.donate_argnums, entry.graph._cache.get(backend),
                   getattr(self.fun, "__name__", "fun"))
        return tree_unflatten(entry.out_tree, outs)

    def _backend_of(self, ops, in_tree, n, nums) -> str:
        """The backend the arguments live on: that of every concrete Array among them
        (traced values and Python data follow, and so do host arrays when the others
        are on one GPU backend; none at all: the default device's backend)."""
        found = None
        found_on_host = True
        for o in ops:
            if type(o) is Array:
                b = o._device.backend.name
                on_host = o._device.host_buffers
                if found is None:
                    found, found_on_host = b, on_host
                elif b != found and on_host and not found_on_host:
                    continue   # host arrays follow a GPU argument (copied over at the call)
                elif b != found and found_on_host and not on_host:
                    found, found_on_host = b, on_host
                elif b != found:
                    names = argument_names(self.fun, in_tree, [i for i in range(n) if i not in nums],
                                           with_kwargs=True)
                    where = ", ".join(f"`{nm}` on {o._device}" for nm, o in zip(names, ops)
                                      if type(o) is Array)
                    raise ValueError(
                        f"{self._desc()}: the arguments live on different backends ({where}); "
                        f"move them to one device first with ember.device_put(x, device), or "
                        f"pass jit(..., backend=...) to choose where it runs"
                        + (f"\n  at {user_source()}" if user_source() else ""))
        if found is None:   # no array argument: where constructors put arrays (a GPU if present)
            from ..array import default_device
            return default_device().backend.name
        return found

    def _trace(self, args, static, nums, in_tree, avals) -> _Entry:
        n = len(args)
        statics = dict(static)
        box = []

        def flat(*tracers):
            dyn, kw = tree_unflatten(in_tree, tracers)
            it = iter(dyn)
            full = [statics[i] if i in nums else next(it) for i in range(n)]
            kw = dict(kw)
            for k in self.static_argnames:
                if k in statics:
                    kw[k] = statics[k]
            out = self.fun(*full, **kw)
            o_leaves, o_tree = flatten_outputs(self._desc(), self.fun, out)
            box.append(o_tree)
            return o_leaves

        names = argument_names(self.fun, in_tree, [i for i in range(n) if i not in nums],
                               with_kwargs=True)
        with captured_state.recording() as guards:
            closed = trace_flat(flat, avals, arg_names=names, fun_desc=self._desc())
        closed = optimize(closed)
        g, consts = consts_to_inputs(closed)
        e = _Entry()
        e.graph, e.consts, e.out_tree = g, consts, box[0]
        e.cacheable = not any(isinstance(c, Tracer) for c in consts)
        e.const_buffers = None if not e.cacheable else [
            getattr(c, "_value", None) if getattr(c, "_value", None) is not None else np.asarray(c)
            for c in consts]
        e.out_avals = list(g.out_avals)
        e.guards, e.warned = tuple(guards), False
        self.compile_count += 1
        return e

    def _log_compile(self, key, in_tree, avals, static, t0=None):
        name = getattr(self.fun, "__qualname__", "fun")
        if not config.log_compiles() and t0 is None:
            # remembered even when nothing is logged: a later log or profile names the change
            self._last_keys[name] = (key, static)
            return
        prev = self._last_keys.get(name)
        if prev is None:
            reason = "first call"
        else:
            (p_tree, p_avals, p_skey, _, (p_float, p_ctx)), p_static = prev
            diffs = []
            if p_tree != in_tree:
                diffs.append(f"argument structure changed: {p_tree} -> {in_tree}")
            else:
                for i, (a, b) in enumerate(zip(p_avals, avals)):
                    if a != b:
                        diffs.append(f"argument leaf {i}: {a.str_short()}{' weak' if a.weak_type else ''}"
                                     f" -> {b.str_short()}{' weak' if b.weak_type else ''}")
            if p_skey != key[2]:
                diffs.append(f"static arguments changed: {_show_static(p_static)} -> "
                             f"{_show_static(static)}")
            if p_float != key[4][0]:
                diffs.append(f"default float changed: {p_float} -> {key[4][0]}")
            if p_ctx != key[4][1]:
                diffs.append(f"trace settings changed: {dict(p_ctx)} -> {dict(key[4][1])}")
            reason = "; ".join(diffs) or "cache entry not reusable (closes over traced values)"
        self._last_keys[name] = (key, static)
        if t0 is not None:  # ember.profiler: the trace event and its cause
            _prof.note_cause(getattr(self.fun, "__name__", "fun"), reason, t0, _prof._now_us() - t0)
        if not config.log_compiles():
            return
        print(f"[ember] compiling {name} for ({', '.join(a.str_short() for a in avals)}): {reason}",
              file=sys.stderr)

    def lower(self, *args, **kwargs):
        """The program a call with these arguments runs, as a `Lowered`
        (transforms/lowered.py): `.as_text()` / `("kernels")` / `("llvm")` / `("asm")`,
        `.cost_analysis()`, `.compile()`; it reads like the optimised ClosedGraph
        (`.graph`, `.consts`, `.equations`, `str()`).

        Example:
            >>> import ember
            >>> [e.prim.name for e in ember.jit(lambda x: x * 2.0).lower(1.0).equations]
            ['mul']
        """
        from .lowered import Lowered
        static, dyn_args, dyn_kwargs, nums = self._signature(args, kwargs)
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        avals = self._operands(leaves, in_tree, len(args), nums)[1]
        return Lowered(self, self._trace(args, static, nums, in_tree, avals), in_tree, avals,
                       self._static_cache_key(static))


def jit(fun=None, *, static_argnums=(), static_argnames=(), donate_argnums=(), backend=None,
        keep_unused=False, inline=False):
    """Compile `fun`: traced once per input signature (pytree structure, shapes,
    dtypes, weak types, static arguments by type and value), then run as one program.

    `static_argnums` / `static_argnames` are passed to `fun` as Python values
    (they must be hashable; a new value recompiles, and so does a value of a new
    type: `2`, `2.0` and `True` are three programs, and so are `0.0` and `-0.0`).  The
    ember Arrays in `donate_argnums` positions are deleted by a concrete call (using
    one again raises `DonatedArrayError`) and their buffers reused for outputs
    (transforms/donation.py).  It runs on the backend its arguments live on (arrays
    on `reference:cpu:0` are interpreted, arrays on `cpu:0` compiled to native code;
    arguments on two backends are an error); `backend="reference"` (or any backend's
    name) overrides that, e.g. to debug with the numpy interpreter.  Set EMBER_LOG_COMPILES=1 to see
    every compile and why it happened.  `keep_unused` and `inline` are accepted for
    JAX compatibility and change nothing (values never depend on them).  An object whose class defines
    `__ember_jit__` compiles through it: `jit(model)` for an `nn.Module` reads the
    module's current parameters on every call, and a function that called a module
    while traced warns (`StaleCaptureWarning`) once that module's state changes.

    Example:
        >>> import ember.numpy as enp
        >>> @jit
        ... def f(x):
        ...     return enp.tanh(x) + 1.0
        >>> f(enp.zeros(2)).tolist()
        [1.0, 1.0]
    """
    del keep_unused, inline
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames,
                             donate_argnums=donate_argnums, backend=backend)
    own = getattr(type(fun), "__ember_jit__", None)  # e.g. nn.Module: state as inputs
    if own is not None:
        return own(fun, static_argnums=static_argnums, static_argnames=static_argnames, backend=backend)
    return JitFunction(fun, static_argnums, static_argnames, donate_argnums, backend)


# --- Taylor rule (ember.jet): the jet of the inner graph, staying one jit_call ------------

def _jit_taylor(primals, series, *, graph, name, backend):
    from .jet import jet_graph, nonzero_series, series_operands, split_series
    K = len(series[0])
    nz = nonzero_series(series)
    jg, out_nz = jet_graph(graph, nz, K)
    outs = bind_graph(jg, list(primals) + series_operands(primals, series, nz), f"jet({name})", backend)
    n = len(graph.out_avals)
    return outs[:n], split_series(outs[n:], out_nz, None, K)


jit_call_p.taylor = _jit_taylor


_JIT_DISABLED = [False]


class disable_jit:
    """Inside `with ember.disable_jit():` jitted functions run op by op in Python, as if
    undecorated (jax.disable_jit): for print debugging and pdb inside a jitted step.
    Transforms still apply, and control flow still traces its bodies.

    Example:
        >>> import ember, numpy as np
        >>> seen = []
        >>> f = ember.jit(lambda x: seen.append(type(x).__name__) or x * 2)
        >>> with ember.disable_jit():
        ...     _ = f(np.float32(1.0))
        >>> seen
        ['float32']
    """

    def __init__(self, disable: bool = True):
        self.disable = bool(disable)

    def __enter__(self):
        _JIT_DISABLED.append(self.disable)
        return self

    def __exit__(self, *exc):
        _JIT_DISABLED.pop()
        return False
