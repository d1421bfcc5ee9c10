"""Render a scheduled `Program`'s loop kernels (ember.backends.kernels) to CUDA C:
one ``extern "C" __global__`` function per kernel, after the device helpers of
prelude.py, and the launch shape of each.

- `MapKernel`: a grid-stride loop over the flattened output with 64-bit
  indices; loop variables are recovered from the flat index.
- `ReduceKernel`: one block per output element when the reduced axes are
  innermost (or everything is reduced): the block's threads stride over the
  reduced elements, then fold with warp shuffles and a shared-memory step
  (`ember_block_fold`); otherwise (a column reduction, or short rows) one
  thread per output element, so neighbouring threads read neighbouring
  elements.  Half precision accumulates in float, bool and 8/16-bit integers
  in int (the shuffles' narrowest types; sums and products wrap the same).
- `RowKernel`: one block per row; each member's part of the row in turn
  (a reduction: the block fold, its one element written by thread 0; a map:
  the block strides over the row's slice), `__syncthreads()` between members.
- `ScatterKernel`: with the target's atomic mode, one thread per update and an
  atomic combine (native atomicAdd/Max/Min, else a compare-and-swap loop) for
  4- and 8-byte element types; `set`, 1- and 2-byte types and serial targets
  run the updates in order in one thread (last write wins, as the reference).

- `ConvKernel`: its patch-matrix map kernel (`cols`); the product is a gemm
  of the launcher (launch.py).

`GemmKernel`s (cuBLAS) and `LibraryStep`s are not kernels of this module.
Values follow `backends/llvm`'s semantics (float16/bfloat16 stored as `__half`/
`__nv_bfloat16`, computed in float and rounded after every primitive; IEEE
max/min; numpy's integer division and saturating float->int), except that
reductions and atomic sums combine in a different order.  Every walk over the
expressions is iterative (`kernels.walk.postorder`).

Example:
    >>> import ember, numpy as np
    >>> from ember import lax
    >>> from ember.backends.kernels import schedule
    >>> from ember.backends.cuda.target import cuda_target
    >>> g = ember.make_graph(lambda x: lax.exp(x))(np.ones(4, np.float32))
    >>> mod = render_program(schedule(g, cuda_target()))
    >>> [(k.name, k.params, k.grid, k.block) for k in mod.kernels]
    [('k1_exp', (0, 1), 1, 256)]
    >>> 'extern "C" __global__ void __launch_bounds__(256) k1_exp(' in mod.source
    True
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from ... import dtypes as _dt
from ...fx.prims.reduce import reduction_identity
from ..kernels.loop_ir import ConvKernel, MapKernel, Program, ReduceKernel, RowKernel, ScatterKernel
from ..kernels.walk import postorder
from .ops import LOWERINGS, _is_float, ctype, lowering_of, minmax, storage_ctype
from .prelude import PRELUDE

# threads per block: a multiple of 32 (the folds shuffle whole warps)
BLOCK = 256
# grid-stride loops cover any size; more blocks than this only add scheduling
MAX_GRID = 1 << 16
# a row shorter than this is reduced by one thread (a block would idle)
MIN_BLOCK_ROW = 128

_INDEX_TAGS = frozenset({"v", "c", "+", "*", "/", "%", "clamp", "val"})
_I64 = np.dtype(np.int64)
_HALF = (np.dtype(np.float16), np.dtype(_dt.bfloat16))


@dataclass(frozen=True)
class CudaKernel:
    """One `__global__` function of a rendered module and how to launch it:
    `params` are the program's buffer ids in parameter order (one device
    pointer each), `grid` x `block` threads (grid 0: nothing to compute, skip).

    Example:
        >>> CudaKernel("k1_exp", (0, 1), 1, 256).block
        256
    """
    name: str
    params: tuple
    grid: int
    block: int


@dataclass
class CudaModule:
    """The CUDA C of a program's kernels (`functions`; `source` adds the device
    helpers in front) and their launch records, in program order.

    Example:
        >>> CudaModule("", []).kernels
        []
    """
    functions: str
    kernels: list = field(default_factory=list)

    @property
    def source(self) -> str:
        """The whole translation unit: the device helpers, then the kernels."""
        return PRELUDE + "\n" + self.functions


def _acc_dtype(dtype):
    d = np.dtype(dtype)
    return np.dtype(np.float32) if d in _HALF else d


def _acc_ctype(acc_dt) -> str:
    """The C type a reduction accumulates in: shuffles take no bool/char/short."""
    d = np.dtype(acc_dt)
    if d == _dt.bool_ or (d.kind == "i" and d.itemsize < 4):
        return "int"
    if d.kind == "u" and d.itemsize < 4:
        return "unsigned int"
    return ctype(d)


def _fold_name(op, acc_dt) -> str:
    if np.dtype(acc_dt) == _dt.bool_:
        # bool sums are ors, products ands (the reference's and the CPU's)
        op = "or" if op in ("sum", "max", "or") else "and"
    return f"ember_fold_{op}"


def _grid(n, per_block):
    return 0 if n == 0 else min(-(-n // per_block), MAX_GRID)


def _int_literal(n: int) -> str:
    if n == -(1 << 63):
        return "(-9223372036854775807LL - 1)"
    return f"{n}LL" if n >= 0 else f"(-{-n}LL)"


def literal(value, dtype) -> str:
    """A C expression of `dtype`'s compute type holding exactly `value` (floats
    by their bits when not finite, so NaN payloads and -0.0 survive).

    Example:
        >>> literal(1.5, "float32"), literal(-1, "int8"), literal(float("inf"), "float64")
        ('0x1.8000000000000p+0f', '((signed char)255ull)', '__longlong_as_double(0x7ff0000000000000LL)')
    """
    d = np.dtype(dtype)
    if d == _dt.bool_:
        return "true" if bool(value) else "false"
    if d.kind in "iu":
        return f"(({ctype(d)}){int(value) & ((1 << (8 * d.itemsize)) - 1)}ull)"
    wide = d == _dt.float64
    v = np.asarray(value).astype(d).astype(np.float64 if wide else np.float32)
    if np.isfinite(v):
        return float(v).hex() + ("" if wide else "f")
    if wide:
        return f"__longlong_as_double(0x{int(v.view(np.uint64)):016x}LL)"
    return f"__int_as_float(0x{int(v.view(np.uint32)):08x})"


class _Body:
    """The statements of one kernel scope: every expression node becomes a
    `const` local, emitted after its operands (memoised per scope: values
    computed in one loop are not visible after it)."""

    def __init__(self, kernel, indent):
        self.k = kernel
        self.indent = indent
        self.memo: dict = {}

    def line(self, text):
        self.k.lines.append(" " * self.indent + text)

    def tmp(self, dtype, expr, ctype_=None) -> str:
        """Bind `expr` to a new local of `dtype`'s compute type; returns its name."""
        name = f"t{self.k.counter}"
        self.k.counter += 1
        self.line(f"const {ctype_ or ctype(dtype)} {name} = {expr};")
        return name

    def value(self, e) -> str:
        hit = self.memo.get(e)
        if hit is not None:
            return hit
        memo = self.memo
        for node in postorder(e, lambda n: n in memo):
            memo[node] = self._index_node(node) if node[0] in _INDEX_TAGS else self._value_node(node)
        return memo[e]

    index = value

    def _index_node(self, e):
        t = e[0]
        if t == "v":
            return f"v{e[1]}"
        if t == "c":
            return _int_literal(e[1])
        if t == "+":
            expr = f"{self.index(e[1])} + {self.index(e[2])}"
        elif t == "*":
            expr = f"{self.index(e[1])} * {_int_literal(e[2])}"
        elif t == "/":
            expr = f"{self.index(e[1])} / {_int_literal(e[2])}"
        elif t == "%":
            expr = f"{self.index(e[1])} % {_int_literal(e[2])}"
        elif t == "clamp":
            x, lo, hi = self.index(e[1]), _int_literal(e[2]), _int_literal(e[3])
            expr = f"{x} < {lo} ? {lo} : {x} > {hi} ? {hi} : {x}"
        elif t == "val":
            expr = self.convert(self.value(e[1]), dtype_of(e[1]), _I64)
        else:
            raise ValueError(f"unknown index expression {e!r}")
        return self.tmp(_I64, expr)

    def _value_node(self, e):
        t = e[0]
        if t == "load":
            expr = self.k.load(e[1], self.index(e[2]), e[3])
            d = e[3]
        elif t == "const":
            return literal(e[1], e[2])
        elif t == "index":
            d = np.dtype(e[2])
            expr = self.round_lowp(self.convert(self.index(e[1]), _I64, d), d)
        elif t == "op":
            d = np.dtype(e[3])
            args = e[4:]
            vals = [self.value(a) for a in args]
            in_dt = dtype_of(args[0]) if args else d
            expr = self.round_lowp(lowering_of(e[1])(self, vals, in_dt, d, dict(e[2])), d)
        else:
            raise ValueError(f"unknown value expression {e!r}")
        return self.tmp(d, expr)

    @staticmethod
    def round_lowp(expr, dtype):
        d = np.dtype(dtype)
        if d == _dt.float16:
            return f"ember_round_f16({expr})"
        if d == _dt.bfloat16:
            return f"ember_round_bf16({expr})"
        return expr

    def convert(self, v, src, dst) -> str:
        """`v` (a compute value of dtype `src`) as a compute value of `dst`."""
        src, dst = np.dtype(src), np.dtype(dst)
        if src == dst:
            return v
        if dst == _dt.bool_:
            return f"({v} != 0)"
        if src == _dt.bool_:
            return f"(({ctype(dst)})({v} ? 1 : 0))"
        if dst in _HALF and (src == _dt.float64 or (src.kind in "iu" and src.itemsize >= 4)):
            # one rounding to half: to odd into float32 here, to nearest even after
            return f"ember_to_f32_odd(({ctype(src)}){v})"
        if _is_float(src) and not _is_float(dst):
            info = np.iinfo(dst)
            lo = 0 if dst.kind == "u" else -(2 ** (8 * dst.itemsize - 1))
            hi = info.max + 1
            return (f"ember_f2i<{ctype(dst)}>((double){v}, {float(lo).hex()}, {float(hi).hex()}, "
                    f"{literal(info.min, dst)}, {literal(info.max, dst)})")
        return f"(({ctype(dst)}){v})"


