"""Render scheduled loop kernels (ember.backends.kernels) as LLVM IR: the loop
nests of every kernel kind, one LLVM module per program.

Every kernel follows the kernel ABI of runtime.py, `void k(i64 start, i64 stop,
i8** args)`, with the program's buffer ids as the table's indices; [start,
stop) ranges over the outermost loop, which the runtime splits across threads.

Numeric semantics match the numpy reference: float16/bfloat16 are stored in
their format, computed in float32 and rounded after every primitive (float64 and
32/64-bit integers convert to them with one rounding: to odd into float32 first,
then to nearest even, as the reference does); integer
division by zero gives -1 (remainder: the dividend); float->int conversion
truncates and saturates with NaN -> 0; max/min are IEEE 754-2019 maximum/minimum
(NaN propagates, -0.0 < +0.0).  Reductions put
`reassoc` on the accumulating operation only (so they vectorise) and no other
fast-math flags anywhere.

Example:
    >>> import ember, numpy as np
    >>> from ember import lax
    >>> from ember.backends.kernels import schedule
    >>> from ember.backends.llvm.kernel_target import cpu_target
    >>> g = ember.make_graph(lambda x: lax.exp(x))(np.ones(4, np.float32))
    >>> "k1_exp" in render_program(schedule(g, cpu_target()), "m")[0]
    True
"""
from __future__ import annotations

import numpy as np
import llvmlite.ir as ir

from ... import dtypes as _dt
from ..kernels.affine import affine_terms
from ..kernels.loop_ir import E, ConvKernel, GemmKernel, MapKernel, ReduceKernel, RowKernel, ScatterKernel, linearize
from ...fx.prims.reduce import reduction_identity
from ..kernels.walk import unique_nodes
from .ops import I1, I64, _is_float, compute_type, minmax, storage_type
from .body_sharing import SharedBodies, argument_order, base_offsets
from .products import ProductEmitter
from .values import ValueEmitter, _key_type


