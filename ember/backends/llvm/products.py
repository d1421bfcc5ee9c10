"""The kernel emitters of matrix products and convolutions: gemm calls (ember's
packed gemm, or BLAS with EMBER_GEMM=blas) per block, the non-finite /
overflow recomputation after each block, the fused epilogues, and the
per-image patch matrix of a convolution.

Example:
    >>> import ember, numpy as np
    >>> from ember import lax
    >>> from ember.backends.kernels import schedule
    >>> from ember.backends.llvm.codegen import render_program
    >>> from ember.backends.llvm.kernel_target import cpu_target
    >>> g = ember.make_graph(lambda a, b: lax.dot(a, b))(np.ones((4, 4), np.float32), np.ones((4, 4), np.float32))
    >>> "ember_gemm_f32" in render_program(schedule(g, cpu_target()), "m")[0]
    True
"""
from __future__ import annotations

import numpy as np
import llvmlite.ir as ir

from ...fx.prims.contraction import overflow_exponent as _overflow_exponent
from . import blas, packed_gemm, target
from .ops import F64, I32, I64, compute_type
from .values import _key_type


# Small products in hot programs (loop bodies) are written out (`_small_product`):
# at most this many multiply-adds, at most this many elements of an operand packed
# on the stack, C at least this wide to run along its rows, and a row (column)
# of at most this many elements (it lives in registers).
SMALL_FLOPS = 1 << 15
SMALL_PACK = 1 << 13
SMALL_ROW_MIN = 8
SMALL_MAX_RUN = 64


def packed_gemm_depth() -> int:
    """The packed gemm's K slice: up to it, its sums run in k order from zero."""
    return packed_gemm.GemmConfig.kc


