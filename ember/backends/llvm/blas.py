"""BLAS matrix multiply from Python and from generated code, without jaxlib.

SciPy exports the function pointers of the BLAS it ships (OpenBLAS in the
wheels) as PyCapsules in ``scipy.linalg.cython_blas.__pyx_capi__``.  This
module reads the ``sgemm``/``dgemm`` pointers and offers:

* ``gemm(a, b, out, ...)`` -- a ctypes call for row-major numpy arrays;
* ``declare_gemm(module, dtype)`` -- an external declaration usable from
  llvmlite IR, bound to the BLAS pointer at load time (``register_symbol``),
  so JIT-compiled kernels call BLAS directly and their object code contains
  no absolute address (it stays cacheable across processes);
* ``emit_gemm_call`` / ``emit_batched_gemm`` -- IR for one call and for a loop
  of calls over a batch range (fits the kernel ABI: the batch range is
  ``[start, stop)``).

The Fortran ABI passes every argument by pointer and uses 32-bit integers.
Row-major ``C = op(A) @ op(B)`` is computed as the column-major product
``C^T = op(B)^T op(A)^T``: a row-major matrix is its transpose in column-major
order, so the operands are swapped and the transpose flags pass through.

Example::

    import numpy as np
    from ember.backends.llvm import blas
    a = np.random.rand(3, 4).astype(np.float32); b = np.random.rand(4, 5).astype(np.float32)
    c = np.empty((3, 5), np.float32)
    blas.gemm(a, b, c)                 # c = a @ b
"""

from __future__ import annotations

import ctypes
import functools

import llvmlite.ir as ir
import numpy as np

from . import compiler

__all__ = ["gemm_address", "gemm", "matmul", "gemm_function_type", "declare_gemm", "emit_gemm_call",
           "emit_batched_gemm", "SYMBOLS", "available", "limit_threads"]

# names under which the BLAS routines are visible to JIT-compiled code
SYMBOLS = {np.dtype(np.float32): "ember_sgemm", np.dtype(np.float64): "ember_dgemm"}
_ROUTINE = {np.dtype(np.float32): "sgemm", np.dtype(np.float64): "dgemm"}

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


@functools.lru_cache(maxsize=None)
def _capsule_address(routine: str) -> int:
    from scipy.linalg import cython_blas  # imported lazily: ~10 ms

    capsule = cython_blas.__pyx_capi__[routine]
    addr = _get_pointer(capsule, _get_name(capsule))
    if not addr:
        raise RuntimeError(f"scipy exports a null pointer for {routine}")
    return int(addr)


def _dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in _ROUTINE:
        raise TypeError(f"gemm supports float32 and float64, not {dt}")
    return dt


@functools.lru_cache(maxsize=None)
def available() -> bool:
    """True when scipy's BLAS can be reached (native code then calls it for matrix
    products; otherwise they run through numpy).

    Example::

        available()   # True with scipy installed
    """
    try:
        gemm_address(np.float32)
        gemm_address(np.float64)
    except Exception:  # noqa: BLE001 - no scipy, or a build without the capsules
        return False
    return True


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


# names of "set the number of threads" in the BLAS builds scipy ships or links
_SET_THREADS = ("scipy_openblas_set_num_threads", "openblas_set_num_threads",
                "scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_",
                "MKL_Set_Num_Threads", "bli_thread_set_num_threads")


@functools.lru_cache(maxsize=None)
def _thread_setter():
    try:
        libc = ctypes.CDLL(None)
        info = _DlInfo()
        if not libc.dladdr(ctypes.c_void_p(gemm_address(np.float32)), ctypes.byref(info)):
            return None
        lib = ctypes.CDLL(info.dli_fname)
    except (OSError, AttributeError, TypeError):
        return None
    for name in _SET_THREADS:
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.argtypes = [ctypes.c_int]
            fn.restype = None
            return fn
    return None


_limited = []


