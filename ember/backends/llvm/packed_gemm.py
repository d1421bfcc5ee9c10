"""A packed matrix multiply written in LLVM IR: ember's own gemm.

``C = A @ B`` for float32/float64 with arbitrary row/column strides on A and B
(so transposed operands need no copy) and a row-major C, in the classic
Goto/BLIS structure:

* the product is cut into ``kc``-deep slices of K and ``nc``-wide panels of N;
  each B panel is *packed* into ``nr``-wide column strips (one contiguous
  ``kc x nr`` block per strip, zero padded), each ``mc``-row block of A into
  ``mr``-row strips (``kc x mr``), so the micro-kernel reads both with unit
  stride whatever the operands' layouts were;
* the micro-kernel keeps an ``mr x nr`` tile of C in vector registers
  (``mr * nr / lanes`` accumulators: 24 zmm registers for 8 x 48 float32 with
  AVX-512), and for each k loads ``nr / lanes`` vectors of B and broadcasts
  ``mr`` scalars of A into fused multiply-adds;
* loops: N panels, K slices (pack B), M blocks (pack A), strips of B (each
  reused by every strip of the A block, which stays in L2), strips of A.

The last strip of N runs a narrower kernel (one or two vectors wide); a last
partial strip of M is computed on the zero padding and stored through a small
stack tile.  The K slices after the first accumulate into C.

Each call also reports what the overflow check of generated programs (codegen
``_fix_nonfinite``) needs, found where the data already passes by: whether any
element of C is not finite (each tile tests its registers as it stores them)
and the largest exponents of A and B (each packing takes the max as it reads
the operand).  A caller then needs no scan of C, A or B.

Why not BLAS: the OpenBLAS that numpy and scipy ship picks its kernels at run
time, and on the project's Zen 5 machines the environment pins it to the
Haswell (AVX2) kernels (``OPENBLAS_CORETYPE``) because older builds crash on
that CPU; this kernel is generated for the host's real features at half the
time.  ``EMBER_GEMM=blas`` routes native products to scipy's BLAS instead.

The functions of a dtype live in one module compiled when first used (object
code is cached on disk like every kernel); generated programs declare
``ember_gemm_f32``/``ember_gemm_f64`` and the symbols are bound at load time.

Example:

    >>> import numpy as np
    >>> from ember.backends.llvm import packed_gemm
    >>> a = np.random.rand(300, 200).astype(np.float32)
    >>> b = np.random.rand(200, 100).astype(np.float32)
    >>> c = packed_gemm.matmul_into(a, b, np.empty((300, 100), np.float32))
    >>> bool(np.allclose(c, a @ b, rtol=1e-4))
    True
"""

from __future__ import annotations

import ctypes
import functools
import os
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from . import compiler, target

__all__ = ["GemmConfig", "GemmReport", "host_config", "describe", "build_ir", "SYMBOLS", "address", "declare",
           "emit_call", "matmul_into", "matmul_report", "use_blas", "finite_magnitude_bits", "frexp_exponent"]

SYMBOLS = {np.dtype(np.float32): "ember_gemm_f32", np.dtype(np.float64): "ember_gemm_f64"}

# products contracting at most this many elements skip the packing (`short_k`)
SHORT_K = 4

_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_I8P = ir.IntType(8).as_pointer()


@dataclass(frozen=True)
class GemmConfig:
    """Register tile and cache blocking of one dtype's kernel.

    ``lanes`` elements per vector, an ``mr x (nv * lanes)`` register tile,
    ``kc``/``mc``/``nc`` the K slice, the rows of a packed A block and the
    columns of a packed B panel, ``unroll`` the k-steps per loop iteration,
    ``fma`` whether the multiply-adds are fused (``llvm.fma``) or left to the
    target (``llvm.fmuladd``: a CPU without FMA would call libm's scalar fma
    per lane).

    Example:

        >>> GemmConfig(np.float32, lanes=16, mr=8, nv=3).variant
        'avx512 8x48'
    """
    dtype: np.dtype
    lanes: int
    mr: int
    nv: int
    kc: int = 512
    mc: int = 192
    nc: int = 4096
    unroll: int = 4
    fma: bool = True

    @property
    def nr(self) -> int:
        return self.nv * self.lanes

    @property
    def variant(self) -> str:
        """The instruction set and register tile, e.g. ``'avx2 4x24'``."""
        isa = {64: "avx512", 32: "avx2" if self.fma else "avx"}.get(
            self.lanes * np.dtype(self.dtype).itemsize, "sse2")
        return f"{isa} {self.mr}x{self.nr}"

    @property
    def suffix(self) -> str:
        return "f32" if np.dtype(self.dtype) == np.float32 else "f64"