def dtype_of(e):
    """The dtype of a value expression node.

    Example:
        >>> from ember.backends.kernels.loop_ir import E
        >>> dtype_of(E("const", 1.0, np.dtype(np.float32)))
        dtype('float32')
    """
    t = e[0]
    if t == "load":
        return np.dtype(e[3])
    if t in ("const", "index"):
        return np.dtype(e[2])
    return np.dtype(e[3])


class _Kernel:
    """One `__global__` function being written: its parameters (buffer pointers,
    `const __restrict__` for buffers it only reads) and its lines."""

    def __init__(self, prog, step, reads, writes, aliases=None, prefix=""):
        self.prog = prog
        self.name = prefix + re.sub(r"\W", "_", step.name)
        self.lines: list[str] = []
        self.counter = 0
        aliases = aliases or {}
        self.params = tuple(sorted((set(reads) | set(writes)) - set(aliases)))
        self.ptr = {b: f"b{b}" for b in self.params}
        for x, target in aliases.items():
            self.ptr[x] = self.ptr[target]
        self.writes = set(writes)

    def signature(self):
        args = []
        for b in self.params:
            t = storage_ctype(self.prog.buffers[b].dtype)
            args.append(f"{t}* __restrict__ b{b}" if b in self.writes else f"const {t}* __restrict__ b{b}")
        return f'extern "C" __global__ void __launch_bounds__({BLOCK}) {self.name}({", ".join(args)})'

    def load(self, bid, idx, dtype):
        ref = f"{self.ptr[bid]}[{idx}]"
        d = np.dtype(dtype)
        if d == _dt.bool_:
            return f"({ref} != 0)"
        if d == _dt.float16:
            return f"__half2float({ref})"
        if d == _dt.bfloat16:
            return f"__bfloat162float({ref})"
        return ref

    def store(self, body, bid, idx, value, dtype):
        d = np.dtype(dtype)
        if d == _dt.bool_:
            value = f"(unsigned char)({value} ? 1 : 0)"
        elif d == _dt.float16:
            value = f"__float2half_rn({value})"
        elif d == _dt.bfloat16:
            value = f"__float2bfloat16_rn({value})"
        body.line(f"{self.ptr[bid]}[{idx}] = {value};")

    def text(self):
        return "\n".join([self.signature() + " {"] + self.lines + ["}"])

    # --- loops ---------------------------------------------------------------------------------
    def open(self, indent, header):
        self.lines.append(" " * indent + header + " {")

    def close(self, indent):
        self.lines.append(" " * indent + "}")

    def bind_vars(self, body, flat, dims, ids):
        """Declare loop variables `ids` (row-major over `dims`) from the flat index `flat`."""
        strides = [math.prod(dims[j + 1:]) for j in range(len(dims))]
        for j, (n, v, stride) in enumerate(zip(dims, ids, strides)):
            if n == 1:
                body.line(f"const long long v{v} = 0;")
                continue
            q = flat if stride == 1 else f"{flat} / {_int_literal(stride)}"
            body.line(f"const long long v{v} = {q if j == 0 else f'({q}) % {_int_literal(n)}'};")

    def grid_stride(self, indent, var, n, per_block=True):
        """`for var over [0, n)`: across the whole grid (`per_block`: one
        iteration per thread), or one iteration per block."""
        if per_block:
            self.open(indent, f"for (long long {var} = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
                              f"{var} < {_int_literal(n)}; {var} += (long long)gridDim.x * blockDim.x)")
        else:
            self.open(indent, f"for (long long {var} = blockIdx.x; {var} < {_int_literal(n)}; {var} += gridDim.x)")


