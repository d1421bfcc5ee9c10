"""Library steps of a CUDA program: how each `LibraryStep` runs on device buffers.

Three bindings, chosen once per step at compile time (`bind_library_step`):
- a primitive with sub-graphs (cond/switch, while_loop, scan, jit_call, remat,
  custom rules): the shared driver of fx/drivers.py, with its bodies compiled
  by the CUDA `compile_graph` and the runtime as the array namespace, so
  carries and stacked outputs stay on the device (a cond's index and a while
  predicate are read back: one scalar per decision);
- a primitive of `DEVICE_LIBRARY`: a function of the runtime's numpy-like
  namespace (CuPy on the GPU; numpy in the host emulation, so the same code is
  tested without one); the reductions across processes hand the device
  buffer to the communicator (NCCL reads it in place; MPI stages it), and the
  halves of an overlapped one (`CollectiveStart`/`Wait`/`Progress`,
  kernels/overlap.py) run the neutral host bindings on device values;
- anything else: a *host round trip*, the operands copied to the host, the
  primitive's numpy impl, the results copied back.  It is correct for every
  primitive, and costs two transfers and a synchronisation; `round_trips(prog)`
  names the steps that take it, and with `EMBER_CUDA_HOST_LIBRARY=error` such a
  step is an error at compile time naming the primitive.

Example:
    >>> from ember.fx.prims.cumulative import cumsum_p
    >>> cumsum_p in DEVICE_LIBRARY
    True
"""
from __future__ import annotations

import os

import numpy as np

from ... import dtypes as _dt
from ...fx.drivers import DRIVERS, driver
from ...fx.prims import convert as _convert, cumulative as _cum, elementwise as _ew, fft as _fft_prims
from ...fx.prims import collective as _coll, linalg as _la, reduce as _reduce, sort as _sort
from ..kernels.loop_ir import CollectiveProgress, CollectiveStart, CollectiveWait
from ..kernels.runner import host_library_step
from . import library_linalg as _dev_la, library_sort as _dev_sort
from .eager import EAGER, NOT_COVERED, covered as _eager_covered, quiet
from .library_cumulative import cumulative as _cumulative

_HALF = (np.dtype(np.float16), np.dtype(_dt.bfloat16))


def _fft(xp, x, *, fft_type, fft_lengths):
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    s = tuple(fft_lengths)
    t = _fft_prims.FftType
    fn, dt = {t.FFT: ("fftn", x.dtype), t.IFFT: ("ifftn", x.dtype),
              t.RFFT: ("rfftn", _dt.complex_dtype(x.dtype)), t.IRFFT: ("irfftn", _dt.real_dtype(x.dtype))}[fft_type]
    return xp.asarray(getattr(xp.fft, fn)(x, s=s, axes=axes)).astype(dt, copy=False)