class KernelEmitter(ValueEmitter, ProductEmitter):
    """Emits one kernel of a scheduled program: the loop nests of map, reduce,
    row-group and scatter kernels (products and convolutions: products.py) over
    the values of values.py."""

    # --- loops --------------------------------------------------------------------------
    def loop(self, lo, hi, body, name, step=1):
        """for v in [lo, hi) by `step`: body(v); lo/hi are i64 values."""
        b = self.b
        pre = b.block
        head = self.fn.append_basic_block(f"{name}.body")
        exit_ = self.fn.append_basic_block(f"{name}.exit")
        b.cbranch(b.icmp_signed("<", lo, hi), head, exit_)
        b.position_at_end(head)
        v = b.phi(I64, name=name)
        v.add_incoming(lo, pre)
        body(v)
        nxt = b.add(v, ir.Constant(I64, step))
        v.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_signed("<", nxt, hi), head, exit_)
        b.position_at_end(exit_)

    def nest(self, dims, inner, first_parallel=True, k=0, ids=None):
        """Loops over `dims` binding loop variables `ids` (default 0, 1, ...); the
        first loop runs over [start, stop) when `first_parallel`."""
        ids = list(range(len(dims))) if ids is None else list(ids)
        if k == len(dims):
            inner()
            return
        if k == 0 and first_parallel:
            lo, hi = self.start, self.stop
        else:
            lo, hi = ir.Constant(I64, 0), ir.Constant(I64, dims[k])

        def body(v):
            self.vars[ids[k]] = v
            self.nest(dims, inner, first_parallel, k + 1, ids)
        self.loop(lo, hi, body, f"i{ids[k]}")

    def _map_element(self, k):
        v = self.value(k.body)
        at = _lin(k.shape) if k.store is None else k.store
        self.store(k.out, self.address(k.out, at), v, self.buffers[k.out].dtype)

    def _once(self, body):
        """Run `body` once, in whichever range contains index 0 (rank-0 work)."""
        b = self.b
        run = self.fn.append_basic_block("scalar")
        done = self.fn.append_basic_block("done")
        b.cbranch(b.icmp_signed("<", self.start, self.stop), run, done)
        b.position_at_end(run)
        body()
        b.branch(done)
        b.position_at_end(done)

    def emit_map(self, k):
        if not k.shape:
            self._once(lambda: self._map_element(k))
        else:
            j = _transposed_dim(k)
            if j is None:
                self.nest(k.shape, lambda: self._map_element(k))
            else:
                self._tiled_nest(k, j)
        self.b.ret_void()

    def _tiled_nest(self, k, j):
        """The loop nest with dimension j and the last one walked in TILE x TILE
        tiles: the output is written along the last dimension while some input is
        read along dimension j (a transpose); a tile of both stays in cache."""
        b = self.b
        last = len(k.shape) - 1
        c64 = lambda v: ir.Constant(I64, v)  # noqa: E731

        def rng(d):
            return (self.start, self.stop) if d == 0 else (c64(0), c64(k.shape[d]))

        def tile_end(lo, hi):
            e = b.add(lo, c64(TILE))
            return b.select(b.icmp_signed("<", e, hi), e, hi)

        def tile(jb, lb):
            def along_j(vj):
                self.vars[j] = vj

                def along_last(vl):
                    self.vars[last] = vl
                    self._map_element(k)
                self.loop(lb, tile_end(lb, rng(last)[1]), along_last, "tl")
            self.loop(jb, tile_end(jb, rng(j)[1]), along_j, "tj")

        def level(d, jb):
            lo, hi = rng(d)
            if d == last:
                self.loop(lo, hi, lambda lb: tile(jb, lb), "bl", step=TILE)
            elif d == j:
                self.loop(lo, hi, lambda v: level(d + 1, v), "bj", step=TILE)
            else:
                def body(v):
                    self.vars[d] = v
                    level(d + 1, jb)
                self.loop(lo, hi, body, f"i{d}")
        level(0, None)

    def _order_key(self, x, op):
        """The float `x` as a signed integer whose order is IEEE 754's maximum/minimum
        order (-0 < +0), NaN mapped to the integer that wins `op`.  A float max
        (min) reduction runs on these keys: one integer max per element with a
        one-cycle dependency, where `llvm.maximum` is a chain of six instructions
        (signed zeros and NaN) that bounds the loop by latency.  The map is its own
        inverse on non-NaN keys (`_from_order_key`)."""
        ity = _key_type(x.type)
        nan_key = ir.Constant(ity, (1 << (ity.width - 1)) - 1 if op == "max" else 1 << (ity.width - 1))
        return self.b.select(self.b.fcmp_unordered("uno", x, x), nan_key, self._flip_negatives(self.b.bitcast(x, ity)))

    def _from_order_key(self, key, ty):
        return self.b.bitcast(self._flip_negatives(key), ty)

    def _flip_negatives(self, i):
        """Negative values with all bits but the sign inverted: maps float bit
        patterns to order keys and back."""
        b, ity = self.b, i.type
        return b.xor(i, b.and_(b.ashr(i, ir.Constant(ity, ity.width - 1)), ir.Constant(ity, (1 << (ity.width - 1)) - 1)))

    def _reduce_row(self, k):
        """A register-accumulated reduction for the kept index bound in `self.vars`."""
        b = self.b
        acc_dt = _acc_dtype(k.dtype)
        keyed = k.op in ("max", "min") and _is_float(acc_dt)
        ty = compute_type(acc_dt)
        acc = self._alloca(_key_type(ty) if keyed else ty)

        def inner_red():
            v = self.value(k.body)
            v = self.convert(v, self.dtype_of(k.body), acc_dt) if self.dtype_of(k.body) != acc_dt else v
            if keyed:
                key, cur = self._order_key(v, k.op), b.load(acc)
                b.store(b.select(b.icmp_signed(">" if k.op == "max" else "<", key, cur), key, cur), acc)
            else:
                b.store(self.combine(k.op, b.load(acc), v, acc_dt, _extent(k)), acc)

        init = self.identity(k.op, acc_dt)
        b.store(self._order_key(init, k.op) if keyed else init, acc)
        self._forget()
        self.nest([k.space[i] for i in k.axes], inner_red, first_parallel=False, ids=k.axes)
        self._forget()
        res = self._from_order_key(b.load(acc), ty) if keyed else b.load(acc)
        kept = k.kept
        out_idx = self.address(k.out, linearize(tuple(E("v", i) for i in kept), [k.space[i] for i in kept]))
        self.store(k.out, out_idx, self.convert(res, acc_dt, k.dtype), k.dtype)

    def emit_reduce(self, k):
        b = self.b
        acc_dt = _acc_dtype(k.dtype)
        kept = k.kept
        if k.register_accumulator:
            # A register accumulator per output element (strided reads when the reduced
            # axes are not innermost); half-precision sums accumulate in float32.
            if kept:
                self.nest([k.space[i] for i in kept], lambda: self._reduce_row(k), ids=kept)
            else:
                self._once(lambda: self._reduce_row(k))
        else:
            # Accumulate into the (pre-initialised) output in the input's row-major order,
            # so the innermost loop runs over contiguous kept elements and vectorises.
            def inner_all():
                v = self.value(k.body)
                v = self.convert(v, self.dtype_of(k.body), acc_dt) if self.dtype_of(k.body) != acc_dt else v
                lin = linearize(tuple(E("v", ax) for ax in kept), [k.space[ax] for ax in kept])
                idx = self.address(k.out, lin)
                cur = self.load(k.out, lin, k.dtype)
                cur = self.convert(cur, k.dtype, acc_dt) if k.dtype != acc_dt else cur
                new = self.combine(k.op, cur, v, acc_dt, _extent(k))
                self.store(k.out, idx, self.convert(new, acc_dt, k.dtype) if k.dtype != acc_dt else new, k.dtype)
            self.nest(list(k.space), inner_all, first_parallel=0 in kept)
        b.ret_void()

    def emit_scatter(self, k):
        b = self.b

        def element():
            v = self.value(k.body)
            t = self.address(k.out, k.target)
            ok = self.value(k.valid) if k.valid is not None else None
            if ok is not None:
                run = self.fn.append_basic_block("update")
                skip = self.fn.append_basic_block("next")
                b.cbranch(ok, run, skip)
                b.position_at_end(run)
            if k.op == "set":
                new = v
            else:
                cur = self.load(k.out, k.target, k.dtype)
                new = self._combine_scatter(k.op, cur, v, k.dtype)
            self.store(k.out, t, new, k.dtype)
            if ok is not None:
                b.branch(skip)
                b.position_at_end(skip)
            self._forget()

        if k.space:
            self._once(lambda: self.nest(k.space, element, first_parallel=False))
        else:
            self._once(element)
        b.ret_void()

    def _combine_scatter(self, op, cur, v, dt):
        b = self.b
        if op in ("min", "max"):
            return minmax(self, op, cur, v, dt)
        if _is_float(dt):
            return b.fadd(cur, v) if op == "add" else b.fmul(cur, v)
        return b.add(cur, v) if op == "add" else b.mul(cur, v)

    def emit_rows(self, rk):
        r = len(rk.outer)
        for x, target in rk.aliases.items():
            self.ptrs[x] = self.ptrs[target]
        for x, inner in rk.scratch.items():
            # one row, on the stack of the thread running this range of rows
            slot = self.b.alloca(ir.ArrayType(storage_type(self.buffers[x].dtype), inner), name=f"b{x}.row")
            slot.align = 64
            self.ptrs[x] = self.b.gep(slot, [ir.Constant(I64, 0), ir.Constant(I64, 0)], inbounds=True)

        def row():
            for m in rk.members:
                self._forget()
                if isinstance(m, ReduceKernel):
                    self._reduce_row(m)
                else:
                    n = len(m.shape)
                    self.nest(m.shape[r:], lambda m=m: self._map_element(m), first_parallel=False,
                              ids=range(r, n))
            self._forget()
        self.nest(rk.outer, row)
        self.b.ret_void()

    def identity(self, op, dt):
        return self.const(reduction_identity(op, dt), dt)

    def combine(self, op, acc, v, dt, extent=None):
        """`acc op v`; a float sum or product over `extent` elements of at least
        ORDERED_BELOW may be reassociated (it vectorises), a shorter one adds in
        order, so its bits do not depend on the optimisation level (a sampler's
        normalising sum over a few categories is the same whether its program
        compiled at O0 or O3: the docs promise bit-identical random numbers)."""
        b = self.b
        fl = _is_float(dt)
        flags = ("reassoc",) if extent is None or extent >= ORDERED_BELOW else ()
        if acc.type == I1:
            if op in ("or", "max", "sum"):
                return b.or_(acc, v)
            return b.and_(acc, v)
        if op == "sum":
            return b.fadd(acc, v, flags=flags) if fl else b.add(acc, v)
        if op == "prod":
            return b.fmul(acc, v, flags=flags) if fl else b.mul(acc, v)
        if op in ("max", "min"):
            if fl:
                return self.intrinsic("llvm.maximum" if op == "max" else "llvm.minimum", acc.type, [acc, v])
            return minmax(self, op, acc, v, dt)
        if op == "and":
            return b.and_(acc, v)
        if op == "or":
            return b.or_(acc, v)
        raise NotImplementedError(op)