def _map(prog, k, prefix):
    kern = _Kernel(prog, k, k.inputs, [k.out], prefix=prefix)
    n = math.prod(k.shape)
    kern.grid_stride(2, "i", n)
    body = _Body(kern, 4)
    kern.bind_vars(body, "i", k.shape, range(len(k.shape)))
    at = "i" if k.store is None else body.index(k.store)
    kern.store(body, k.out, at, body.value(k.body), prog.buffers[k.out].dtype)
    kern.close(2)
    return kern, _grid(n, BLOCK), BLOCK


def _fold_elements(kern, k, indent, var, count, start, step):
    """Declare an accumulator, fold `k`'s body over reduced elements `var` =
    start, start+step, ... < count (the reduced axes' flat index); returns the
    accumulator's name and the fold's C names."""
    acc_dt = _acc_dtype(k.dtype)
    act = _acc_ctype(acc_dt)
    fold = _fold_name(k.op, acc_dt)
    ident = literal(reduction_identity(k.op, acc_dt), acc_dt)
    acc = f"acc{kern.counter}"
    kern.counter += 1
    kern.lines.append(" " * indent + f"{act} {acc} = ({act}){ident};")
    kern.open(indent, f"for (long long {var} = {start}; {var} < {_int_literal(count)}; {var} += {step})")
    body = _Body(kern, indent + 2)
    axes = tuple(k.axes)
    kern.bind_vars(body, var, [k.space[a] for a in axes], axes)
    v = body.value(k.body)
    v = body.convert(v, dtype_of(k.body), acc_dt)
    body.line(f"{acc} = {fold}()({acc}, ({act}){v});")
    kern.close(indent)
    return acc, fold, f"({act}){ident}", acc_dt