def _bitcast(xp, x, *, new_dtype):
    """The bits of `x` as `new_dtype`: a view (the impl's shapes: a wider dtype
    eats the last axis, a narrower one adds an axis)."""
    old, new = np.dtype(x.dtype).itemsize, np.dtype(new_dtype).itemsize
    shape = tuple(x.shape) + (old // new,) if old > new else tuple(x.shape[:-1]) if old < new else tuple(x.shape)
    return xp.ascontiguousarray(x).reshape(-1).view(new_dtype).reshape(shape)


def _arg_extremum(name):
    """argmax/argmin as numpy's (the impl): the first extremum, a NaN counting
    as the extremum (its first position wins); written with NaN made explicit
    so it does not depend on how the namespace's argmax treats NaN."""
    def run(xp, x, *, axis, index_dtype):
        if np.dtype(x.dtype) in _HALF:
            x = x.astype(np.float32)
        fn = getattr(xp, name)
        if np.dtype(x.dtype).kind != "f":
            return fn(x, axis=axis).astype(index_dtype)
        nan = xp.isnan(x)
        fill = -np.inf if name == "argmax" else np.inf
        plain = fn(xp.where(nan, x.dtype.type(fill), x), axis=axis)
        first_nan = xp.argmax(nan, axis=axis)
        return xp.where(nan.any(axis=axis), first_nan, plain).astype(index_dtype)
    return run


def _complex(xp, x, y):
    # component-wise (x + 1j*y would turn (0, inf) into (nan, inf)), as the impl
    x, y = xp.asarray(x), xp.asarray(y)
    out = xp.empty(xp.broadcast_shapes(x.shape, y.shape) if hasattr(xp, "broadcast_shapes")
                   else np.broadcast_shapes(x.shape, y.shape), _dt.complex_dtype(x.dtype))
    out.real[...] = x
    out.imag[...] = y
    return out


def _widen_to_complex(xp, x, *, new_dtype, weak_type=False):
    return xp.asarray(x).astype(new_dtype)


def _exact_complex_convert(eq) -> bool:
    """A conversion to complex that loses nothing (a real or complex operand whose
    components are no wider than the result's): numpy's astype is exact there."""
    src, dst = np.dtype(eq.inputs[0].aval.dtype), np.dtype(eq.params["new_dtype"])
    return dst.kind == "c" and src.kind in "fc" and src in (np.float32, np.float64, np.complex64, np.complex128) \
        and _dt.real_dtype(src).itemsize <= _dt.real_dtype(dst).itemsize


# primitive -> fn(xp, *device values, **params) -> value (or a list of values for
# multiple-result primitives); semantics those of the primitive's numpy impl
DEVICE_LIBRARY = {
    _cum.cumsum_p: _cumulative("sum"),
    _cum.cumprod_p: _cumulative("prod"),
    _cum.cummax_p: _cumulative("max"),
    _cum.cummin_p: _cumulative("min"),
    _cum.cumlogsumexp_p: _cumulative("logsumexp"),
    _fft_prims.fft_p: _fft,
    # (a copy: the parts are strided views, and ascontiguousarray makes 0-d arrays 1-d)
    _ew.real_p: lambda xp, x: xp.real(x).copy(),
    _ew.imag_p: lambda xp, x: xp.imag(x).copy(),
    _ew.conj_p: lambda xp, x: xp.conj(x),
    _ew.complex_p: _complex,
    _convert.convert_element_type_p: _widen_to_complex,
    _sort.sort_p: _dev_sort.sort,
    _sort.top_k_p: _dev_sort.top_k,
    _la.cholesky_p: _dev_la.cholesky,
    _la.qr_p: _dev_la.qr,
    _la.eigh_p: _dev_la.eigh,
    _la.svd_p: _dev_la.svd,
    _la.triangular_solve_p: _dev_la.triangular_solve,
    _la.lu_p: _dev_la.lu,
    _convert.bitcast_convert_type_p: _bitcast,
    _reduce.argmax_p: _arg_extremum("argmax"),
    _reduce.argmin_p: _arg_extremum("argmin"),
    # the communicator moves device buffers itself (NCCL in place, MPI through the host)
    _coll.psum_p: lambda xp, x, *, axis_name: _coll.psum_p.impl(x, axis_name=axis_name),
    _coll.pmax_p: lambda xp, x, *, axis_name: _coll.pmax_p.impl(x, axis_name=axis_name),
    _coll.pmin_p: lambda xp, x, *, axis_name: _coll.pmin_p.impl(x, axis_name=axis_name),
}
# primitive -> predicate on the equation: DEVICE_LIBRARY serves only these cases
DEVICE_WHEN = {_convert.convert_element_type_p: _exact_complex_convert, _la.lu_p: _dev_la.lu_on_device}


def _float_storage_ok(runtime, eq):
    """bfloat16 operands need a namespace that computes on them (CuPy may keep only the bits)."""
    bits = getattr(runtime, "_bf16", np.dtype(_dt.bfloat16)) != np.dtype(_dt.bfloat16)
    return not (bits and any(np.dtype(v.aval.dtype) == _dt.bfloat16 for v in list(eq.inputs) + list(eq.outputs)))


def _eager_covers(eq) -> bool:
    """An elementwise step the eager table runs on the device (complex arithmetic,
    digamma, ...): its rules decline by dtype and params only, so a call on empty
    operands of the step's dtypes (numpy standing in for the device module) tells."""
    if eq.prim.kind != "elementwise" or eq.prim not in _eager_covered():
        return False
    empty = [np.zeros((0,), np.dtype(v.aval.dtype)) for v in eq.inputs]
    try:
        with quiet(np):
            return EAGER[eq.prim](np, *empty, **eq.params) is not NOT_COVERED
    except Exception:  # noqa: BLE001 - a rule that cannot run here is not a device path
        return False


def binding_kind(eq, runtime) -> str:
    """"driver", "device", "eager" or "host": how a library step of `eq` runs on `runtime`.

    Example:
        >>> import ember, numpy as np
        >>> from ember import lax
        >>> [binding_kind(ember.make_graph(f)(np.eye(2, dtype=np.float32)).equations[0], None)
        ...  for f in (lax.digamma, lambda x: lax.cummax(x, 0), lambda x: lax.linalg.eig(x)[0])]
        ['eager', 'device', 'host']
    """
    if eq.prim in DRIVERS:
        return "driver"
    if not _float_storage_ok(runtime, eq):
        return "host"
    if eq.prim in DEVICE_LIBRARY and DEVICE_WHEN.get(eq.prim, bool)(eq):
        return "device"
    if _eager_covers(eq):
        return "eager"
    return "host"


def round_trips(program, runtime=None) -> list:
    """The primitive names of `program`'s library steps that run on the host.

    Example:
        >>> import ember, numpy as np
        >>> from ember import lax
        >>> from ember.backends.kernels import schedule
        >>> from ember.backends.cuda.target import cuda_target
        >>> g = ember.make_graph(lambda x: lax.linalg.eig(lax.cumsum(x, 0))[0])(np.eye(3, dtype=np.float32))
        >>> round_trips(schedule(g, cuda_target()))
        ['eig']
    """
    from ..kernels.loop_ir import LibraryStep  # noqa: PLC0415
    return [s.eq.prim.name for s in program.steps
            if isinstance(s, LibraryStep) and binding_kind(s.eq, runtime) == "host"]


def check_round_trips(program, runtime=None):
    """With EMBER_CUDA_HOST_LIBRARY=error, a ValueError naming every library step
    that has no device implementation (it would round-trip through the host)."""
    if os.environ.get("EMBER_CUDA_HOST_LIBRARY", "").lower() != "error":
        return
    names = round_trips(program, runtime)
    if names:
        raise ValueError(f"the CUDA backend has no device implementation of {sorted(set(names))}: they would "
                         "run on the host (operands copied back and forth); hint: unset "
                         "EMBER_CUDA_HOST_LIBRARY to allow the round trip, or add the primitive to "
                         "ember/backends/cuda/library.py's DEVICE_LIBRARY")


def bind_library_step(step, runtime, compile, buffers):
    """A callable(*device values) -> list of device values running `step`
    (a `LibraryStep`) on `runtime`; `compile(closed)` compiles sub-graphs,
    `buffers` are the program's buffer records (for dtypes of results)."""
    eq = step.eq
    if isinstance(step, (CollectiveStart, CollectiveWait, CollectiveProgress)):
        half = host_library_step(step, compile)      # start / wait / progress on device values
        returns = bool(step.outputs)                  # (a progress step returns nothing)

        def run_half(*vals):
            res = half(*vals)
            return [res] if returns else []
        return run_half
    kind = binding_kind(eq, runtime)
    multiple = eq.prim.multiple_results
    out_dtypes = [buffers[o].dtype for o in step.outputs]
    if kind == "driver":
        return driver(eq.prim, eq.params, compile, xp=runtime)
    if kind in ("device", "eager"):
        fn, params, xp = (DEVICE_LIBRARY if kind == "device" else EAGER)[eq.prim], eq.params, runtime.library_namespace

        def run_device(*vals):
            with quiet(xp):
                res = fn(xp, *vals, **params)
            return list(res) if multiple else [res]
        return run_device
    impl, params = eq.prim.impl, eq.params
    in_dtypes = [np.dtype(v.aval.dtype) for v in eq.inputs]

    def run_host(*vals):
        host = [runtime.to_host(v, d) if not isinstance(v, (int, float, complex, bool, np.generic, np.ndarray))
                else v for v, d in zip(vals, in_dtypes)]
        res = impl(*host, **params)
        res = list(res) if multiple else [res]
        return [runtime.to_device(np.asarray(r, dtype=d)) for r, d in zip(res, out_dtypes)]
    return run_host
