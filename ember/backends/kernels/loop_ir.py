"""The loop IR shared by the native backends: fused kernels and library steps.

A `Program` is a list of steps over numbered buffers; every step has `inputs`
(the buffer ids it reads) and `outputs` (those it writes).  A `MapKernel` computes
every element of one output buffer from a scalar *value expression*; a
`ReduceKernel` folds a value expression over some axes of an iteration space;
a `RowKernel` runs several of those, row by row, in one loop over their shared
leading dimensions (softmax: max, exp, sum and divide while a row is in cache);
a `GemmKernel` is a (batched) matrix product by the target's gemm.
Expressions are plain hashable tuples, so identical sub-expressions are shared
for free by the renderers' memo tables:

  index expressions (integers of the target's index dtype):
    ("v", k)               loop variable k
    ("c", n)               constant
    ("+", a, b)  ("*", a, n)  ("/", a, n)  ("%", a, n)   (n a positive constant)
    ("clamp", a, lo, hi)   clamp into [lo, hi]
    ("val", vexpr)         an integer value expression used as an index
  value expressions:
    ("load", buf, iexpr, dtype)
    ("const", value, dtype)
    ("index", iexpr, dtype)           an index as a value (iota)
    ("op", name, params, dtype, *args)   a primitive applied elementwise

Example:
    >>> linearize((("v", 0), ("v", 1)), (4, 5))
    ('+', ('*', ('v', 0), 5), ('v', 1))
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...fx.ir import constant_key, hashable_key


class E(tuple):
    """An expression node, hash-consed: structurally equal nodes are one object.

    Expressions are DAGs with heavy sharing (a value used twice per round of a
    hash function doubles the tree each round).  Plain tuples hash and compare
    their whole tree on every dict lookup, which is exponential on such DAGs;
    interned nodes hash and compare by identity in O(1).  Constants are keyed by
    dtype and bits (`constant_key`), never by `==`: `0.0 == -0.0`, and merging
    the two would change `1/x`.
    """
    __slots__ = ()

    def __new__(cls, *items):
        if items[0] == "const":
            key = ("const", constant_key(items[1], items[2]))
        else:
            key = tuple((_NODE, id(x)) if type(x) is E else x if type(x) in _PLAIN else hashable_key(x)
                        for x in items)
        try:
            hit = _INTERN.get(key)
        except TypeError:  # an unhashable param: do not intern
            return tuple.__new__(cls, items)
        if hit is None:
            hit = _INTERN[key] = tuple.__new__(cls, items)
        return hit

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other


_NODE = object()
_PLAIN = (str, int)
_INTERN: dict = {}


def reset_interning():
    """Forget interned nodes (called per scheduled program, so memory stays bounded)."""
    _INTERN.clear()


def const(value, dtype):
    """The rank-0 constant `value` of `dtype` as a value expression (the value
    converted to the dtype, held as a Python scalar).

    Example:
        >>> const(1, "float32")
        ('const', 1.0, dtype('float32'))
    """
    d = np.dtype(dtype)
    v = np.asarray(value)
    if v.dtype != d:
        v = v.astype(d)
    return E("const", v.item(), d)


# --- index expression constructors with light simplification ----------------------------

def iconst(n: int):
    return E("c", int(n))


def iadd(a, b):
    if a[0] == "c" and b[0] == "c":
        return E("c", a[1] + b[1])
    if a[0] == "c" and a[1] == 0:
        return b
    if b[0] == "c" and b[1] == 0:
        return a
    return E("+", a, b)


def imul(a, n: int):
    n = int(n)
    if n == 0:
        return E("c", 0)
    if n == 1:
        return a
    if a[0] == "c":
        return E("c", a[1] * n)
    return E("*", a, n)


def operands(e) -> tuple:
    """The sub-expressions (index or value) of expression node `e`, in the order the
    node uses them: what every iterative walk over kernel expressions visits.

    Example::

        operands(E("+", E("v", 0), E("c", 1)))   # (('v', 0), ('c', 1))
    """
    t = e[0]
    if t == "+":
        return (e[1], e[2])
    if t in ("*", "/", "%", "clamp", "val", "index"):
        return (e[1],)
    if t == "load":
        return (e[2],)
    if t == "op":
        return e[4:]
    return ()


def bounds(e, ranges):
    """Inclusive (lo, hi) of an index expression given loop-variable extents
    `ranges` ({var: n} meaning 0 <= var < n); None when unknown."""
    memo: dict = {}
    stack = [e]
    while stack:
        x = stack[-1]
        if x in memo:
            stack.pop()
            continue
        t = x[0]
        kids = (x[1], x[2]) if t == "+" else (x[1],) if t in ("*", "/", "clamp") else ()
        todo = [k for k in kids if k not in memo]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        memo[x] = _bounds_node(x, [memo[k] for k in kids], ranges)
    return memo[e]


def _bounds_node(e, kids, ranges):
    t = e[0]
    if t == "c":
        return e[1], e[1]
    if t == "v":
        n = ranges.get(e[1]) if ranges else None
        return (0, n - 1) if n else None
    if t == "+":
        a, b = kids
        return (a[0] + b[0], a[1] + b[1]) if a and b else None
    if t == "*":
        (a,) = kids
        if not a:
            return None
        lo, hi = a[0] * e[2], a[1] * e[2]
        return (min(lo, hi), max(lo, hi))
    if t == "/":
        (a,) = kids
        return (a[0] // e[2], a[1] // e[2]) if a else None
    if t == "%":
        return (0, e[2] - 1)
    if t == "clamp":
        (a,) = kids
        lo, hi = e[2], e[3]
        return (max(lo, min(a[0], hi)), min(hi, max(a[1], lo))) if a else (lo, hi)
    return None


def _split_multiple(a, n, ranges, partial=False):
    """Write `a` as q*n + r with 0 <= r < n when its terms allow: returns (q, r) or None.
    With `partial`, r need only be >= 0 (and q not empty): then a // n = q + r // n and
    a % n = r % n, which drops the multiples of n from a reshape's flat index
    ((i0*8192 + i1) % 256 is i1 % 256)."""
    # the terms of `a` with products distributed over sums: a reshape's flat index
    # ((i0*3 + i1)*64 + i2) splits by 192 only as i0*192 + (i1*64 + i2)
    terms = []
    stack = [(a, 1)]
    while stack:
        e, m = stack.pop()
        if e[0] == "+":
            stack.extend(((e[2], m), (e[1], m)))   # e[1] first: the sums keep their order
        elif e[0] == "*":
            stack.append((e[1], m * e[2]))
        else:
            terms.append((e, m))
    q, r = [], []
    for t, m in terms:
        if t[0] == "v" and ranges and ranges.get(t[1]) == 1:
            continue   # a loop over one index: the variable is 0 (a unit axis of a reshape)
        if t[0] == "c":
            t, m = E("c", t[1] * m), 1
        if t[0] == "c" and t[1] % n == 0:
            q.append(E("c", t[1] // n))
        elif t[0] != "c" and m % n == 0:
            q.append(imul(t, m // n))
        else:
            r.append(imul(t, m))
    rest = E("c", 0)
    for t in r:
        rest = iadd(rest, t)
    b = bounds(rest, ranges)
    if b is None or b[0] < 0 or (b[1] >= n and not (partial and q)):
        return None
    quot = E("c", 0)
    for t in q:
        quot = iadd(quot, t)
    return quot, rest


def idiv(a, n: int, ranges=None):
    """Floor division by a positive constant, simplified with known variable ranges."""
    n = int(n)
    if n == 1:
        return a
    if a[0] == "c":
        return E("c", a[1] // n)
    b = bounds(a, ranges)
    if b is not None and 0 <= b[0] and b[1] < n:
        return E("c", 0)
    split = _split_multiple(a, n, ranges) if ranges else None
    if split is not None:
        return split[0]
    split = _split_multiple(a, n, ranges, partial=True) if ranges else None
    if split is not None:
        return iadd(split[0], idiv(split[1], n, ranges))
    return E("/", a, n)


def imod(a, n: int, ranges=None):
    """Remainder by a positive constant, simplified with known variable ranges."""
    n = int(n)
    if n == 1:
        return E("c", 0)
    if a[0] == "c":
        return E("c", a[1] % n)
    b = bounds(a, ranges)
    if b is not None and 0 <= b[0] and b[1] < n:
        return a
    split = _split_multiple(a, n, ranges) if ranges else None
    if split is not None:
        return split[1]
    split = _split_multiple(a, n, ranges, partial=True) if ranges else None
    if split is not None:
        return imod(split[1], n, ranges)
    return E("%", a, n)


def iclamp(a, lo: int, hi: int):
    if a[0] == "c":
        return E("c", min(max(a[1], lo), hi))
    return E("clamp", a, int(lo), int(hi))


def split_row(a, n, ranges):
    """`a` as `q*n + r` with `0 <= r < n` (both index expressions), or None when
    its terms do not allow it (see `_split_multiple`)."""
    if n == 1:
        return a, E("c", 0)
    return _split_multiple(a, n, ranges)


def substitute(expr, mapping, memo=None):
    """`expr` with every loop variable `("v", k)` replaced by `mapping[k]` (an index
    expression); variables not in `mapping` stay.  Iterative (post-order)."""
    memo = {} if memo is None else memo
    stack = [expr]
    while stack:
        e = stack[-1]
        if e in memo:
            stack.pop()
            continue
        if e[0] == "v":
            memo[e] = mapping.get(e[1], e)
            stack.pop()
            continue
        todo = [x for x in e if type(x) is E and x not in memo]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        memo[e] = E(*[memo[x] if type(x) is E else x for x in e])
    return memo[expr]


def linearize(idx, shape):
    """Row-major flat index of a multi-index into `shape`."""
    out = E("c", 0)
    for i, n in zip(idx, shape):
        out = iadd(imul(out, n), i)
    return out


def delinearize(flat, shape, ranges=None):
    """Multi-index into `shape` of a row-major flat index (`flat` < size(shape),
    so the leading dimension needs no modulo)."""
    strides, stride = [], 1
    for n in reversed(shape):
        strides.append(stride)
        stride *= n
    strides.reverse()
    idx = []
    for j, (n, s) in enumerate(zip(shape, strides)):
        if n == 1:
            idx.append(E("c", 0))
            continue
        q = idiv(flat, s, ranges)
        idx.append(q if j == 0 else imod(q, n, ranges))
    return tuple(idx)


# --- steps --------------------------------------------------------------------------------

@dataclass
class Buffer:
    shape: tuple
    dtype: np.dtype
    kind: str  # "input", "const", "temp", "output"; "token": a collective in flight (overlap.py)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass
class MapKernel:
    """out[i...] = body, for every index of `shape` (loop variables 0..ndim-1).

    `store`, when set, is the flat index of `out` each element is written at (an
    index expression over the loop variables; default: row-major over `shape`):
    the operands of a stored concatenate each write their part of one buffer, so
    no element evaluates the other operands.  Such kernels are never fused into
    gemm epilogues or row groups (both assume the row-major store)."""
    name: str
    out: int
    shape: tuple
    body: tuple
    inputs: list = field(default_factory=list)
    store: tuple | None = None

    @property
    def outputs(self) -> list:
        return [self.out]


@dataclass
class ReduceKernel:
    """out[kept...] = fold(op, body over `axes`) for the iteration space `space`
    (loop variables index `space`; `axes` are the reduced ones)."""
    name: str
    out: int
    space: tuple
    axes: tuple
    op: str  # sum, prod, max, min, and, or
    dtype: np.dtype
    body: tuple
    inputs: list = field(default_factory=list)
    # the target lets reductions fold in registers (Target.register_accumulator)
    registers: bool = True

    @property
    def outputs(self) -> list:
        return [self.out]

    @property
    def kept(self) -> tuple:
        return tuple(i for i in range(len(self.space)) if i not in self.axes)

    @property
    def shape(self) -> tuple:
        return tuple(self.space[i] for i in self.kept)

    @property
    def register_accumulator(self) -> bool:
        """Reduce each output element in a register (kept axes outer, reduced axes inner)
        rather than accumulating into the output in the input's row-major order.
        Always for half precision (the accumulator must be float32, as in the
        reference); otherwise, when the target allows it (`registers`), where the
        reduced axes are innermost (contiguous reads) and for full reductions."""
        n = len(self.space)
        suffix = tuple(self.axes) == tuple(range(n - len(self.axes), n))
        lowp = np.dtype(self.dtype).name in ("float16", "bfloat16")
        return lowp or (self.registers and (suffix or not self.kept))



def loop_space(kernel) -> tuple:
    """The loop nest a map kernel (its shape) or a reduction (its space) runs over.

    Example:
        >>> loop_space(MapKernel("k", 0, (4, 5), None, []))
        (4, 5)
    """
    return kernel.shape if isinstance(kernel, MapKernel) else kernel.space

@dataclass
class RowKernel:
    """Several kernels run row by row in one loop over their shared leading
    dimensions `outer`: for each outer index, every member in order computes its
    part of that row (a reduction member: the one element; a map member: the row's
    slice).  Members read what earlier members wrote only in the same row, so the
    row is still in cache; the outer loop is the parallel one."""
    name: str
    outer: tuple
    members: list
    # buffer -> buffer whose memory it uses: an intermediate that only members
    # read, stored in the output of the last member reading it, which reads it
    # at the element it writes (softmax's exp values live in its result)
    aliases: dict = field(default_factory=dict)
    # buffer -> elements per row: an intermediate that only members read, kept one
    # row at a time in memory of the loop's own (per thread) and addressed within
    # the row (fusion._row_scratch); it has no buffer memory
    scratch: dict = field(default_factory=dict)

    @property
    def outputs(self) -> list:
        """The members' outputs that have memory of their own (not aliased, not scratch)."""
        return [m.out for m in self.members if m.out not in self.aliases and m.out not in self.scratch]

    @property
    def inputs(self) -> list:
        own = {m.out for m in self.members}
        return sorted({b for m in self.members for b in m.inputs} - own)