class ProductEmitter:
    """The gemm and convolution kernels of `codegen.KernelEmitter` (a mixin: it
    uses the emitter's loops, values and epilogue map kernels)."""

    def _product(self, dt):
        """``emit(trans_a, trans_b, m, n, k, A, lda, B, ldb, C, ldc)``: code for
        ``C = op(A) @ op(B)`` through ember's packed gemm (or BLAS with EMBER_GEMM=blas),
        returning what the packed gemm reports for `_fix_nonfinite` (an i1 "some
        element of C is not finite" and the i64 largest exponents of A and of B), or
        None from BLAS, which reports nothing."""
        b = self.b
        if packed_gemm.use_blas():
            fn = blas.declare_gemm(self.m, dt)

            def emit(ta, tb, m, n, k, A, lda, B, ldb, C, ldc):
                i32 = lambda x: b.trunc(x, I32) if isinstance(x, ir.Value) else x  # noqa: E731
                blas.emit_gemm_call(b, fn, dt, ta, tb, i32(m), i32(n), i32(k), 1.0, A, lda, B, ldb, 0.0, C, ldc)
                return None
        else:
            fn = packed_gemm.declare(self.m, dt)

            def emit(ta, tb, m, n, k, A, lda, B, ldb, C, ldc):
                exps = self._alloca(ir.ArrayType(I64, 2))
                first = b.gep(exps, [ir.Constant(I32, 0), ir.Constant(I32, 0)], inbounds=True)
                bad = packed_gemm.emit_call(b, fn, ta, tb, m, n, k, A, lda, B, ldb, C, ldc, first)
                return (b.icmp_unsigned("!=", bad, ir.Constant(I32, 0)), b.load(first),
                        b.load(b.gep(exps, [ir.Constant(I32, 0), ir.Constant(I32, 1)], inbounds=True)))
        return emit

    def _small_product(self, dt, M, N, K):
        """`_product`'s ``emit`` for a whole small product (a loop body's, in a
        hot program), written out: for each row of C (or, when C is fewer than
        `SMALL_ROW_MIN` columns wide, each column) a loop over k carries the row
        in vector registers and adds a broadcast element of op(A) times a row of
        op(B) (a column of op(A) times an element of op(B)) with
        ``llvm.fmuladd``.  Every element is summed in k order from +0, which is
        the packed gemm's arithmetic for k up to its depth slice, so the values
        are the same.  Rows of op(B) (columns of op(A)) that are strided in
        memory are copied to the stack first.  A packed gemm call costs ~1 us,
        ~4 us for a 64x64 matrix-vector product, mostly packing and padding.
        A row-major op(A) times a contiguous column (a matrix-vector product)
        runs as dot products with vector partial sums instead (the transposing
        copy would cost more than the product): the one form whose rounding can
        differ from the packed gemm's, as any other accumulation order.
        Returns what the packed gemm reports, from flat scans of the operands."""
        b = self.b
        ty = compute_type(dt)
        lanes = max(1, target.vector_bits() // (8 * dt.itemsize))
        vty = ir.VectorType(ty, lanes)
        c64 = lambda v: ir.Constant(I64, v)  # noqa: E731
        i0 = ir.Constant(ir.IntType(32), 0)
        vfma = self.m.globals.get(f"llvm.fmuladd.v{lanes}{'f32' if ty != F64 else 'f64'}")
        if vfma is None:
            vfma = ir.Function(self.m, ir.FunctionType(vty, [vty] * 3),
                               name=f"llvm.fmuladd.v{lanes}{'f32' if ty != F64 else 'f64'}")

        def elem(p, ld, trans, i, j):   # element (i, j) of op(p), stored row-major with stride ld
            return b.gep(p, [b.add(b.mul(j, c64(ld)), i) if trans else b.add(b.mul(i, c64(ld)), j)], inbounds=True)

        def stack(n):
            arr = self._alloca(ir.ArrayType(ty, n))
            return lambda idx: b.gep(arr, [i0, idx], inbounds=True)

        def vload(p):
            return b.load(b.bitcast(p, vty.as_pointer()), align=dt.itemsize)

        def vstore(v, p):
            b.store(v, b.bitcast(p, vty.as_pointer()), align=dt.itemsize)

        def sweep(width, depth, scalar_at, run_at, out_at):
            """out[x] = sum over t < depth of scalar(t) * run(t)[x] for x < width,
            the run in registers: `lanes`-wide vectors, then scalars."""
            nvec, tail = divmod(width, lanes)
            pre = b.block
            head = self.fn.append_basic_block("small.k")
            exit_ = self.fn.append_basic_block("small.k.exit")
            b.branch(head)
            b.position_at_end(head)
            t = b.phi(I64, "t")
            t.add_incoming(c64(0), pre)
            accs = []
            for q in range(nvec + tail):
                phi = b.phi(vty if q < nvec else ty)
                phi.add_incoming(ir.Constant(phi.type, None) if q < nvec else ir.Constant(ty, 0.0), pre)
                accs.append(phi)
            s = b.load(scalar_at(t))
            splat = b.shuffle_vector(b.insert_element(ir.Constant(vty, ir.Undefined), s, i0),
                                     ir.Constant(vty, ir.Undefined), ir.Constant(ir.VectorType(ir.IntType(32), lanes),
                                                                                  [0] * lanes))
            new = []
            for q, acc in enumerate(accs):
                if q < nvec:
                    new.append(b.call(vfma, [splat, vload(run_at(t, c64(q * lanes))), acc]))
                else:
                    x = nvec * lanes + q - nvec
                    new.append(self.intrinsic("llvm.fmuladd", ty, [s, b.load(run_at(t, c64(x))), acc]))
            nxt = b.add(t, c64(1))
            for acc, v in zip(accs, new):
                acc.add_incoming(v, b.block)
            t.add_incoming(nxt, b.block)
            b.cbranch(b.icmp_signed("<", nxt, c64(depth)), head, exit_)
            b.position_at_end(exit_)
            for q, v in enumerate(new):
                if q < nvec:
                    vstore(v, out_at(c64(q * lanes)))
                else:
                    b.store(v, out_at(c64(nvec * lanes + q - nvec)))

        def dot(pa, pb):
            """sum over t < K of pa[t] * pb[t]: `lanes`-wide partial sums, then a
            pairwise horizontal sum, then the remaining terms in order."""
            nvec = K // lanes
            acc = ir.Constant(vty, None)
            if nvec:
                pre = b.block
                head = self.fn.append_basic_block("small.dot")
                exit_ = self.fn.append_basic_block("small.dot.exit")
                b.branch(head)
                b.position_at_end(head)
                q = b.phi(I64, "q")
                q.add_incoming(c64(0), pre)
                phi = b.phi(vty)
                phi.add_incoming(acc, pre)
                off = b.mul(q, c64(lanes))
                new = b.call(vfma, [vload(b.gep(pa, [off], inbounds=True)), vload(b.gep(pb, [off], inbounds=True)),
                                    phi])
                nxt = b.add(q, c64(1))
                phi.add_incoming(new, b.block)
                q.add_incoming(nxt, b.block)
                b.cbranch(b.icmp_signed("<", nxt, c64(nvec)), head, exit_)
                b.position_at_end(exit_)
                acc = new
            width = lanes
            while width > 1:
                width //= 2
                lo = b.shuffle_vector(acc, ir.Constant(vty, ir.Undefined),
                                      ir.Constant(ir.VectorType(ir.IntType(32), lanes),
                                                  [i + width if i < width else i for i in range(lanes)]))
                acc = b.fadd(acc, lo)
            total = b.extract_element(acc, i0)
            for t in range(nvec * lanes, K):
                total = self.intrinsic("llvm.fmuladd", ty, [b.load(b.gep(pa, [c64(t)], inbounds=True)),
                                                            b.load(b.gep(pb, [c64(t)], inbounds=True)), total])
            return total

        def report(A, B, C):
            """What the packed gemm reports (`_product`), by flat scans of the whole
            operands and result (contiguous: the product is one block)."""
            flag = self._alloca(I32)
            b.store(ir.Constant(I32, 0), flag)
            inf = ir.Constant(ty, float("inf"))

            def bad(t):
                x = b.load(b.gep(C, [t], inbounds=True))
                nf = b.fcmp_unordered("uge", self.intrinsic("llvm.fabs", ty, [x]), inf)
                b.store(b.or_(b.load(flag), b.zext(nf, I32)), flag)
            self.loop(c64(0), c64(M * N), bad, "snf")
            ea = self._max_exponent(dt, lambda f: self.loop(c64(0), c64(M * K),
                                                            lambda t: f(b.gep(A, [t], inbounds=True)), "sea"))
            eb = self._max_exponent(dt, lambda f: self.loop(c64(0), c64(K * N),
                                                            lambda t: f(b.gep(B, [t], inbounds=True)), "seb"))
            return b.icmp_unsigned("!=", b.load(flag), ir.Constant(I32, 0)), ea, eb

        def emit(ta, tb, m, n, kk, A, lda, B, ldb, C, ldc):
            if N >= SMALL_ROW_MIN:
                if tb:   # op(B)'s rows are strided: copy op(B) row-major
                    bp = stack(K * N)
                    self.loop(c64(0), c64(N), lambda j: self.loop(c64(0), c64(K), lambda t: b.store(
                        b.load(elem(B, ldb, True, t, j)), bp(b.add(b.mul(t, c64(N)), j))), "sp1"), "sp0")
                    brow = lambda t, j: bp(b.add(b.mul(t, c64(N)), j))  # noqa: E731
                else:
                    brow = lambda t, j: elem(B, ldb, False, t, j)  # noqa: E731
                self.loop(c64(0), c64(M), lambda i: sweep(
                    N, K, lambda t: elem(A, lda, ta, i, t), brow, lambda j: elem(C, ldc, False, i, j)), "srow")
            elif not ta and (tb or N == 1):
                # rows of op(A) and columns of op(B) contiguous: each element a dot
                # product with `lanes` partial sums (the one form here whose order
                # differs from the packed gemm's; a transposing copy of A costs more
                # than the product)
                self.loop(c64(0), c64(M), lambda i: self.loop(c64(0), c64(N), lambda j: b.store(
                    dot(elem(A, lda, False, i, c64(0)), elem(B, ldb, True, c64(0), j)),
                    elem(C, ldc, False, i, j)), "sd1"), "sd0")
            else:
                if not ta:   # op(A)'s columns are strided: copy op(A) column-major
                    ap = stack(K * M)
                    self.loop(c64(0), c64(M), lambda i: self.loop(c64(0), c64(K), lambda t: b.store(
                        b.load(elem(A, lda, False, i, t)), ap(b.add(b.mul(t, c64(M)), i))), "sp1"), "sp0")
                    acol = lambda t, i: ap(b.add(b.mul(t, c64(M)), i))  # noqa: E731
                else:
                    acol = lambda t, i: elem(A, lda, True, i, t)  # noqa: E731
                col = stack(M)

                def column(j):
                    sweep(M, K, lambda t: elem(B, ldb, tb, t, j), acol, col)
                    self.loop(c64(0), c64(M), lambda i: b.store(b.load(col(i)), elem(C, ldc, False, i, j)), "sc3")
                self.loop(c64(0), c64(N), column, "scol")
            return report(A, B, C)
        return emit

    def emit_gemm(self, k):
        """For each task t in [start, stop): one gemm call computing one block of one
        product, then the epilogue kernels on that block."""
        b = self.b
        dt = np.dtype(k.dtype)
        if (getattr(self, "small_products", False) and tuple(k.grid) == (1, 1)
                and k.m * k.n * k.k <= SMALL_FLOPS and k.k * max(k.m, k.n) <= SMALL_PACK
                and (k.n if k.n >= SMALL_ROW_MIN else k.m) <= SMALL_MAX_RUN
                and k.k <= packed_gemm_depth()):
            product = self._small_product(dt, k.m, k.n, k.k)
        else:
            product = self._product(dt)
        A, B, C = self.ptrs[k.a], self.ptrs[k.b], self.ptrs[k.out]
        m, n, kk = k.m, k.n, k.k
        nr, nc = k.grid
        lda = m if k.trans_a else kk
        ldb = kk if k.trans_b else n
        c64 = lambda v: ir.Constant(I64, v)  # noqa: E731

        def span(idx, block, extent):
            lo = b.mul(idx, c64(block))
            cnt = b.sub(c64(extent), lo)
            return lo, b.select(b.icmp_signed("<", cnt, c64(block)), cnt, c64(block))

        def block(bi, r0, rows, c0, cols):
            a_off = b.add(b.add(b.mul(bi, c64(m * kk)), b.mul(r0, c64(1 if k.trans_a else kk))),
                          c64(k.a_offset))
            b_off = b.add(b.add(b.mul(bi, c64(kk * n)), b.mul(c0, c64(kk if k.trans_b else 1))),
                          c64(k.b_offset))
            c_off = b.add(b.add(b.mul(bi, c64(m * n)), b.mul(r0, c64(n))), c0)
            ab, bb, cb = b.gep(A, [a_off], inbounds=True), b.gep(B, [b_off], inbounds=True), b.gep(C, [c_off], inbounds=True)
            report = product(k.trans_a, k.trans_b, rows, cols, kk, ab, lda, bb, ldb, cb, n)
            self._fix_nonfinite(dt, rows, cols, kk, ab, lda, k.trans_a, bb, ldb, k.trans_b, cb, n, report)
            # the epilogues over the block: rows outer, columns inner (contiguous)
            for e in k.epilogue:
                self._forget()

                def outer(v, e=e):
                    self.vars[0] = v

                    def inner(w):
                        self.vars[1] = w
                        self._map_element(e)
                    self.loop(c0, b.add(c0, cols), inner, "e1")
                self.loop(r0, b.add(r0, rows), outer, "e0")
            self._forget()

        def task(t):
            r0, rows = span(b.srem(b.sdiv(t, c64(nc)), c64(nr)), k.mblock, m)
            c0, cols = span(b.srem(t, c64(nc)), k.nblock, n)
            block(b.sdiv(t, c64(nr * nc)), r0, rows, c0, cols)

        if nr * nc > 1:
            # the whole range on one thread: one call per product packs each operand once
            whole = b.and_(b.icmp_signed("==", self.start, c64(0)), b.icmp_signed("==", self.stop, c64(k.tasks)))
            with b.if_else(whole) as (then, otherwise):
                with then:
                    self.loop(c64(0), c64(k.batch), lambda bi: block(bi, c64(0), c64(m), c64(0), c64(n)), "prod")
                with otherwise:
                    self.loop(self.start, self.stop, task, "task")
        else:
            self.loop(self.start, self.stop, task, "task")
        b.ret_void()

    def _fix_nonfinite(self, dt, rows, cols, kk, A, lda, ta, B, ldb, tb, C, ldc, report=None):
        """After a gemm of a rows x cols block: recompute, with the reference's
        arithmetic (contraction.`_recompute_nonfinite`), every element that is not
        finite or whose partial sums could overflow (the exponents of its row's and
        column's largest finite magnitudes, plus log2(k), reach the format's
        maximum), so an infinity or NaN comes only from an overflowing exact result
        or from the operands, never from the FMA accumulation's partial sums, and
        which elements are recomputed does not depend on the accumulation order.
        ``report`` is what the packed gemm returns (`_product`): whether C has a
        non-finite element and the block operands' largest exponents, found in its
        registers and while packing, so ordinary blocks pay no scan at all; without
        it (BLAS) they pay a vectorised scan of the block and of its operands."""
        b = self.b
        ty = compute_type(dt)
        c64 = lambda v: ir.Constant(I64, v)  # noqa: E731
        inf = ir.Constant(ty, float("inf"))
        limit = c64(_overflow_exponent(dt, kk))

        def at(p, ld, trans, i, j):   # element (i, j) of op(p), stored row-major with stride ld
            return b.gep(p, [b.add(b.mul(j, c64(ld)), i) if trans else b.add(b.mul(i, c64(ld)), j)], inbounds=True)

        def nonfinite(x):
            return b.fcmp_unordered("uge", self.intrinsic("llvm.fabs", ty, [x]), inf)

        if report is not None:
            any_bad, ea_all, eb_all = report
        else:
            flag = self._alloca(I32)
            b.store(ir.Constant(I32, 0), flag)

            def scan_row(r):
                self.loop(c64(0), cols, lambda c: b.store(
                    b.or_(b.load(flag), b.zext(nonfinite(b.load(at(C, ldc, False, r, c))), I32)), flag), "nf1")
            self.loop(c64(0), rows, scan_row, "nf0")
            any_bad = b.icmp_unsigned("!=", b.load(flag), ir.Constant(I32, 0))

            # could any element's partial sums overflow?  (the block's largest operands,
            # visited in memory order)
            def block_walk(p, ld, trans, n_i, n_j, name):
                # op(p) is n_i x n_j; stored row-major as n_j x n_i when transposed
                def walk(f):
                    if trans:
                        self.loop(c64(0), n_j, lambda j: self.loop(c64(0), n_i, lambda i: f(at(p, ld, True, i, j)),
                                                                   name + "1"), name + "0")
                    else:
                        self.loop(c64(0), n_i, lambda i: self.loop(c64(0), n_j, lambda j: f(at(p, ld, False, i, j)),
                                                                   name + "1"), name + "0")
                return walk
            ea_all = self._max_exponent(dt, block_walk(A, lda, ta, rows, c64(kk), "nfa"))
            eb_all = self._max_exponent(dt, block_walk(B, ldb, tb, c64(kk), cols, "nfb"))
        risky = b.icmp_signed(">=", b.add(ea_all, eb_all), limit)
        with b.if_then(b.or_(any_bad, risky), likely=False):
            fix = self._recompute_function(dt, ta, tb)
            b.call(fix, [rows, cols, c64(kk), A, c64(lda), B, c64(ldb), C, c64(ldc), risky, limit])

    def _recompute_function(self, dt, ta, tb):
        """The module's cold `_fix_nonfinite` recomputation for `dt` and the operand
        layouts, one internal noinline function taking the sizes as arguments
        (``rows, cols, k, A, lda, B, ldb, C, ldc, risky, limit``): emitted inline
        after every gemm block, LLVM optimised (and vectorised) a copy of this
        rarely-run code per call site, ~40% of a small MLP program's compile time."""
        name = f"ember.recompute_nonfinite.{dt.name}.{int(ta)}{int(tb)}"
        fn = self.m.globals.get(name)
        if fn is not None:
            return fn
        ty = compute_type(dt)
        pty = ty.as_pointer()
        fn = ir.Function(self.m, ir.FunctionType(ir.VoidType(), [I64, I64, I64, pty, I64, pty, I64, pty, I64,
                                                               ir.IntType(1), I64]), name=name)
        fn.linkage = "internal"
        for attr in ("nounwind", "noinline", "cold"):
            fn.attributes.add(attr)
        rows, cols, kk, A, lda, B, ldb, C, ldc, risky, limit = fn.args
        saved = self.fn, self.b
        self.fn, self.b = fn, ir.IRBuilder(fn.append_basic_block("entry"))
        b = self.b
        c64 = lambda v: ir.Constant(I64, v)  # noqa: E731
        inf = ir.Constant(ty, float("inf"))

        def at(p, ld, trans, i, j):   # element (i, j) of op(p), stored row-major with stride ld
            return b.gep(p, [b.add(b.mul(j, ld), i) if trans else b.add(b.mul(i, ld), j)], inbounds=True)

        def fix(r, c):
            p = at(C, ldc, False, r, c)
            bad = b.fcmp_unordered("uge", self.intrinsic("llvm.fabs", ty, [b.load(p)]), inf)
            with b.if_then(b.or_(bad, risky)):
                ea = self._max_exponent(dt, lambda f: self.loop(c64(0), kk, lambda t: f(at(A, lda, ta, r, t)), "nfr"))
                eb = self._max_exponent(dt, lambda f: self.loop(c64(0), kk, lambda t: f(at(B, ldb, tb, t, c)), "nfc"))
                with b.if_then(b.or_(bad, b.icmp_signed(">=", b.add(ea, eb), limit))):
                    v = self._scaled_dot(kk, ea, eb, lambda t: at(A, lda, ta, r, t), lambda t: at(B, ldb, tb, t, c))
                    b.store(v if ty == F64 else b.fptrunc(v, ty), p)
        self.loop(c64(0), rows, lambda r: self.loop(c64(0), cols, lambda c: fix(r, c), "nf3"), "nf2")
        b.ret_void()
        self.fn, self.b = saved
        return fn

    def _load_f64(self, p):
        x = self.b.load(p)
        return self.b.fpext(x, F64) if x.type != F64 else x

    def _max_exponent(self, dt, walk):
        """The exponent e (frexp's: m = f * 2**e, 0.5 <= f < 1), at least 0, of the
        largest finite magnitude among the elements `walk(visit)` visits (pointers).
        The maximum is taken over the magnitudes' bit patterns, an integer max that
        vectorises (for finite floats the orders agree)."""
        b = self.b
        ity = _key_type(compute_type(dt))
        m = self._alloca(ity)
        b.store(ir.Constant(ity, 0), m)

        def visit(p):
            mag = packed_gemm.finite_magnitude_bits(b, b.load(p))
            cur = b.load(m)
            b.store(b.select(b.icmp_unsigned(">", mag, cur), mag, cur), m)
        walk(visit)
        return packed_gemm.frexp_exponent(b, b.load(m))

    def _scaled_dot(self, kk, ea, eb, a_ptr, b_ptr):
        """sum_t a[t] * b[t] in float64 with the vectors scaled by 2**-ea and 2**-eb
        (each as two normal factors) so no product or partial sum overflows, scaled
        back at the end by three normal factors; the same operations in the same
        order as contraction.`_recompute_nonfinite`."""
        b = self.b
        c64 = lambda v: ir.Constant(I64, v)  # noqa: E731

        def pow2(e):
            return b.bitcast(b.shl(b.add(e, c64(1023)), c64(52)), F64)

        def halves(e):
            h = b.ashr(e, c64(1))
            return pow2(b.neg(h)), pow2(b.neg(b.sub(e, h)))

        (a1, a2), (b1, b2) = halves(ea), halves(eb)
        acc = self._alloca(F64)
        b.store(ir.Constant(F64, 0.0), acc)

        def step(t):
            x = b.fmul(b.fmul(self._load_f64(a_ptr(t)), a1), a2)
            y = b.fmul(b.fmul(self._load_f64(b_ptr(t)), b1), b2)
            b.store(b.fadd(b.load(acc), b.fmul(x, y)), acc)
        self.loop(c64(0), kk, step, "nfs")
        e = b.add(ea, eb)
        e1 = b.sdiv(e, c64(3))
        e2 = b.sdiv(b.sub(e, e1), c64(2))
        e3 = b.sub(b.sub(e, e1), e2)
        return b.fmul(b.fmul(b.fmul(b.load(acc), pow2(e1)), pow2(e2)), pow2(e3))

    def emit_conv(self, k):
        """For each image n in [start, stop): its patch matrices, then one gemm per group."""
        b = self.b
        c = k.cols
        dt = np.dtype(k.dtype)
        product = self._product(dt)
        X, W, C = self.ptrs[c.out], self.ptrs[k.w], self.ptrs[k.out]
        c64 = lambda v: ir.Constant(I64, v)  # noqa: E731

        def image(n):
            self._forget()
            self.nest(c.shape[1:], lambda: self._map_element(c), first_parallel=False,
                      ids=range(1, len(c.shape)))
            self._forget()
            for g in range(k.groups):
                cols = b.gep(X, [b.add(b.mul(n, c64(k.groups * k.k * k.p)), c64(g * k.k * k.p))], inbounds=True)
                w = b.gep(W, [c64(g * k.og * k.k)], inbounds=True)
                if k.channels_last:
                    # out[n] is P x O: rows p, columns g*Og .. (g+1)*Og
                    out = b.gep(C, [b.add(b.mul(n, c64(k.p * k.og * k.groups)), c64(g * k.og))], inbounds=True)
                    product(True, True, k.p, k.og, k.k, cols, k.p, w, k.k, out, k.og * k.groups)
                else:
                    out = b.gep(C, [b.add(b.mul(n, c64(k.groups * k.og * k.p)), c64(g * k.og * k.p))],
                                inbounds=True)
                    product(False, False, k.og, k.p, k.k, w, k.k, cols, k.p, out, k.p)

        def body(n):
            self.vars[0] = n
            image(n)
        self.loop(self.start, self.stop, body, "img")
        b.ret_void()