def _store_acc(kern, k, body, acc, acc_dt, idx):
    value = body.convert(f"(({ctype(acc_dt)}){acc})", acc_dt, k.dtype)
    kern.store(body, k.out, idx, value, k.dtype)


def _block_per_output(k) -> bool:
    n = len(k.space)
    suffix = tuple(k.axes) == tuple(range(n - len(k.axes), n))
    n_red = math.prod(k.space[a] for a in k.axes)
    return not k.kept or (suffix and n_red >= MIN_BLOCK_ROW)


def _reduce(prog, k, prefix):
    kern = _Kernel(prog, k, k.inputs, [k.out], prefix=prefix)
    kept = k.kept
    kdims = [k.space[i] for i in kept]
    n_out = math.prod(kdims)
    n_red = math.prod(k.space[a] for a in k.axes)
    if _block_per_output(k):
        kern.grid_stride(2, "o", n_out, per_block=False)
        outer = _Body(kern, 4)
        kern.bind_vars(outer, "o", kdims, kept)
        acc, fold, ident, acc_dt = _fold_elements(kern, k, 4, "r", n_red, "threadIdx.x", "blockDim.x")
        outer.line(f"{acc} = ember_block_fold({acc}, {fold}(), {ident});")
        outer.line("if (threadIdx.x == 0) {")
        inner = _Body(kern, 6)
        _store_acc(kern, k, inner, acc, acc_dt, "o")
        outer.line("}")
        kern.close(2)
        return kern, _grid(n_out, 1), BLOCK
    kern.grid_stride(2, "o", n_out)
    outer = _Body(kern, 4)
    kern.bind_vars(outer, "o", kdims, kept)
    acc, fold, ident, acc_dt = _fold_elements(kern, k, 4, "r", n_red, "0", "1")
    _store_acc(kern, k, _Body(kern, 4), acc, acc_dt, "o")
    kern.close(2)
    return kern, _grid(n_out, BLOCK), BLOCK