TILE = 16


# float reductions over fewer elements than this add in order (see `combine`)
ORDERED_BELOW = 64


def _extent(k):
    """The number of elements one output of reduction kernel `k` folds."""
    n = 1
    for a in k.axes:
        n *= k.space[a]
    return n


def _transposed_dim(k):
    """For a map kernel that reads some buffer across its innermost loop (stride >=
    16 elements) and along another loop j (stride 1), that j: the nest is tiled."""
    n = len(k.shape)
    if n < 2 or k.shape[-1] < TILE:
        return None
    best = None
    for e in unique_nodes(k.body):
        if e[0] == "load":
            terms = affine_terms(e[2])
            co = terms[0] if terms is not None else None
            if co is not None and abs(co.get(n - 1, 0)) >= 16:
                for j in range(n - 2, -1, -1):
                    if co.get(j) == 1 and k.shape[j] >= TILE:
                        best = j if best is None else max(best, j)
                        break
    return best


def _acc_dtype(dtype):
    return np.dtype(np.float32) if np.dtype(dtype) in (_dt.float16, _dt.bfloat16) else np.dtype(dtype)


def _lin(shape):
    return linearize(tuple(E("v", i) for i in range(len(shape))), shape)


def kernel_names(prog) -> list[str]:
    """The names of the functions `render_program` defines for `prog`."""
    return [s.name for s in prog.steps if isinstance(s, (MapKernel, ReduceKernel, RowKernel, ConvKernel,
                                                          ScatterKernel, GemmKernel))]