def host_config(dtype) -> GemmConfig:
    """The configuration for this CPU: 32 vector registers with AVX-512, 16 with
    AVX2, 128-bit vectors elsewhere.

    Example:

        >>> host_config(np.float64).nr % host_config(np.float64).lanes
        0
    """
    dt = np.dtype(dtype)
    if dt not in SYMBOLS:
        raise TypeError(f"ember's gemm supports float32 and float64, not {dt}")
    wide = 4 if dt == np.float32 else 8   # bytes per element
    if target.host_has_feature("avx512f"):
        return GemmConfig(dt, lanes=64 // wide, mr=8, nv=3)
    if target.host_has_feature("avx2") and target.host_has_feature("fma"):
        return GemmConfig(dt, lanes=32 // wide, mr=4, nv=3)
    return GemmConfig(dt, lanes=16 // wide, mr=4, nv=2, fma=target.host_has_feature("fma"))


def describe() -> str:
    """The kernel variant this target runs, per dtype (for benchmark headers).

    Example:

        >>> describe()   # 'float32 avx512 8x48, float64 avx512 8x24' with AVX-512
        'float32 ..., float64 ...'
    """
    return ", ".join(f"{dt} {host_config(dt).variant}" for dt in SYMBOLS)


def _c(v):
    return ir.Constant(_I64, v)


def _loop(b: ir.IRBuilder, lo, hi, step, body, name):
    """``for i in range(lo, hi, step): body(i)``; ``body`` may add blocks."""
    fn = b.function
    head = fn.append_basic_block(name + ".head")
    inner = fn.append_basic_block(name + ".body")
    done = fn.append_basic_block(name + ".done")
    pre = b.block
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(_I64, name=name)
    i.add_incoming(lo, pre)
    b.cbranch(b.icmp_signed("<", i, hi), inner, done)
    b.position_at_end(inner)
    body(i)
    nxt = b.add(i, step if isinstance(step, ir.Value) else _c(step))
    i.add_incoming(nxt, b.block)
    b.branch(head)
    b.position_at_end(done)


def _min(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _gep(b, p, i):
    return b.gep(p, [i if isinstance(i, ir.Value) else _c(i)], inbounds=True)


def _transpose(b: ir.IRBuilder, rows: list) -> list:
    """The rows (``R`` vectors of ``L`` lanes, ``R <= L`` both powers of two) of a
    matrix X, as the ``R`` vectors that hold X transposed in row-major order
    (vector q = elements ``q*L .. q*L+L-1`` of ``X.T.ravel()``): ``log2 R`` rounds
    of interleaving row i with row i + R/2 (a perfect shuffle), each a two-input
    shufflevector."""
    count, lanes = len(rows), rows[0].type.count
    lo = ir.Constant(ir.VectorType(_I32, lanes), [i // 2 + (lanes if i % 2 else 0) for i in range(lanes)])
    hi = ir.Constant(ir.VectorType(_I32, lanes), [lanes // 2 + i // 2 + (lanes if i % 2 else 0)
                                                   for i in range(lanes)])
    half = count // 2
    for _ in range(count.bit_length() - 1):
        new = [None] * count
        for i in range(half):
            new[2 * i] = b.shuffle_vector(rows[i], rows[i + half], lo)
            new[2 * i + 1] = b.shuffle_vector(rows[i], rows[i + half], hi)
        rows = new
    return rows


def _pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def finite_magnitude_bits(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """The bit pattern of ``|x|`` as an integer (or integer vector) where ``x`` is
    finite, else 0: for finite floats the integer order is the magnitudes' order,
    so an integer max finds the largest finite magnitude (a max that vectorises).

    Example:

        >>> fn = ir.Function(ir.Module(), ir.FunctionType(_I32, [ir.FloatType()]), "f")
        >>> bld = ir.IRBuilder(fn.append_basic_block())
        >>> str(finite_magnitude_bits(bld, fn.args[0]).type)
        'i32'
    """
    t = x.type
    count = t.count if isinstance(t, ir.VectorType) else None
    scalar = t.element if count else t
    w = 32 if isinstance(scalar, ir.FloatType) else 64
    mant = 23 if w == 32 else 52
    ity = ir.IntType(w) if count is None else ir.VectorType(ir.IntType(w), count)

    def ci(v):
        return ir.Constant(ity, v if count is None else [v] * count)
    mag = b.and_(b.bitcast(x, ity), ci((1 << (w - 1)) - 1))
    # (a signed compare: the sign bit is clear, and AVX2 has no unsigned one for i64)
    return b.select(b.icmp_signed("<", mag, ci(((1 << (w - mant - 1)) - 1) << mant)), mag, ci(0))


def frexp_exponent(b: ir.IRBuilder, bits: ir.Value) -> ir.Value:
    """The i64 exponent ``e`` (frexp's: ``m = f * 2**e``, ``0.5 <= f < 1``), at least
    0, of the magnitude whose ``finite_magnitude_bits`` are ``bits`` (i32 for
    float32, i64 for float64): the exponents contraction.`overflow_exponent` sums.

    Example:

        >>> fn = ir.Function(ir.Module(), ir.FunctionType(_I64, [_I32]), "f")
        >>> bld = ir.IRBuilder(fn.append_basic_block())
        >>> str(frexp_exponent(bld, fn.args[0]).type)
        'i64'
    """
    ity = bits.type
    w = ity.width
    mant = 23 if w == 32 else 52
    e = b.sub(b.lshr(bits, ir.Constant(ity, mant)), ir.Constant(ity, (1 << (w - mant - 2)) - 2))
    e = b.select(b.icmp_signed("<", e, ir.Constant(ity, 0)), ir.Constant(ity, 0), e)
    return b.sext(e, _I64) if w < 64 else e


def _bits_max(b, x, y):
    # of finite_magnitude_bits, never negative: a signed compare is the same max
    return b.select(b.icmp_signed(">", x, y), x, y)


class _RunningMax:
    """The largest ``|x|`` of the values ``seen`` by one loop, as a float max: an and
    and a maxpd per vector, where the integer max of ``finite_magnitude_bits`` took
    five instructions on AVX2 (more than the multiply-add of a gemv).  NaNs are
    skipped by the compare (only into a running max that never holds one: a
    pairwise max of two values would let a NaN replace the other); an infinity
    wins the max, and then ``finite_bits`` runs the caller's exact rescan (a cold
    path: operands with infinities are rare)."""

    def __init__(self, builder: "_Builder", b: ir.IRBuilder):
        """Running maxima made on demand in the entry block of ``b``'s function."""
        self.builder, self.t = builder, builder.t
        self.slots = {}

    def _slot(self, b, n, i):
        # one running max per (vector width, position in `seen`): separate chains
        if (n, i) not in self.slots:
            ty = self.t if n == 1 else ir.VectorType(self.t, n)
            with b.goto_entry_block():
                ptr = b.alloca(ty)
                b.store(ir.Constant(ty, 0.0 if n == 1 else [0.0] * n), ptr)
            self.slots[(n, i)] = ptr
        return self.slots[(n, i)]

    def seen(self, b, *values):
        """Fold ``values`` into the running maxima, the i-th into its own (so that
        the ``maxpd``s of one call do not wait for each other)."""
        for i, v in enumerate(values):
            t = v.type
            ptr = self._slot(b, t.count if isinstance(t, ir.VectorType) else 1, i)
            b.store(_fmax(b, self.builder.fabs(b, v), b.load(ptr)), ptr)

    def finite_bits(self, b, rescan) -> ir.Value:
        """The ``finite_magnitude_bits`` of the largest finite value seen (0 if none);
        ``rescan()`` emits their exact computation for when an infinity was seen."""
        best = ir.Constant(self.t, 0.0)
        for (n, _), ptr in self.slots.items():
            x = b.load(ptr)
            for lane in range(n) if n > 1 else [None]:
                v = x if lane is None else b.extract_element(x, ir.Constant(_I32, lane))
                best = _fmax(b, v, best)
        ity = self.builder.ity
        with b.goto_entry_block():
            out = b.alloca(ity)
        b.store(b.bitcast(best, ity), out)
        with b.if_then(b.fcmp_ordered("==", best, ir.Constant(self.t, float("inf"))), likely=False):
            b.store(rescan(), out)
        return b.load(out)


def _fmax(b, x, y):
    # select(x > y, x, y) is the x86 max instruction exactly (y when x is NaN)
    return b.select(b.fcmp_ordered(">", x, y), x, y)


class _Builder:
    """Emits one dtype's functions into ``module``: micro-kernels, packing, driver."""

    def __init__(self, module: ir.Module, cfg: GemmConfig):
        self.m = module
        self.cfg = cfg
        self.t = ir.FloatType() if cfg.suffix == "f32" else ir.DoubleType()
        self.tp = self.t.as_pointer()
        self.vt = ir.VectorType(self.t, cfg.lanes)
        self.vp = self.vt.as_pointer()
        op = "fma" if cfg.fma else "fmuladd"
        self.fma = self._intrinsic(f"llvm.{op}.v{cfg.lanes}{cfg.suffix}", self.vt, [self.vt] * 3)
        self.size = np.dtype(cfg.dtype).itemsize
        self.ity = ir.IntType(8 * self.size)    # the integer of finite_magnitude_bits

    def _nonfinite(self, b, values) -> ir.Value:
        """i1: is any lane of any of ``values`` (all scalars or all vectors) inf or NaN?"""
        t = values[0].type
        vec = isinstance(t, ir.VectorType)
        inf = ir.Constant(t, [float("inf")] * t.count if vec else float("inf"))
        bad = None
        for v in values:
            x = b.fcmp_unordered("uge", self.fabs(b, v), inf)
            bad = x if bad is None else b.or_(bad, x)
        if vec:
            bad = b.icmp_unsigned("!=", b.bitcast(bad, ir.IntType(t.count)), ir.Constant(ir.IntType(t.count), 0))
        return bad

    def fabs(self, b, x) -> ir.Value:
        """``|x|`` of a scalar or vector of the dtype (``llvm.fabs``)."""
        t = x.type
        name = f"llvm.fabs.v{t.count}{self.cfg.suffix}" if isinstance(t, ir.VectorType) else f"llvm.fabs.{self.cfg.suffix}"
        return b.call(self._intrinsic(name, t, [t]), [x])

    def exact_top(self, b, rows, cols, src, s_row, s_col) -> ir.Value:
        """The largest ``finite_magnitude_bits`` of ``src[i * s_row + j * s_col]``
        (i < rows, j < cols), one element at a time: `_RunningMax`'s cold rescan."""
        fn = self.m.globals.get(f"ember_gemm_{self.cfg.suffix}_exact_top")
        if fn is None:
            fn, fb = self._function(f"ember_gemm_{self.cfg.suffix}_exact_top",
                                    ["i:rows", "i:cols", "p:src", "i:s_row", "i:s_col"], self.ity)
            fn.attributes.add("noinline")
            fn.attributes.add("cold")
            r_, c_, x_, sr, sc = fn.args
            top = fb.alloca(self.ity)
            fb.store(ir.Constant(self.ity, 0), top)

            def element(i, j):
                x = fb.load(_gep(fb, x_, fb.add(fb.mul(i, sr), fb.mul(j, sc))))
                fb.store(_bits_max(fb, fb.load(top), finite_magnitude_bits(fb, x)), top)
            _loop(fb, _c(0), r_, 1, lambda i: _loop(fb, _c(0), c_, 1, lambda j: element(i, j), "xtc"), "xtr")
            fb.ret(fb.load(top))
        return b.call(fn, [rows, cols, src, s_row, s_col])

    def _intrinsic(self, name, ret, args):
        fn = self.m.globals.get(name)
        if fn is None:
            fn = ir.Function(self.m, ir.FunctionType(ret, args), name=name)
        return fn

    def _function(self, name, args, ret, internal=True):
        types = {"i": _I64, "p": self.tp, "q": _I64.as_pointer()}
        fn = ir.Function(self.m, ir.FunctionType(ret, [types[a[0]] for a in args]), name=name)
        fn.attributes.add("nounwind")
        if internal:
            fn.linkage = "internal"
        for a, n in zip(fn.args, args):
            a.name = n[2:]
        return fn, ir.IRBuilder(fn.append_basic_block("entry"))

    # -- the micro-kernel ------------------------------------------------------------------

    def strips_for(self, nv: int) -> int:
        """A strips of packed A the ``nv``-vector kernel walks together: two when one
        strip would give it fewer than 8 accumulators (AVX2's one-vector kernel for
        the last strip of N has 4, a chain of dependent multiply-adds each: half
        the FMA throughput; two strips of rows are 8 independent chains, and each
        element is still summed in k order, so the bits do not change)."""
        return 2 if self.cfg.mr * nv < 8 else 1

    def tile(self, nv: int, strips: int = 1):
        """The micro-kernel for an ``mr x (nv * lanes)`` tile (strips of packed B
        are ``nr`` wide: narrower kernels serve the last strip of N, so that an
        N of 1024 wastes no arithmetic on the padding of a 48-wide strip), or for
        ``strips`` consecutive strips of packed A at once (``strips * mr`` rows)."""
        cfg, t, vt = self.cfg, self.t, self.vt
        w, nr = cfg.lanes, cfg.nr
        mr = cfg.mr * strips
        # returns 1 when a value it stores in C is not finite (a non-finite partial
        # sum stays non-finite through the later K slices, so the flags of all the
        # stores OR to "some element of the final C is not finite")
        fn, b = self._function(f"ember_gemm_{cfg.suffix}_tile{nv}" + (f"x{strips}" if strips > 1 else ""),
                               ["i:kc", "p:ap", "p:bp", "p:c", "i:ldc", "i:rows", "i:cols", "i:acc"], _I32)
        # a call per tile costs nothing measurable; three inlined copies in the
        # driver cost a quarter of the module's compile time
        fn.attributes.add("noinline")
        kc, ap, bp, c, ldc, rows, cols, acc = fn.args
        for p in (ap, bp, c):
            p.add_attribute("noalias")
        undef = ir.Constant(vt, None)
        splat0 = ir.Constant(ir.VectorType(_I32, w), [0] * w)

        def kstep(cur, k):
            bk = _gep(b, bp, b.mul(k, _c(nr)))
            bv = [b.load(b.bitcast(_gep(b, bk, v * w), self.vp), align=self.size) for v in range(nv)]
            # strip q of A starts q * cfg.mr * kc elements after the first
            aks = [_gep(b, ap, b.add(b.mul(k, _c(cfg.mr)), b.mul(kc, _c(q * cfg.mr)) if q else _c(0)))
                   for q in range(strips)]
            out = []
            for r in range(mr):
                s = b.load(_gep(b, aks[r // cfg.mr], r % cfg.mr))
                sv = b.shuffle_vector(b.insert_element(undef, s, ir.Constant(_I32, 0)), undef, splat0)
                out.append([b.call(self.fma, [sv, bv[v], cur[r][v]]) for v in range(nv)])
            return out

        def kloop(name, lo, hi, step, cur, steps):
            pre = b.block
            head = fn.append_basic_block(name + ".head")
            body = fn.append_basic_block(name + ".body")
            done = fn.append_basic_block(name + ".done")
            b.branch(head)
            b.position_at_end(head)
            k = b.phi(_I64)
            k.add_incoming(lo, pre)
            phis = [[b.phi(vt) for _ in range(nv)] for _ in range(mr)]
            for r in range(mr):
                for v in range(nv):
                    phis[r][v].add_incoming(cur[r][v], pre)
            b.cbranch(b.icmp_signed("<", k, hi), body, done)
            b.position_at_end(body)
            new = phis
            for u in range(steps):
                new = kstep(new, b.add(k, _c(u)) if u else k)
            k.add_incoming(b.add(k, _c(step)), b.block)
            for r in range(mr):
                for v in range(nv):
                    phis[r][v].add_incoming(new[r][v], b.block)
            b.branch(head)
            b.position_at_end(done)
            return phis

        zero = ir.Constant(vt, [0.0] * w)
        cur = [[zero] * nv for _ in range(mr)]
        u = cfg.unroll
        kmain = b.sub(kc, b.srem(kc, _c(u)))
        cur = kloop("kmain", _c(0), kmain, u, cur, u)
        cur = kloop("krest", kmain, kc, 1, cur, 1)

        full = b.and_(b.icmp_signed("==", rows, _c(mr)), b.icmp_signed("==", cols, _c(nv * w)))
        accumulate = b.icmp_signed("!=", acc, _c(0))
        with b.goto_entry_block():
            flag = b.alloca(_I32)
        b.store(ir.Constant(_I32, 0), flag)
        with b.if_else(full) as (then, otherwise):
            with then:
                ptrs = [[b.bitcast(_gep(b, _gep(b, c, b.mul(_c(r), ldc)), v * w), self.vp) for v in range(nv)]
                        for r in range(mr)]
                # two store loops rather than a select: the first K slice must not read C
                with b.if_else(accumulate) as (add, assign):
                    with add:
                        sums = []
                        for r in range(mr):
                            for v in range(nv):
                                p = ptrs[r][v]
                                sums.append(b.fadd(b.load(p, align=self.size), cur[r][v]))
                                b.store(sums[-1], p, align=self.size)
                        b.store(b.zext(self._nonfinite(b, sums), _I32), flag)
                    with assign:
                        for r in range(mr):
                            for v in range(nv):
                                b.store(cur[r][v], ptrs[r][v], align=self.size)
                        b.store(b.zext(self._nonfinite(b, [x for row in cur for x in row]), _I32), flag)
            with otherwise:
                with b.goto_entry_block():
                    tmp = b.alloca(ir.ArrayType(t, mr * nr))
                tp = b.bitcast(tmp, self.tp)
                for r in range(mr):
                    for v in range(nv):
                        b.store(cur[r][v], b.bitcast(_gep(b, tp, r * nr + v * w), self.vp), align=self.size)

                def row(r):
                    def col(j):
                        p = _gep(b, c, b.add(b.mul(r, ldc), j))
                        x = b.load(_gep(b, tp, b.add(b.mul(r, _c(nr)), j)))
                        old = b.select(accumulate, b.load(p), ir.Constant(t, 0.0))
                        y = b.fadd(old, x)
                        b.store(y, p)
                        # (only the stored elements: the padding's may be 0 * inf)
                        b.store(b.or_(b.load(flag), b.zext(self._nonfinite(b, [y]), _I32)), flag)
                    _loop(b, _c(0), cols, 1, col, "ecol")
                _loop(b, _c(0), rows, 1, row, "erow")
        b.ret(b.load(flag))
        return fn

    # -- packing ---------------------------------------------------------------------------

    def _zero_fill(self, b, out, k, width, first, name):
        """out[p * width + j] = 0 for p < k, first <= j < width."""
        def row(p):
            _loop(b, first, _c(width), 1,
                  lambda j: b.store(ir.Constant(self.t, 0.0), _gep(b, out, b.add(b.mul(p, _c(width)), j))),
                  name + "j")
        _loop(b, _c(0), k, 1, row, name + "p")

    def _pack(self, name, width):
        """A packing function ``f(extent, kc, src, s_in, s_k, dst)``: for each strip
        of ``width`` indices i (zero padded past ``extent``),
        ``dst[strip][p][i % width] = src[i * s_in + p * s_k]`` for p < kc.

        Whole strips take a fast path: with ``s_in == 1`` a vector copy (k outer,
        so every source line is read once), with ``s_k == 1`` ``group x lanes``
        blocks transposed in registers.  The last partial strip and other strides
        go one element at a time.

        Returns the ``finite_magnitude_bits`` of the largest finite ``|src|`` it
        read: the packing reads every element of the operand once per pass, so the
        driver learns the operands' largest exponents for free."""
        cfg, t = self.cfg, self.t
        w = cfg.lanes
        fn, b = self._function(name, ["i:extent", "i:kc", "p:src", "i:s_in", "i:s_k", "p:dst"], self.ity)
        extent, kc, src, s_in, s_k, dst = fn.args
        src.add_attribute("noalias")
        dst.add_attribute("noalias")
        # elements one vector copy moves, and indices one register transpose takes
        chunk = group = w if width % w == 0 else width
        can_transpose = _pow2(group) and group <= w
        whole = b.mul(b.sdiv(extent, _c(width)), _c(width))
        together = w // width if w % width == 0 else 1
        # one running max per width of the loads (kept in registers by -O1's SROA)
        top = _RunningMax(self, b)

        def seen(*x):
            top.seen(b, *x)

        def vec(n):
            return ir.VectorType(t, n).as_pointer()

        def strip_out(i0):
            return _gep(b, dst, b.mul(i0, kc))

        def element(i0, out, i, p):
            x = b.load(_gep(b, src, b.add(b.mul(b.add(i0, i), s_in), b.mul(p, s_k))))
            seen(x)
            b.store(x, _gep(b, out, b.add(b.mul(p, _c(width)), i)))

        def scalar(i0, count):
            out = strip_out(i0)
            _loop(b, _c(0), kc, 1, lambda p: _loop(b, _c(0), count, 1, lambda i: element(i0, out, i, p), "psi"),
                  "psp")
            with b.if_then(b.icmp_signed("<", count, _c(width))):
                self._zero_fill(b, out, kc, width, count, "psz")

        def copy_rows():
            # strips outer, k inner (the destination is written sequentially); narrow
            # strips go `together` at a time so each read covers a whole vector
            def strips(i0, together):
                size = chunk * together

                def row(p):
                    s = _gep(b, src, b.add(b.mul(p, s_k), i0))
                    for v in range(width // chunk):
                        x = b.load(b.bitcast(_gep(b, s, v * size), vec(size)), align=self.size)
                        seen(x)
                        for h in range(together):
                            part = x if together == 1 else b.shuffle_vector(
                                x, x, ir.Constant(ir.VectorType(_I32, chunk), list(range(h * chunk, (h + 1) * chunk))))
                            d = _gep(b, strip_out(b.add(i0, _c(h * width))), b.add(b.mul(p, _c(width)), _c(v * chunk)))
                            b.store(part, b.bitcast(d, vec(chunk)), align=self.size)
                _loop(b, _c(0), kc, 1, row, "pcp")

            span = width * together
            grouped = b.mul(b.sdiv(whole, _c(span)), _c(span))
            _loop(b, _c(0), grouped, span, lambda i0: strips(i0, together), "pcs")
            if together > 1:   # the strips left over, one at a time
                _loop(b, grouped, whole, width, lambda i0: strips(i0, 1), "pc1")

        def transpose_strips():
            kfull = b.sub(kc, b.srem(kc, _c(w)))
            per = w // group                              # k's per transposed vector

            def strip(i0):
                out = strip_out(i0)

                def block(p0, g0):
                    # one group x lanes block (a loop over the groups, not unrolled: the
                    # shuffles dominate the module's compile time)
                    rows = [b.load(b.bitcast(_gep(b, src, b.add(b.mul(b.add(b.add(i0, g0), _c(r)), s_in), p0)),
                                             vec(w)), align=self.size) for r in range(group)]
                    seen(*rows)
                    for q, v in enumerate(_transpose(b, rows)):
                        for h in range(per):
                            d = _gep(b, out, b.add(b.mul(b.add(p0, _c(q * per + h)), _c(width)), g0))
                            if per > 1:
                                v_h = b.shuffle_vector(v, v, ir.Constant(ir.VectorType(_I32, group),
                                                                         list(range(h * group, (h + 1) * group))))
                            else:
                                v_h = v
                            b.store(v_h, b.bitcast(d, vec(group)), align=self.size)
                _loop(b, _c(0), kfull, w, lambda p0: _loop(b, _c(0), _c(width), group,
                                                           lambda g0: block(p0, g0), "ptg"), "ptb")
                _loop(b, kfull, kc, 1, lambda p: _loop(b, _c(0), _c(width), 1,
                                                       lambda i: element(i0, out, i, p), "pti"), "ptp")
            _loop(b, _c(0), whole, width, strip, "pts")

        def scalar_strips():
            _loop(b, _c(0), whole, width, lambda i0: scalar(i0, _c(width)), "pss")

        with b.if_else(b.icmp_signed("==", s_in, _c(1))) as (then, otherwise):
            with then:
                copy_rows()
            with otherwise:
                if can_transpose:
                    with b.if_else(b.icmp_signed("==", s_k, _c(1))) as (then2, otherwise2):
                        with then2:
                            transpose_strips()
                        with otherwise2:
                            scalar_strips()
                else:
                    scalar_strips()
        with b.if_then(b.icmp_signed("<", whole, extent)):
            scalar(whole, b.sub(extent, whole))
        b.ret(top.finite_bits(b, lambda: self.exact_top(b, extent, kc, src, s_in, s_k)))
        return fn

    def pack_a(self):
        """ap[i // mr][p][i % mr] = A[i, p] for i < mc, p < kc (zeros past mc)."""
        return self._pack(f"ember_gemm_{self.cfg.suffix}_packa", self.cfg.mr)

    def pack_b(self):
        """bp[j // nr][p][j % nr] = B[p, j] for p < kc, j < nc (zeros past nc)."""
        return self._pack(f"ember_gemm_{self.cfg.suffix}_packb", self.cfg.nr)

    # -- matrix-vector products -----------------------------------------------------------

    # rows of A a gemv walks together: one accumulator per row is a chain of
    # dependent multiply-adds (latency-bound), four hide the latency
    GEMV_ROWS = 4

    def gemv(self):
        """``c[i * ldc] = sum_p a[i * rsa + p] * bv[p]`` for i < m (a product with one
        column, A's rows and B's column contiguous), returning 1 when a value it
        stores is not finite and writing to ``bits[0]``/``bits[1]`` the
        ``finite_magnitude_bits`` of the largest finite ``|a|`` and ``|bv|`` (what the
        packing reports in a gemm).  Packed, such a product runs the narrowest tile
        on one column of a vector's width of padding and packs A first: a
        [1000, 64] @ [64, 1] product took ~30 us, one vector dot per row ~4, and
        four rows at a time (f64, AVX2, jitted) 35 -> 14 us.

        ``GEMV_ROWS`` rows go through the k loop together, each summed as a row
        alone is (a vector of partial sums over k, its lanes added in order, then
        the scalar tail), so a row's bits do not depend on its neighbours."""
        cfg, t, vt = self.cfg, self.t, self.vt
        w, g = cfg.lanes, self.GEMV_ROWS
        fn, b = self._function(f"ember_gemm_{cfg.suffix}_gemv",
                               ["i:m", "i:k", "p:a", "i:rsa", "p:bv", "p:c", "i:ldc", "q:bits"], _I32)
        m, k, A, rsa, B, C, ldc, bits = fn.args
        for p in (A, B, C):
            p.add_attribute("noalias")
        op = "fma" if cfg.fma else "fmuladd"
        fma1 = self._intrinsic(f"llvm.{op}.{cfg.suffix}", t, [t] * 3)
        vp = self.vp
        # running values in allocas (registers after -O1's SROA), all in the entry block
        accs = [b.alloca(vt) for _ in range(g)]
        saccs = [b.alloca(t) for _ in range(g)]
        top_a, top_b = _RunningMax(self, b), _RunningMax(self, b)
        flag = b.alloca(_I32)
        b.store(ir.Constant(_I32, 0), flag)
        kv = b.sub(k, b.srem(k, _c(w)))

        _loop(b, _c(0), kv, w, lambda p: top_b.seen(b, b.load(b.bitcast(_gep(b, B, p), vp), align=self.size)),
              "gvb")
        _loop(b, kv, k, 1, lambda p: top_b.seen(b, b.load(_gep(b, B, p))), "gvbt")

        def rows(count):
            def body(i):
                a = [_gep(b, A, b.mul(b.add(i, _c(r)), rsa)) for r in range(count)]
                for r in range(count):
                    b.store(ir.Constant(vt, [0.0] * w), accs[r])

                def vstep(p):
                    bv = b.load(b.bitcast(_gep(b, B, p), vp), align=self.size)
                    av = [b.load(b.bitcast(_gep(b, a[r], p), vp), align=self.size) for r in range(count)]
                    top_a.seen(b, *av)
                    for r in range(count):
                        b.store(b.call(self.fma, [av[r], bv, b.load(accs[r])]), accs[r])
                _loop(b, _c(0), kv, w, vstep, f"gvk{count}")
                for r in range(count):
                    v = b.load(accs[r])
                    total = b.extract_element(v, ir.Constant(_I32, 0))
                    for lane in range(1, w):
                        total = b.fadd(total, b.extract_element(v, ir.Constant(_I32, lane)))
                    b.store(total, saccs[r])

                def sstep(p):
                    bs = b.load(_gep(b, B, p))
                    xs = [b.load(_gep(b, a[r], p)) for r in range(count)]
                    top_a.seen(b, *xs)
                    for r in range(count):
                        b.store(b.call(fma1, [xs[r], bs, b.load(saccs[r])]), saccs[r])
                _loop(b, kv, k, 1, sstep, f"gvt{count}")
                res = [b.load(saccs[r]) for r in range(count)]
                for r in range(count):
                    b.store(res[r], _gep(b, C, b.mul(b.add(i, _c(r)), ldc)))
                b.store(b.or_(b.load(flag), b.zext(self._nonfinite(b, res), _I32)), flag)
            return body

        grouped = b.sub(m, b.srem(m, _c(g)))
        _loop(b, _c(0), grouped, g, rows(g), "gvr")
        _loop(b, grouped, m, 1, rows(1), "gvr1")
        self._store_top_bits(b, bits, top_a.finite_bits(b, lambda: self.exact_top(b, m, k, A, rsa, _c(1))),
                             top_b.finite_bits(b, lambda: self.exact_top(b, k, _c(1), B, _c(1), _c(1))))
        b.ret(b.load(flag))
        return fn

    def _store_top_bits(self, b, bits, a_top, b_top):
        """The overflow report: the largest ``finite_magnitude_bits`` of A's and B's
        elements, as int64, to ``bits[0]`` and ``bits[1]``."""
        for j, best in enumerate((a_top, b_top)):
            b.store(best if self.ity.width == 64 else b.zext(best, _I64), _gep(b, bits, j))

    def short_k(self):
        """``C = A @ B`` for a product contracting at most ``SHORT_K`` elements with B's
        rows contiguous and ``n`` a multiple of the vector width (so no scalar tail
        code: each k is its own unrolled loop, ~15 ms of the module's compile time):
        per row of C, each vector of columns is ``k`` multiply-adds
        of a broadcast A element with a vector of B's row, in the order of k from
        zero, as the packed tile sums (so the same bits), without packing either
        operand (a PINN's first layer, [1000, 3] @ [3, 64]: the packing and the
        per-tile calls cost more than the arithmetic).  Returns and reports as
        `gemv` does."""
        cfg, vt = self.cfg, self.vt
        w = cfg.lanes
        fn, b = self._function(f"ember_gemm_{cfg.suffix}_short_k",
                               ["i:m", "i:n", "i:k", "p:a", "i:rsa", "i:csa", "p:bv", "i:rsb", "p:c", "i:ldc",
                                "q:bits"], _I32)
        m, n, k, A, rsa, csa, B, rsb, C, ldc, bits = fn.args
        for p in (A, B, C):
            p.add_attribute("noalias")
        vp = self.vp
        top_a, top_b = _RunningMax(self, b), _RunningMax(self, b)
        flag = b.alloca(_I32)
        bad_v = b.alloca(ir.VectorType(ir.IntType(1), w))   # lanes of C that were not finite
        b.store(ir.Constant(ir.VectorType(ir.IntType(1), w), [0] * w), bad_v)
        b.store(ir.Constant(_I32, 0), flag)
        nv = n
        undef = ir.Constant(vt, None)
        splat0 = ir.Constant(ir.VectorType(_I32, w), [0] * w)

        def b_row(p):
            r = _gep(b, B, b.mul(p, rsb))
            _loop(b, _c(0), nv, w, lambda j: top_b.seen(b, b.load(b.bitcast(_gep(b, r, j), vp), align=self.size)),
                  "skbv")
        _loop(b, _c(0), k, 1, b_row, "skb")

        inf_v = ir.Constant(vt, [float("inf")] * w)

        def rows_of(kk):
            # k = kk, unrolled: the row's kk elements of A loaded and broadcast once
            def row(i):
                a = _gep(b, A, b.mul(i, rsa))
                c = _gep(b, C, b.mul(i, ldc))
                xs = [b.load(_gep(b, a, b.mul(_c(p_), csa))) for p_ in range(kk)]
                top_a.seen(b, *xs)
                xv = [b.shuffle_vector(b.insert_element(undef, x, ir.Constant(_I32, 0)), undef, splat0) for x in xs]

                def vcol(j):
                    v = ir.Constant(vt, [0.0] * w)
                    for p_ in range(kk):
                        bv = b.load(b.bitcast(_gep(b, B, b.add(b.mul(_c(p_), rsb), j)), vp), align=self.size)
                        v = b.call(self.fma, [xv[p_], bv, v])
                    b.store(v, b.bitcast(_gep(b, c, j), vp), align=self.size)
                    b.store(b.or_(b.load(bad_v), b.fcmp_unordered("uge", self.fabs(b, v), inf_v)), bad_v)

                _loop(b, _c(0), nv, w, vcol, f"skv{kk}")
            return row

        done = fn.append_basic_block("sk.done")
        for kk in range(1, SHORT_K + 1):
            here, other = fn.append_basic_block(f"sk.k{kk}"), fn.append_basic_block(f"sk.not{kk}")
            b.cbranch(b.icmp_signed("==", k, _c(kk)), here, other)
            b.position_at_end(here)
            _loop(b, _c(0), m, 1, rows_of(kk), f"skr{kk}")
            b.branch(done)
            b.position_at_end(other)
        b.branch(done)
        b.position_at_end(done)
        anybad = b.icmp_unsigned("!=", b.bitcast(b.load(bad_v), ir.IntType(w)), ir.Constant(ir.IntType(w), 0))
        b.store(b.or_(b.load(flag), b.zext(anybad, _I32)), flag)
        self._store_top_bits(b, bits, top_a.finite_bits(b, lambda: self.exact_top(b, m, k, A, rsa, csa)),
                             top_b.finite_bits(b, lambda: self.exact_top(b, k, n, B, rsb, _c(1))))
        b.ret(b.load(flag))
        return fn

    # -- the driver ------------------------------------------------------------------------

    def gemm(self, tiles, pack_a, pack_b, malloc, free, gemv, short_k):
        cfg = self.cfg
        mr, nr = cfg.mr, cfg.nr
        fn, b = self._function(SYMBOLS[np.dtype(cfg.dtype)],
                               ["i:m", "i:n", "i:k", "p:a", "i:rsa", "i:csa", "p:b", "i:rsb", "i:csb",
                                "p:c", "i:ldc", "q:exps"], _I32, internal=False)
        m, n, k, A, rsa, csa, B, rsb, csb, C, ldc, exps = fn.args
        flag = b.alloca(_I32)
        amax, bmax = b.alloca(self.ity), b.alloca(self.ity)
        b.store(ir.Constant(_I32, 0), flag)
        for p in (amax, bmax):
            b.store(ir.Constant(self.ity, 0), p)

        def finish(status, ea, eb):
            with b.if_then(b.icmp_unsigned("!=", exps, ir.Constant(exps.type, None))):
                b.store(ea, exps)
                b.store(eb, _gep(b, exps, 1))
            b.ret(status)

        ret = fn.append_basic_block("ret")
        work = fn.append_basic_block("work")
        empty = b.or_(b.icmp_signed("<=", m, _c(0)), b.icmp_signed("<=", n, _c(0)))
        b.cbranch(empty, ret, work)
        b.position_at_end(work)

        gv_bits = b.alloca(_I64, size=2)
        column = b.and_(b.icmp_signed("==", n, _c(1)),
                        b.and_(b.icmp_signed("==", csa, _c(1)), b.icmp_signed("==", rsb, _c(1))))
        def exponent(j):
            x = b.load(_gep(b, gv_bits, j))
            return frexp_exponent(b, x if self.ity.width == 64 else b.trunc(x, self.ity))

        with b.if_then(b.and_(column, b.icmp_signed(">", k, _c(0)))):
            # one column: a dot per row (see `gemv`)
            status = b.call(gemv, [m, k, A, rsa, B, C, ldc, gv_bits])
            finish(status, exponent(0), exponent(1))
        short = b.and_(b.and_(b.icmp_signed(">", k, _c(0)), b.icmp_signed("<=", k, _c(SHORT_K))),
                       b.and_(b.icmp_signed("==", csb, _c(1)), b.icmp_signed("==", b.srem(n, _c(cfg.lanes)), _c(0))))
        with b.if_then(short):
            status = b.call(short_k, [m, n, k, A, rsa, csa, B, rsb, C, ldc, gv_bits])
            finish(status, exponent(0), exponent(1))

        with b.if_then(b.icmp_signed("<=", k, _c(0))):
            # an empty sum: C = 0
            def zrow(i):
                _loop(b, _c(0), n, 1, lambda j: b.store(ir.Constant(self.t, 0.0),
                                                         _gep(b, C, b.add(b.mul(i, ldc), j))), "zc")
            _loop(b, _c(0), m, 1, zrow, "zr")
            b.branch(ret)

        def blocks(extent, limit, multiple):
            # equal blocks no larger than limit, rounded up to whole strips
            count = b.sdiv(b.add(extent, _c(limit - 1)), _c(limit))
            size = b.sdiv(b.add(extent, b.sub(count, _c(1))), count)
            return b.mul(b.sdiv(b.add(size, _c(multiple - 1)), _c(multiple)), _c(multiple))

        kcb = blocks(k, cfg.kc, 1)
        mcb = blocks(m, cfg.mc, mr)
        ncb = blocks(n, cfg.nc, nr)
        a_len = b.mul(mcb, kcb)
        total = b.add(a_len, b.mul(kcb, ncb))
        raw = b.call(malloc, [b.add(b.mul(total, _c(self.size)), _c(64))])
        with b.if_then(b.icmp_unsigned("==", raw, ir.Constant(_I8P, None))):
            # out of memory: C is left as it was; report it as suspect everywhere (a
            # caller then checks every element against its own row and column)
            finish(ir.Constant(_I32, 1), _c(1 << 20), _c(1 << 20))
        aligned = b.and_(b.add(b.ptrtoint(raw, _I64), _c(63)), _c(-64))
        Ap = b.inttoptr(aligned, self.tp)
        Bp = _gep(b, Ap, a_len)

        def jc_loop(jc):
            nc = _min(b, ncb, b.sub(n, jc))

            def pc_loop(pc):
                kc = _min(b, kcb, b.sub(k, pc))
                bits = b.call(pack_b, [nc, kc, _gep(b, B, b.add(b.mul(pc, rsb), b.mul(jc, csb))), csb, rsb, Bp])
                b.store(_bits_max(b, b.load(bmax), bits), bmax)
                acc = b.zext(b.icmp_signed(">", pc, _c(0)), _I64)

                def ic_loop(ic):
                    mc = _min(b, mcb, b.sub(m, ic))
                    bits = b.call(pack_a, [mc, kc, _gep(b, A, b.add(b.mul(ic, rsa), b.mul(pc, csa))), rsa, csa, Ap])
                    b.store(_bits_max(b, b.load(amax), bits), amax)

                    def jr_loop(jr):
                        cols = _min(b, _c(nr), b.sub(nc, jr))
                        bstrip = _gep(b, Bp, b.mul(jr, kc))

                        def strip(kernel):
                            def ir_loop(kernel, rows_per):
                                def call(i):
                                    rows = _min(b, _c(rows_per), b.sub(mc, i))
                                    cp = _gep(b, C, b.add(b.mul(b.add(ic, i), ldc), b.add(jc, jr)))
                                    bad = b.call(kernel, [kc, _gep(b, Ap, b.mul(i, kc)), bstrip, cp, ldc, rows,
                                                          cols, acc])
                                    b.store(b.or_(b.load(flag), bad), flag)
                                return call
                            if isinstance(kernel, tuple):   # (kernel of 2 A strips, of 1): whole pairs first
                                pairs = b.mul(b.sdiv(mc, _c(2 * mr)), _c(2 * mr))
                                _loop(b, _c(0), pairs, 2 * mr, ir_loop(kernel[0], 2 * mr), "ir2")
                                _loop(b, pairs, mc, mr, ir_loop(kernel[1], mr), "ir")
                            else:
                                _loop(b, _c(0), mc, mr, ir_loop(kernel, mr), "ir")

                        # the narrowest kernel that covers the strip's columns
                        vectors = b.sdiv(b.add(cols, _c(cfg.lanes - 1)), _c(cfg.lanes))
                        done = fn.append_basic_block("jr.next")
                        for v, kernel in enumerate(tiles[:-1], start=1):
                            here, other = fn.append_basic_block(f"jr.nv{v}"), fn.append_basic_block("jr.wider")
                            b.cbranch(b.icmp_signed("==", vectors, _c(v)), here, other)
                            b.position_at_end(here)
                            strip(kernel)
                            b.branch(done)
                            b.position_at_end(other)
                        strip(tiles[-1])
                        b.branch(done)
                        b.position_at_end(done)
                    _loop(b, _c(0), nc, nr, jr_loop, "jr")
                _loop(b, _c(0), m, mcb, ic_loop, "ic")
            _loop(b, _c(0), k, kcb, pc_loop, "pc")
        _loop(b, _c(0), n, ncb, jc_loop, "jc")
        b.call(free, [raw])
        b.branch(ret)
        b.position_at_end(ret)
        finish(b.load(flag), frexp_exponent(b, b.load(amax)), frexp_exponent(b, b.load(bmax)))
        return fn


def build_ir(configs) -> str:
    """IR text defining ``ember_gemm_<dtype>`` for each ``GemmConfig``.

    Example:

        >>> "ember_gemm_f32_tile1" in build_ir([host_config(np.float32)])
        True
    """
    module = ir.Module(name="ember_gemm")
    malloc = ir.Function(module, ir.FunctionType(_I8P, [_I64]), name="ember_malloc")
    free = ir.Function(module, ir.FunctionType(ir.VoidType(), [_I8P]), name="ember_free")
    for cfg in configs:
        bld = _Builder(module, cfg)
        tiles = [(bld.tile(v, 2), bld.tile(v)) if bld.strips_for(v) == 2 else bld.tile(v)
                 for v in range(1, cfg.nv + 1)]
        bld.gemm(tiles, bld.pack_a(), bld.pack_b(), malloc, free, bld.gemv(), bld.short_k())
    return str(module)


def _register_libc():
    libc = ctypes.CDLL(None)
    for name, fn in (("ember_malloc", libc.malloc), ("ember_free", libc.free)):
        compiler.register_symbol(name, ctypes.cast(fn, ctypes.c_void_p).value)


@functools.lru_cache(maxsize=None)
def _module(configs: tuple) -> compiler.CompiledModule:
    # -O1: the code is vectorised by hand, and the O3 pipeline made it no faster
    # (1024^3 and small products alike) while compiling 1.6x longer (~280 ms per
    # dtype cold; the object code is cached on disk after that)
    _register_libc()
    names = [SYMBOLS[np.dtype(c.dtype)] for c in configs]
    # keyed by this file and the configurations, so a disk-cache hit builds no IR
    # (rendering it takes longer than loading the object code)
    source = f"ember packed gemm {_source_digest()} {configs!r}"
    return compiler.compile_lazy(source, lambda: build_ir(configs), names, opt=1,
                                 externals=("ember_malloc", "ember_free"))


@functools.lru_cache(maxsize=None)
def _source_digest() -> str:
    import hashlib
    with open(__file__, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def address(dtype) -> int:
    """Address of the host's compiled ``ember_gemm_f32``/``ember_gemm_f64``: C ABI
    ``i32 (i64 m, i64 n, i64 k, T* a, i64 rsa, i64 csa, T* b, i64 rsb, i64 csb,
    T* c, i64 ldc, i64* exps)``, computing ``c[i*ldc + j] = sum_p a[i*rsa + p*csa] * b[p*rsb + j*csb]``.
    It returns nonzero iff some element of C is not finite (from the registers it
    stores, so the caller need not scan C) and, unless ``exps`` is null, writes to
    ``exps[0]``/``exps[1]`` the frexp exponents (at least 0) of the largest finite
    magnitudes of A and B (found while packing them), the quantities
    contraction.`overflow_exponent` bounds.

    Example:

        >>> address(np.float32) > 0
        True
    """
    dt = np.dtype(dtype)
    return _module((host_config(dt),))[SYMBOLS[dt]]   # one module per dtype: compiled when first used


# a cached program that calls the gemm can be loaded before anything compiled it
_DTYPE_OF = {sym: dt for dt, sym in SYMBOLS.items()}
compiler.register_symbol_provider(lambda name: address(_DTYPE_OF[name]) if name in _DTYPE_OF else None)


def use_blas() -> bool:
    """True when ``EMBER_GEMM=blas`` routes native products to scipy's BLAS.

    Example:

        >>> isinstance(use_blas(), bool)
        True
    """
    return os.environ.get("EMBER_GEMM", "").strip().lower() == "blas"


def declare(module: ir.Module, dtype) -> ir.Function:
    """Declare ``ember_gemm_f32``/``ember_gemm_f64`` (see ``address``) in ``module``;
    the symbol is bound to the compiled kernel when the module is loaded.

    Example:

        >>> declare(ir.Module(), np.float64).name
        'ember_gemm_f64'
    """
    dt = np.dtype(dtype)
    if dt not in SYMBOLS:
        raise TypeError(f"ember's gemm supports float32 and float64, not {dt}")
    name = SYMBOLS[dt]
    fn = module.globals.get(name)
    if fn is None:
        t = (ir.FloatType() if dt == np.float32 else ir.DoubleType()).as_pointer()
        fn = ir.Function(module, ir.FunctionType(_I32, [_I64] * 3 + [t, _I64, _I64] * 2 + [t, _I64, _I64.as_pointer()]),
                         name=name)
    return fn


def emit_call(builder: ir.IRBuilder, fn, trans_a: bool, trans_b: bool, m, n, k, a, lda, b, ldb, c, ldc,
              exps=None) -> ir.Value:
    """Emit ``C = op(A) @ op(B)`` for row-major operands with leading dimensions
    ``lda``/``ldb``/``ldc`` (``op(X)`` is ``X.T`` when its flag is set, read in
    place through strides).  Sizes are Python ints or i64 values; ``a``, ``b``,
    ``c`` pointers to the element type; ``exps`` an ``i64*`` to two i64 or None.
    Returns the call's i32: nonzero iff some element of C is not finite (see
    ``address``).

    Example:

        >>> m = ir.Module(); fn = declare(m, np.float32)
        >>> f = ir.Function(m, ir.FunctionType(ir.VoidType(), [ir.FloatType().as_pointer()] * 3), "k")
        >>> bld = ir.IRBuilder(f.append_basic_block())
        >>> a, bt, c = f.args
        >>> bad = emit_call(bld, fn, False, True, 64, 64, 32, a, 32, bt, 32, c, 64)   # C = A @ B.T
        >>> str(bad.type)
        'i32'
    """
    v = lambda x: x if isinstance(x, ir.Value) else _c(x)  # noqa: E731
    one = _c(1)
    rsa, csa = (one, v(lda)) if trans_a else (v(lda), one)
    rsb, csb = (one, v(ldb)) if trans_b else (v(ldb), one)
    if exps is None:
        exps = ir.Constant(_I64.as_pointer(), None)
    return builder.call(fn, [v(m), v(n), v(k), a, rsa, csa, b, rsb, csb, c, v(ldc), exps])


_FN = ctypes.CFUNCTYPE(ctypes.c_int32, *([ctypes.c_int64] * 3 + [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64] * 2
                                         + [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]))


@functools.lru_cache(maxsize=None)
def _callable(addr: int):
    return _FN(addr)


@dataclass(frozen=True)
class GemmReport:
    """What one gemm call reports besides C: whether some element of C is not
    finite, and the frexp exponents (at least 0) of the largest finite magnitudes
    of A and of B.

    Example:

        >>> a = np.array([[3.0, np.inf]]); b = np.ones((2, 1))
        >>> matmul_report(a, b, np.empty((1, 1)))
        GemmReport(nonfinite=True, a_exponent=2, b_exponent=1)
    """
    nonfinite: bool
    a_exponent: int
    b_exponent: int


def matmul_report(a: np.ndarray, b: np.ndarray, out: np.ndarray, config: GemmConfig | None = None) -> GemmReport:
    """``out[...] = a @ b`` as ``matmul_into`` does, returning the kernel's
    ``GemmReport`` (what a generated program's overflow check reads).

    Example:

        >>> r = matmul_report(np.eye(2, dtype=np.float32), np.full((2, 2), 8, np.float32),
        ...                   np.empty((2, 2), np.float32))
        >>> r.nonfinite, r.a_exponent, r.b_exponent
        (False, 1, 4)
    """
    dt = np.dtype(out.dtype)
    if dt not in SYMBOLS:
        raise TypeError(f"ember's gemm supports float32 and float64, not {dt}")
    if a.dtype != dt or b.dtype != dt:
        raise TypeError(f"a ({a.dtype}), b ({b.dtype}) and out ({dt}) must have one dtype")
    if a.ndim != 2 or b.ndim != 2 or out.ndim != 2:
        raise ValueError(f"matmul_into takes 2-d arrays, got {a.shape}, {b.shape}, {out.shape}")
    m, k = a.shape
    k2, n = b.shape
    if k != k2 or out.shape != (m, n):
        raise ValueError(f"shape mismatch: a {a.shape} @ b {b.shape} into out {out.shape}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be a writeable C-contiguous array")
    it = dt.itemsize
    addr = address(dt) if config is None else _module((config,))[SYMBOLS[dt]]
    exps = np.zeros(2, np.int64)
    bad = _callable(addr)(m, n, k, a.ctypes.data, a.strides[0] // it, a.strides[1] // it,
                          b.ctypes.data, b.strides[0] // it, b.strides[1] // it, out.ctypes.data, max(n, 1),
                          exps.ctypes.data)
    return GemmReport(bool(bad), int(exps[0]), int(exps[1]))


def matmul_into(a: np.ndarray, b: np.ndarray, out: np.ndarray, config: GemmConfig | None = None) -> np.ndarray:
    """``out[...] = a @ b`` for 2-d arrays of one float dtype, any strides on ``a``
    and ``b``; ``out`` must be C-contiguous.  ``config`` compiles a kernel with
    another tiling (tests use it to cover every register-tile shape).

    Example:

        >>> a = np.arange(6.0).reshape(3, 2)
        >>> matmul_into(a.T, a, np.empty((2, 2)))      # a.T is read in place
        array([[20., 26.],
               [26., 35.]])
    """
    matmul_report(a, b, out, config)
    return out