def _rows(prog, rk, prefix):
    kern = _Kernel(prog, rk, rk.inputs, rk.outputs, rk.aliases, prefix)
    r = len(rk.outer)
    n_rows = math.prod(rk.outer)
    kern.grid_stride(2, "row", n_rows, per_block=False)
    outer = _Body(kern, 4)
    kern.bind_vars(outer, "row", rk.outer, range(r))
    for j, m in enumerate(rk.members):
        if isinstance(m, ReduceKernel):
            n_red = math.prod(m.space[a] for a in m.axes)
            acc, fold, ident, acc_dt = _fold_elements(kern, m, 4, f"e{j}", n_red, "threadIdx.x", "blockDim.x")
            outer.line(f"{acc} = ember_block_fold({acc}, {fold}(), {ident});")
            outer.line("if (threadIdx.x == 0) {")
            _store_acc(kern, m, _Body(kern, 6), acc, acc_dt, "row")
            outer.line("}")
        else:
            inner_dims = m.shape[r:]
            n_inner = math.prod(inner_dims)
            var = f"e{j}"
            kern.open(4, f"for (long long {var} = threadIdx.x; {var} < {_int_literal(n_inner)}; "
                         f"{var} += blockDim.x)")
            body = _Body(kern, 6)
            kern.bind_vars(body, var, inner_dims, range(r, len(m.shape)))
            # (a slab of a stored concatenate: its own index into the row)
            idx = f"row * {_int_literal(n_inner)} + {var}" if m.store is None else body.index(m.store)
            kern.store(body, m.out, idx, body.value(m.body), prog.buffers[m.out].dtype)
            kern.close(4)
        # later members read this one's results at other positions of the row
        outer.line("__syncthreads();")
    kern.close(2)
    return kern, _grid(n_rows, 1), BLOCK