@dataclass
class GemmKernel:
    """`out[i] = op(A[i]) @ op(B[i])` for `i < batch` through a gemm called from
    native code (the backend's gemm routine): `op(A)` is m x k, `op(B)` k x n, both stored row-major (A as k x m
    when `trans_a`), batches `m*k`, `k*n`, `m*n` elements apart, starting
    `a_offset` / `b_offset` elements into their buffers (an operand that is a
    contiguous slice of a larger buffer, e.g. a weight matrix unpacked from a flat
    parameter vector, is read in place).  The parallel
    range is `tasks` = batch x row blocks x column blocks; a task computes an
    `mblock` x `nblock` block of one product."""
    name: str
    out: int
    a: int
    b: int
    dtype: np.dtype
    batch: int
    m: int
    n: int
    k: int
    trans_a: bool
    trans_b: bool
    mblock: int
    nblock: int
    # map kernels over the product's [m, n] space that read it elementwise, run on
    # each block right after it is computed (bias, activation, update)
    epilogue: list = field(default_factory=list)
    a_offset: int = 0
    b_offset: int = 0

    @property
    def outputs(self) -> list:
        return [self.out] + [e.out for e in self.epilogue]

    @property
    def inputs(self) -> list:
        own = set(self.outputs)
        return sorted(({self.a, self.b} | {b for e in self.epilogue for b in e.inputs}) - own)

    @property
    def grid(self) -> tuple:
        """(row blocks, column blocks) of one product."""
        return -(-self.m // self.mblock), -(-self.n // self.nblock)

    @property
    def tasks(self) -> int:
        r, c = self.grid
        return self.batch * r * c


@dataclass
class ConvKernel:
    """A convolution as im2col + gemm, one image per task (the parallel range):
    `cols` (a MapKernel over (N, G, I, kernel..., out spatial...), i.e. a buffer of
    shape (N, G, K, P)) writes image n's patch matrices, then for each group g
    `out[n, g] = W[g] @ cols[n, g]` (Og x K times K x P) while they are in cache.
    `w` holds the weights as (G, Og, K).  With `channels_last` the output image is
    stored P x O and gets the transposed product."""
    name: str
    out: int
    cols: MapKernel
    w: int
    dtype: np.dtype
    n: int
    groups: int
    og: int
    k: int
    p: int
    channels_last: bool

    @property
    def inputs(self) -> list:
        return sorted(set(self.cols.inputs) | {self.w})

    @property
    def outputs(self) -> list:
        """The patch matrices, then the result."""
        return [self.cols.out, self.out]


@dataclass
class ScatterKernel:
    """`out[target] = combine(out[target], body)` for every index of `space` (the
    updates) in row-major order, skipping those where `valid` (a bool value
    expression, or None) is false.  `out` already holds the operand (a map kernel
    wrote it).  Updates may hit the same element: they combine one at a time in
    order, unless `atomic` (the target's scatter mode), which lets the renderer
    combine them in parallel with atomic operations."""
    name: str
    out: int
    space: tuple
    op: str  # add, mul, min, max, set
    dtype: np.dtype
    body: tuple
    target: tuple
    valid: tuple | None
    inputs: list = field(default_factory=list)
    atomic: bool = False

    @property
    def outputs(self) -> list:
        return [self.out]


@dataclass
class LibraryStep:
    """A primitive executed by the backend's library on whole buffers (for the
    CPU backend, the primitive's numpy impl): `args` are its operands in order,
    buffer ids or ("lit", value); `inputs` the buffers among them."""
    eq: object
    args: list
    outputs: list

    @property
    def inputs(self) -> list:
        return [a for a in self.args if type(a) is int]


@dataclass
class CollectiveStart(LibraryStep):
    """The first half of a collective split for overlap (`Target.async_collectives`):
    posts the reduction of its operand (`args`) and returns at once; its one output
    is a token buffer (a 0-d object array holding the communicator's `Pending`)
    that the matching `CollectiveWait` reads.  Being a library step whose output
    outlives it, its operand's buffer stays allocated until the wait (the
    communicator reads it while the message is in flight)."""


@dataclass
class CollectiveWait(LibraryStep):
    """The second half: waits for the reduction the token (`args`) names and
    writes its result (`outputs`), the value the unsplit collective gives."""


@dataclass
class CollectiveProgress(LibraryStep):
    """Between the halves, after a long step: lets the communicator move the
    reductions in flight (`args`: their tokens) on without waiting; no outputs."""


@dataclass
class Program:
    buffers: list
    inputs: list       # buffer ids of the graph inputs (after consts)
    consts: list       # (buffer id, value)
    steps: list
    outputs: list      # buffer ids or ("lit", value)


def expr_inputs(expr, acc=None) -> set:
    """The buffer ids a value/index expression loads from."""
    acc = set() if acc is None else acc
    seen = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if not isinstance(e, tuple) or id(e) in seen:
            continue
        seen.add(id(e))
        if e and e[0] == "load":
            acc.add(e[1])
            stack.append(e[2])
        else:
            stack.extend(x for x in e if isinstance(x, tuple))
    return acc