def limit_threads(n: int = 1) -> bool:
    """Tell the BLAS behind ``gemm_address`` to use ``n`` threads; True if it could.

    Native code runs its products single-threaded and splits them over ember's
    own worker pool: a BLAS with its own threads would compete with that pool
    for the same cores (its idle threads spin for a while after every call), and
    on a small or shared machine that costs far more than it gains.  This
    changes scipy's BLAS for the whole process (numpy's own BLAS is a separate
    library and keeps its threads).  ``EMBER_BLAS_THREADS=library`` leaves the
    BLAS alone, and native products then make one call per product.

    Example::

        limit_threads(1)
    """
    import os
    if os.environ.get("EMBER_BLAS_THREADS", "").strip().lower() == "library":
        return False
    if _limited and _limited[-1] == n:
        return True
    fn = _thread_setter()
    if fn is None:
        return False
    fn(int(n))
    _limited.append(int(n))
    return True


def gemm_address(dtype) -> int:
    """Address of scipy's ``sgemm`` (float32) or ``dgemm`` (float64).

    Example::

        gemm_address(np.float32)   # an int
    """
    return _capsule_address(_ROUTINE[_dtype(dtype)])


def _provider(name: str) -> int | None:
    for dt, sym in SYMBOLS.items():
        if name == sym:
            return gemm_address(dt)
    return None


# a cached object file that calls BLAS can be loaded in a process that never
# called declare_gemm: resolve our symbols on demand
compiler.register_symbol_provider(_provider)

_VP = ctypes.c_void_p
_FORTRAN_GEMM = ctypes.CFUNCTYPE(None, *([_VP] * 13))


@functools.lru_cache(maxsize=None)
def _gemm_fn(dt: np.dtype):
    return _FORTRAN_GEMM(gemm_address(dt))


def _row_major_view(x: np.ndarray):
    """(array, ld, transposed): ``array`` (possibly ``x.T``) has unit column
    stride and leading dimension ``ld``; copies only when neither ``x`` nor
    ``x.T`` qualifies."""
    item = x.itemsize
    r, c = x.shape
    s0, s1 = x.strides
    if (c <= 1 or s1 == item) and s0 % item == 0 and (r <= 1 or s0 >= item * max(c, 1)):
        ld = s0 // item if r > 1 else max(c, 1)
        return x, max(ld, c, 1), False
    if (r <= 1 or s0 == item) and s1 % item == 0 and (c <= 1 or s1 >= item * max(r, 1)):
        ld = s1 // item if c > 1 else max(r, 1)
        return x.T, max(ld, r, 1), True
    y = np.ascontiguousarray(x)
    return y, max(y.shape[1], 1), False


def gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray, trans_a: bool = False,
         trans_b: bool = False, alpha: float = 1.0, beta: float = 0.0) -> np.ndarray:
    """``out = alpha * op(a) @ op(b) + beta * out`` with BLAS; returns ``out``.

    ``op(x)`` is ``x.T`` when the flag is set.  ``a``, ``b``, ``out`` are 2-d
    float32 or float64 arrays of one dtype with any strides (views with unit
    stride in either dimension are used in place; others are copied).
    ``out`` must not overlap the inputs.  With ``beta == 0`` the previous
    contents of ``out`` are ignored (NaN included).

    Example::

        gemm(a, b, c, trans_b=True)        # c = a @ b.T
    """
    dt = _dtype(out.dtype)
    if a.dtype != dt or b.dtype != dt:
        raise TypeError("a, b and out must have the same dtype")
    if a.ndim != 2 or b.ndim != 2 or out.ndim != 2:
        raise ValueError("gemm takes 2-d arrays")
    m, k = (a.shape[1], a.shape[0]) if trans_a else a.shape
    k2, n = (b.shape[1], b.shape[0]) if trans_b else b.shape
    if k != k2 or out.shape != (m, n):
        raise ValueError(f"shape mismatch: op(a) {m}x{k}, op(b) {k2}x{n}, out {out.shape}")
    if not out.flags.writeable:
        raise ValueError("out is read-only")
    if m == 0 or n == 0:
        return out
    if k == 0:
        # BLAS would only scale C; do it here so beta == 0 clears NaNs too
        if beta == 0:
            out[...] = 0
        else:
            out *= beta
        return out
    c_view, ldc, c_t = _row_major_view(out)
    if c_view is not out and not c_t:
        # out needed a copy: compute into a temporary and write back
        tmp = np.array(out, copy=True, order="C")
        gemm(a, b, tmp, trans_a, trans_b, alpha, beta)
        out[...] = tmp
        return out
    if c_t:
        # out is column-major: out^T = op(b)^T op(a)^T, row-major
        gemm(b, a, out.T, not trans_b, not trans_a, alpha, beta)
        return out
    a_v, lda, a_t = _row_major_view(a)
    b_v, ldb, b_t = _row_major_view(b)
    ta = b"T" if (trans_a != a_t) else b"N"
    tb = b"T" if (trans_b != b_t) else b"N"
    scal = ctypes.c_float if dt == np.float32 else ctypes.c_double
    ints = (ctypes.c_int * 6)(n, m, k, ldb, lda, ldc)
    ca, cb = ctypes.c_char(ta), ctypes.c_char(tb)
    al, be = scal(alpha), scal(beta)
    ad = ctypes.addressof
    isz = ctypes.sizeof(ctypes.c_int)
    base = ad(ints)
    _gemm_fn(dt)(ad(cb), ad(ca), base, base + isz, base + 2 * isz, ad(al),
                 b_v.ctypes.data, base + 3 * isz, a_v.ctypes.data, base + 4 * isz,
                 ad(be), c_view.ctypes.data, base + 5 * isz)
    return out


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for 2-d float32/float64 arrays through ``gemm``.

    Example::

        matmul(np.ones((2, 3)), np.ones((3, 4)))   # 2x4 of 3.0
    """
    out = np.empty((a.shape[0], b.shape[1]), dtype=np.result_type(a, b))
    return gemm(a, b, out)


# ---------------------------------------------------------------------------
# IR side

_I8 = ir.IntType(8)
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)


def _ir_float(dt: np.dtype) -> ir.Type:
    return ir.FloatType() if dt == np.float32 else ir.DoubleType()


def gemm_function_type(dtype) -> ir.FunctionType:
    """``void (i8*, i8*, i32*, i32*, i32*, T*, T*, i32*, T*, i32*, T*, T*, i32*)``:
    the Fortran ABI of ``?gemm`` (transa, transb, m, n, k, alpha, a, lda, b,
    ldb, beta, c, ldc; everything by pointer).

    Example::

        gemm_function_type(np.float64).args[5]   # double*
    """
    t = _ir_float(_dtype(dtype)).as_pointer()
    i8p, i32p = _I8.as_pointer(), _I32.as_pointer()
    return ir.FunctionType(ir.VoidType(), [i8p, i8p, i32p, i32p, i32p, t, t, i32p, t, i32p, t, t, i32p])


def declare_gemm(module: ir.Module, dtype, *, absolute: bool = False):
    """Declare the BLAS gemm for ``dtype`` in ``module`` and return a callee.

    By default this is an external function ``ember_sgemm``/``ember_dgemm``
    whose symbol is bound to scipy's BLAS in this process, so the compiled
    object is position-independent and cacheable.  ``absolute=True`` instead
    returns the BLAS address as a constant function pointer (``inttoptr``);
    such IR differs between processes and defeats the disk cache.

    Example::

        sgemm = declare_gemm(module, np.float32)
        emit_gemm_call(builder, sgemm, np.float32, False, False, m, n, k,
                       1.0, a_ptr, k, b_ptr, n, 0.0, c_ptr, n)
    """
    dt = _dtype(dtype)
    fnty = gemm_function_type(dt)
    if absolute:
        ptr = ir.Constant(_I64, gemm_address(dt)).inttoptr(fnty.as_pointer())
        # llvmlite's call() reads the callee's signature from this attribute
        ptr.function_type = fnty
        return ptr
    name = SYMBOLS[dt]
    compiler.register_symbol(name, gemm_address(dt))
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, fnty, name=name)
    return fn


def _entry_alloca(builder: ir.IRBuilder, ty: ir.Type, name: str):
    # allocas belong in the entry block: inside a loop they would grow the
    # stack on every iteration.  llvmlite builders track their insertion
    # point by index, so a second builder must never insert into the block
    # the first one is filling: in the entry block use the builder itself,
    # elsewhere insert before the entry block's terminator.
    entry = builder.function.entry_basic_block
    if builder.block is entry or entry.terminator is None:
        return builder.alloca(ty, name=name)
    tmp = ir.IRBuilder(entry)
    tmp.position_before(entry.terminator)
    return tmp.alloca(ty, name=name)


def _as_value(v, ty):
    return v if isinstance(v, ir.Value) else ir.Constant(ty, v)


def emit_gemm_call(builder: ir.IRBuilder, gemm_fn, dtype, trans_a: bool, trans_b: bool,
                   m, n, k, alpha, a_ptr, lda, b_ptr, ldb, beta, c_ptr, ldc) -> None:
    """Emit ``C = alpha * op(A) @ op(B) + beta * C`` for row-major operands.

    ``m, n, k, lda, ldb, ldc`` are Python ints or i32 IR values (element
    strides between rows); ``alpha``/``beta`` floats or IR values of the
    element type; ``*_ptr`` are IR pointers to the element type.  The
    operands are swapped for the column-major BLAS here.  Degenerate sizes
    must be avoided by the caller (BLAS rejects ld < 1; with k == 0 it only
    scales C).

    Example::

        emit_gemm_call(b, sgemm, np.float32, False, True, 64, 64, 32,
                       1.0, a, 32, bt, 32, 0.0, c, 64)
    """
    dt = _dtype(dtype)
    ft = _ir_float(dt)
    slots = {}
    for name, ty in (("ta", _I8), ("tb", _I8), ("m", _I32), ("n", _I32), ("k", _I32),
                     ("lda", _I32), ("ldb", _I32), ("ldc", _I32), ("alpha", ft), ("beta", ft)):
        slots[name] = _entry_alloca(builder, ty, "gemm." + name)
    values = {
        "ta": ir.Constant(_I8, ord("T" if trans_a else "N")),
        "tb": ir.Constant(_I8, ord("T" if trans_b else "N")),
        "m": _as_value(m, _I32), "n": _as_value(n, _I32), "k": _as_value(k, _I32),
        "lda": _as_value(lda, _I32), "ldb": _as_value(ldb, _I32), "ldc": _as_value(ldc, _I32),
        "alpha": _as_value(alpha, ft), "beta": _as_value(beta, ft),
    }
    for name, v in values.items():
        builder.store(v, slots[name])
    s = slots
    builder.call(gemm_fn, [s["tb"], s["ta"], s["n"], s["m"], s["k"], s["alpha"], b_ptr, s["ldb"],
                           a_ptr, s["lda"], s["beta"], c_ptr, s["ldc"]])


def emit_batched_gemm(builder: ir.IRBuilder, gemm_fn, dtype, start, stop, trans_a: bool,
                      trans_b: bool, m, n, k, alpha, a_ptr, a_stride, lda, b_ptr, b_stride, ldb,
                      beta, c_ptr, c_stride, ldc) -> None:
    """Emit a loop over batch indices ``start <= i < stop`` (i64 values)
    calling gemm on ``A + i*a_stride``, ``B + i*b_stride``, ``C + i*c_stride``
    (element strides, Python ints or i64 values; a stride of 0 broadcasts).
    The builder is left after the loop.

    Example::

        fn, start, stop, args = declare_kernel(module, "bmm")
        ...
        emit_batched_gemm(b, sgemm, np.float32, start, stop, False, False, M, N, K,
                          1.0, A, M * K, K, B, K * N, N, 0.0, C, M * N, N)
        b.ret_void()
    """
    fn = builder.function
    head = fn.append_basic_block("bgemm.head")
    body = fn.append_basic_block("bgemm.body")
    done = fn.append_basic_block("bgemm.done")
    pre = builder.block
    builder.branch(head)
    builder.position_at_end(head)
    i = builder.phi(_I64, name="bgemm.i")
    i.add_incoming(start, pre)
    builder.cbranch(builder.icmp_signed("<", i, stop), body, done)
    builder.position_at_end(body)

    def offset(ptr, stride):
        return builder.gep(ptr, [builder.mul(i, _as_value(stride, _I64))], inbounds=True)

    emit_gemm_call(builder, gemm_fn, dtype, trans_a, trans_b, m, n, k, alpha,
                   offset(a_ptr, a_stride), lda, offset(b_ptr, b_stride), ldb, beta,
                   offset(c_ptr, c_stride), ldc)
    nxt = builder.add(i, ir.Constant(_I64, 1))
    i.add_incoming(nxt, builder.block)
    builder.branch(head)
    builder.position_at_end(done)