def render_program(prog, module_name: str, hot: bool = False) -> tuple[str, list[str]]:
    """LLVM IR text for every kernel of `prog`, and the kernel names.  Kernels
    find their buffers in one pointer table indexed by buffer id.  In a `hot`
    program (a loop body) small matrix products are written out
    (products.`_small_product`) instead of calling the packed gemm."""
    module = ir.Module(name=module_name)
    names = []
    shared = SharedBodies()
    bufs = prog.buffers
    for step in prog.steps:
        if isinstance(step, (MapKernel, ReduceKernel, RowKernel)):
            ids = step.inputs + step.outputs
            em = KernelEmitter(module, step.name, argument_order(step, ids), bufs, base_offsets(step), in_order=True)
            if isinstance(step, MapKernel):
                em.emit_map(step)
            elif isinstance(step, ReduceKernel):
                em.emit_reduce(step)
            else:
                em.emit_rows(step)
        elif isinstance(step, ConvKernel):
            em = KernelEmitter(module, step.name, step.inputs + [step.cols.out, step.out], bufs)
            em.emit_conv(step)
        elif isinstance(step, ScatterKernel):
            em = KernelEmitter(module, step.name, step.inputs + [step.out], bufs)
            em.emit_scatter(step)
        elif isinstance(step, GemmKernel):
            em = KernelEmitter(module, step.name, argument_order(step, step.inputs + step.outputs), bufs,
                               in_order=True)
            em.small_products = hot
            em.emit_gemm(step)
        else:
            continue
        shared.add(em)
        names.append(step.name)
    return shared.module_text(module), names