def _atomic_call(ptr, idx, v, op, dtype):
    d = np.dtype(dtype)
    ref = f"&{ptr}[{idx}]"
    if op == "add":
        if d.kind == "f":
            return f"atomicAdd({ref}, {v});"
        u = "unsigned long long" if d.itemsize == 8 else "unsigned int"
        return f"atomicAdd(({u}*){ref}, ({u}){v});"
    if op in ("max", "min") and d.kind in "iu":
        return f"atomic{op.capitalize()}({ref}, {v});"
    fold = {"mul": "prod"}.get(op, op)
    return f"ember_atomic_update({ref}, {v}, ember_fold_{fold}());"


def _scatter(prog, k, prefix):
    kern = _Kernel(prog, k, k.inputs, [k.out], prefix=prefix)
    d = np.dtype(k.dtype)
    n = math.prod(k.space)
    atomic = k.atomic and k.op != "set" and d.itemsize in (4, 8)
    if atomic:
        kern.grid_stride(2, "i", n)
    else:
        # in order, in one thread: duplicates combine as the reference combines them
        kern.open(2, f"if (blockIdx.x == 0 && threadIdx.x == 0) for (long long i = 0; i < {_int_literal(n)}; ++i)")
    body = _Body(kern, 4)
    kern.bind_vars(body, "i", k.space, range(len(k.space)))
    v = body.value(k.body)
    t = body.index(k.target)
    if k.valid is not None:
        body.line(f"if ({body.value(k.valid)}) {{")
    inner = _Body(kern, 6 if k.valid is not None else 4)
    inner.memo = dict(body.memo)
    ptr = kern.ptr[k.out]
    if atomic:
        inner.line(_atomic_call(ptr, t, v, k.op, d))
    else:
        if k.op == "set":
            new = v
        else:
            cur = inner.tmp(d, kern.load(k.out, t, d))
            if k.op in ("min", "max"):
                new = minmax(k.op, cur, v, d)
            else:
                from ...fx.prims import elementwise as ew
                prim = ew.add_p if k.op == "add" else ew.mul_p
                new = LOWERINGS[prim](inner, [cur, v], d, d, {})
        kern.store(inner, k.out, t, new, d)
    if k.valid is not None:
        body.line("}")
    kern.close(2)
    return kern, (_grid(n, BLOCK) if atomic else (1 if n else 0)), (BLOCK if atomic else 1)


def _conv_patches(prog, k, prefix):
    """A convolution's patch matrices (its `cols` map kernel); the product is the launcher's gemm."""
    return _map(prog, k.cols, prefix)


_RENDER = {MapKernel: _map, ReduceKernel: _reduce, RowKernel: _rows, ScatterKernel: _scatter,
           ConvKernel: _conv_patches}


def render_program(prog, prefix: str = "") -> CudaModule:
    """The CUDA C module of every map, reduce, row and scatter kernel (and
    convolution patch matrix) of `prog`
    (in program order) with each kernel's launch record; other steps (cuBLAS
    products, library steps) are the launcher's.  `prefix` starts every kernel's
    name (programs sharing one module need distinct symbols).

    Example:
        >>> import ember, numpy as np
        >>> from ember import lax
        >>> from ember.backends.kernels import schedule
        >>> from ember.backends.cuda.target import cuda_target
        >>> g = ember.make_graph(lambda x: lax.reduce_sum(x, (1,)))(np.ones((3, 500), np.float16))
        >>> mod = render_program(schedule(g, cuda_target()))
        >>> "ember_block_fold" in mod.source, "const __half* __restrict__ b0" in mod.source
        (True, True)
    """
    if not isinstance(prog, Program):
        raise TypeError(f"render_program: expected a scheduled Program, got {type(prog).__name__}; "
                        "schedule the graph first: render_program(schedule(closed, cuda_target()))")
    parts, kernels = [], []
    for step in prog.steps:
        fn = _RENDER.get(type(step))
        if fn is None:
            continue
        kern, grid, block = fn(prog, step, prefix)
        parts.append(kern.text())
        kernels.append(CudaKernel(kern.name, kern.params, grid, block))
    return CudaModule("\n\n".join(parts) + "\n", kernels)
