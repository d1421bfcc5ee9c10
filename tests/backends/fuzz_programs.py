"""Random ember programs and the checks that run them three ways (eager, the
reference interpreter, the LLVM backend).

A program is straight-line Python source over ``lax``/``enp``: one line per
node, so a failure prints a reproducer that runs as written. The generator draws
every choice through a ``Chooser`` so the same code serves hypothesis (which
shrinks a failing program to a minimal one) and a seeded ``numpy`` generator
(the triage driver, which collects every mismatch instead of stopping at one).

Checks (see ``check_program``):

- eager == ``jit(f, backend="reference")``, bitwise, on every output: both run
  the primitives' numpy impls.
- LLVM ``jit`` against a *guided* eager replay: the replay walks the nodes in
  order; an exact node (integer and bool ops, + - * /, sqrt, casts, movement,
  max/min, comparisons, select, sort, max/min reductions, ...) must match
  bitwise, NaN positions and zero signs included; an inexact node (a
  transcendental function, a float sum/product/mean/cumsum, a float
  dot_general) is checked against a float64 / extended-precision oracle within
  its documented bound, and then the replay continues from the jit's value, so
  one node's admissible rounding never spreads into a false mismatch
  downstream.

Example:
    >>> import numpy as np
    >>> prog = generate(RngChooser(np.random.default_rng(0)), max_ops=4)
    >>> check_program(prog) == []
    True
"""
from __future__ import annotations

import dataclasses
import math
import os
import sys

import ml_dtypes
import numpy as np

import ember
import ember.numpy as enp
import ember.random as erandom
from ember import lax
from ember.backends.llvm import mathlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "llvm"))
import mathlib_cases  # noqa: E402  (the float64 references the mathlib bounds were measured against)

from test_native_vs_reference import BF16, FLOATS  # noqa: E402

INTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32)]
BOOL = np.dtype(bool)
DTYPES = [BOOL] + INTS + FLOATS
NAMES = {d: ("bfloat16" if d == BF16 else d.name) for d in DTYPES}
BY_NAME = {v: k for k, v in NAMES.items()}

# lax name -> mathlib name; all inexact, bounded by mathlib's measured ulp tables
MATH_UNARY = ["exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "asin",
              "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "cbrt", "erf", "erfc"]
MATH_BINARY = ["pow", "atan2"]
FLOAT_EXACT_UNARY = ["neg", "abs", "sign", "floor", "ceil", "round", "sqrt", "square", "is_finite"]
INT_UNARY = ["neg", "abs", "sign", "bitwise_not", "population_count", "clz", "square"]
ARITH = ["add", "sub", "mul", "div", "rem", "max", "min"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]
BITWISE = ["bitwise_and", "bitwise_or", "bitwise_xor"]
SHIFTS = ["shift_left", "shift_right_arithmetic", "shift_right_logical"]
ENP_BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "less", "equal"]


def is_float(d):
    return d in FLOATS


def precision(d):
    """(significand bits p, exponent of the smallest subnormal) of a float dtype."""
    return {np.dtype(np.float16): (11, -24), BF16: (8, -133), np.dtype(np.float32): (24, -149),
            np.dtype(np.float64): (53, -1074)}[np.dtype(d)]


def ulp_distance(got, ref, dtype):
    """|got - ref| in units of the last place of ``dtype`` at ``ref`` (any float dtype).

    ``ref`` is a float64 or longdouble array; non-finite references after
    rounding to ``dtype`` must be matched exactly (an infinite distance
    otherwise). This is ``mathlib_cases.ulp_error`` for every float dtype ember has.
    """
    p, emin = precision(dtype)
    got = np.asarray(got).astype(np.longdouble)
    ref = np.asarray(ref, dtype=np.longdouble)
    with np.errstate(over="ignore", invalid="ignore"):
        ref_t = ref.astype(np.float64).astype(dtype).astype(np.longdouble)
    err = np.zeros(ref.shape)
    fin = np.isfinite(ref_t)
    err[~fin & ~((np.isnan(ref_t) & np.isnan(got)) | (ref_t == got))] = np.inf
    r, g = ref[fin], got[fin]
    e = np.frexp(np.abs(r).astype(np.float64))[1]
    ulp = np.ldexp(np.longdouble(1.0), np.maximum(e - p, emin))
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(g - r) / ulp
    d[~np.isfinite(g)] = np.inf
    err[fin] = d.astype(np.float64)
    return err


def math_bound(name, dtype):
    """The documented worst-case ulp error of ``name`` in ``dtype`` under jit.

    float16/bfloat16 are computed in float32 and rounded once: half an ulp of
    the narrow type plus the float32 error scaled down to it.
    """
    f = mathlib.MATH_FUNCTIONS[name]
    d = np.dtype(dtype)
    if d == np.float64:
        return f.max_ulp_f64
    if d == np.float32:
        return f.max_ulp_f32
    return 0.5 + f.max_ulp_f32 * 2.0 ** (precision(d)[0] - 24)


# --- values -------------------------------------------------------------------------------

def specials(d):
    """Edge values of dtype ``d``: signed zeros, NaN, infinities, subnormals, the
    largest finite and smallest normal numbers, rounding ties, cast boundaries."""
    if d == BOOL:
        return [True, False]
    if d in INTS:
        i = np.iinfo(d)
        return [int(i.min), int(i.max), 0, 1, -1 if i.min < 0 else 2, int(i.min) + 1, int(i.max) - 1,
                int(i.bits) - 1, int(i.bits), 7]
    fi = ml_dtypes.finfo(d)
    base = [0.0, -0.0, np.nan, np.inf, -np.inf, float(fi.smallest_subnormal), -float(fi.smallest_subnormal),
            float(fi.tiny), -float(fi.tiny), float(fi.max), -float(fi.max), 1.0, -1.0, 0.5, -0.5, 2.5, -2.5,
            1.5, float(fi.eps), 1 + float(fi.eps), 1 - float(fi.epsneg), 3.0, -7.0]
    # values that sit on the boundaries of narrower casts
    extra = [65504.0, 65520.0, 2.0 ** -24, 2.0 ** -25, 3.3895313892515355e38, 2.0 ** 24 + 1, 2.0 ** 31,
             -2.0 ** 31 - 1, 2.0 ** 63, 255.5, -128.5, 4294967296.0, 1e-40, 1e-310, 1 + 2.0 ** -11 + 2.0 ** -30]
    with np.errstate(all="ignore"):
        return base + [float(np.asarray(v).astype(d)) for v in extra]


def draw_array(ch, d, shape):
    """An array of dtype ``d``: random values, a drawn share of them edge values."""
    seed = ch.integer(0, 2 ** 16)
    mode = ch.pick(["normal", "specials", "mixed", "mixed"])
    rng = np.random.default_rng(seed)
    if d == BOOL:
        return rng.random(shape) < 0.5
    if d in INTS:
        i = np.iinfo(d)
        x = rng.integers(max(int(i.min), -50), min(int(i.max), 50), size=shape, endpoint=True).astype(d)
    else:
        scale = {"normal": 3.0, "specials": 1.0, "mixed": 30.0}[mode]
        x = (rng.standard_normal(shape) * scale).astype(d)
    if mode != "normal" and x.size:
        sp = np.array(specials(d), dtype=object)
        frac = 0.8 if mode == "specials" else 0.3
        mask = rng.random(x.size) < frac
        flat = x.reshape(-1)
        picks = sp[rng.integers(0, len(sp), size=int(mask.sum()))]
        with np.errstate(all="ignore"):
            flat[mask] = np.array([np.asarray(v).astype(d) for v in picks], dtype=d).reshape(-1)
    return x


def C(dtype, value):
    """A scalar constant of ``dtype`` (the spelling programs use for literals)."""
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(BY_NAME[dtype]) if dtype in BY_NAME else np.asarray(value, dtype)


def I(values, dtype="int32"):  # noqa: E743
    """An index array constant."""
    return np.asarray(values, dtype=dtype)


NAMESPACE = {"lax": lax, "enp": enp, "np": np, "C": C, "I": I, "random": erandom, "nan": float("nan"),
             "inf": float("inf")}


def draw_lit(ch, d):
    """A literal of dtype ``d``: an edge value, a signed zero a third of the time."""
    sp = specials(d)
    return lit(d, ch.pick(sp[:2] * (len(sp) // 4) + sp))


def lit(d, v):
    if d == BOOL:
        return f"C('bool', {bool(v)})"
    if d in INTS:
        return f"C('{NAMES[d]}', {int(v)})"
    return f"C('{NAMES[d]}', {float(v)!r})"


# --- choosers -----------------------------------------------------------------------------

class RngChooser:
    """Draws from a numpy generator (the triage driver)."""

    def __init__(self, rng):
        self.rng = rng

    def integer(self, lo, hi):
        return int(self.rng.integers(lo, hi, endpoint=True))

    def pick(self, seq):
        return seq[int(self.rng.integers(0, len(seq)))]


class HypothesisChooser:
    """Draws through hypothesis so a failing program shrinks."""

    def __init__(self, draw):
        from hypothesis import strategies as st
        self.draw, self.st = draw, st

    def integer(self, lo, hi):
        return self.draw(self.st.integers(lo, hi))

    def pick(self, seq):
        return seq[self.draw(self.st.integers(0, len(seq) - 1))]


# --- programs -----------------------------------------------------------------------------

@dataclasses.dataclass
class Node:
    name: str
    expr: str
    oracle: tuple | None = None      # None: exact; else how to bound the inexact result
    args: tuple = ()                 # names the oracle reads


@dataclasses.dataclass
class Program:
    inputs: dict                     # name -> numpy array
    nodes: list
    eager: dict                      # name -> numpy value, computed while generating

    @property
    def outputs(self):
        """Every inexact node (checked on its own) and every node nothing consumes."""
        consumed = {tok for n in self.nodes for tok in _tokens(n.expr)}
        names = [n.name for n in self.nodes if n.oracle is not None or n.name not in consumed]
        return names or list(self.inputs)

    def source(self):
        lines = [f"def f({', '.join(self.inputs)}):"]
        lines += [f"    {n.name} = {n.expr}" for n in self.nodes]
        lines.append(f"    return ({', '.join(self.outputs)},)")
        return "\n".join(lines)

    def function(self):
        ns = dict(NAMESPACE)
        exec(compile(self.source(), "<fuzz program>", "exec"), ns)
        return ns["f"]

    def reproducer(self):
        ins = "\n".join(_spell(k, v) for k, v in self.inputs.items())
        return (f"{self.source()}\n{ins}\n"
                f"native = ember.jit(f)({', '.join(self.inputs)})\n"
                f"reference = ember.jit(f, backend='reference')({', '.join(self.inputs)})")


def _spell(name, x):
    """``name = <x as Python source>``; a summary for arrays too long to read."""
    if x.size > 200:
        return (f"{name} = ...  # {NAMES[x.dtype]}{list(x.shape)}, min {x.min()!r}, max {x.max()!r}, "
                f"first {x.reshape(-1)[:8].tolist()!r}")
    src = repr(np.asarray(x).astype(object).tolist()).replace("nan", "np.nan").replace("inf", "np.inf")
    return f"{name} = np.array({src}, dtype='{NAMES[x.dtype]}')"


def _tokens(expr):
    tok, out = "", []
    for c in expr + " ":
        if c.isalnum() or c == "_":
            tok += c
        else:
            if tok:
                out.append(tok)
            tok = ""
    return out


def eval_expr(expr, env):
    with np.errstate(all="ignore"):
        return eval(expr, NAMESPACE, env)   # noqa: S307  (our own generated source)


REJECTED: list = []


class _Gen:
    def __init__(self, ch, deep=False):
        self.ch, self.deep = ch, deep
        self.env = {}                   # name -> ember value (eager)
        self.inputs = {}
        self.nodes = []

    def new_name(self):
        return f"v{len(self.env)}"

    def aval(self, name):
        v = np.asarray(self.env[name])
        return v.shape, np.dtype(v.dtype)

    def add(self, expr, oracle=None, args=()):
        name = self.new_name()
        try:
            self.env[name] = eval_expr(expr, self.env)
        except (TypeError, ValueError, IndexError, OverflowError) as e:
            # a draw ember rightly rejects (kept for the triage driver to read)
            REJECTED.append((expr, f"{type(e).__name__}: {e}"))
            return None
        self.nodes.append(Node(name, expr, oracle, tuple(args)))
        return name

    def values(self, pred=lambda s, d: True):
        return [n for n in self.env if pred(*self.aval(n))]

    def pick_value(self, pred=lambda s, d: True):
        vs = self.values(pred)
        if self.deep and vs:      # a chain: each node reads the newest value it can
            return vs[-1]
        return self.ch.pick(vs) if vs else None

    def cast_to(self, name, d):
        """An expression for ``name`` in dtype ``d``."""
        return name if self.aval(name)[1] == d else f"lax.convert_element_type({name}, enp.{NAMES[d]})"

    def partner(self, a):
        """Another value with a's shape (or a rank-0 one), cast to a's dtype; a itself if none."""
        shape, d = self.aval(a)
        if self.deep:             # a literal: an older value read again would end the chain's fusion
            return draw_lit(self.ch, d)
        cands = self.values(lambda s, _: s == shape or s == ())
        b = self.ch.pick(cands) if cands else a
        return self.cast_to(b, d)


def _shape(ch):
    rank = ch.pick([0, 1, 1, 2, 2, 2, 3])
    return tuple(ch.pick([1, 2, 3, 4, 5, 7, 0, 3, 2]) for _ in range(rank))


def _variant(ch, shape):
    """A shape that broadcasts against ``shape``."""
    kind = ch.integer(0, 3)
    if kind == 0 or not shape:
        return shape
    if kind == 1:
        return shape[ch.integer(0, len(shape)):]
    return tuple(1 if ch.integer(0, 1) else s for s in shape)


def _reshape_target(ch, shape):
    size = math.prod(shape)
    if size == 0:
        return ch.pick([(0,), (0, 3), (2, 0)] + [tuple(shape[::-1])])
    dims, rest = [], size
    while rest > 1 and len(dims) < 3:
        divisors = [k for k in range(2, rest + 1) if rest % k == 0]
        k = ch.pick(divisors)
        dims.append(k)
        rest //= k
    if rest > 1:
        dims.append(rest)
    if ch.integer(0, 2) == 0:
        dims.insert(ch.integer(0, len(dims)), 1)
    return tuple(dims)


def op_unary_float(g):
    a = g.pick_value(lambda s, d: is_float(d))
    if a is None:
        return
    op = g.ch.pick(FLOAT_EXACT_UNARY)
    g.add(f"lax.{op}({a})")


def op_unary_int(g):
    a = g.pick_value(lambda s, d: d in INTS)
    if a is None:
        return
    g.add(f"lax.{g.ch.pick(INT_UNARY)}({a})")


def op_math_unary(g):
    a = g.pick_value(lambda s, d: is_float(d))
    if a is None:
        return
    op = g.ch.pick(MATH_UNARY)
    g.add(f"lax.{op}({a})", ("math", op), (a,))


def op_math_binary(g):
    a = g.pick_value(lambda s, d: is_float(d))
    if a is None:
        return
    b = g.partner(a)
    if b not in g.env:
        b = g.add(b)
        if b is None:
            return
    op = g.ch.pick(MATH_BINARY)
    g.add(f"lax.{op}({a}, {b})", ("math", op), (a, b))


def op_binary(g):
    a = g.pick_value(lambda s, d: d != BOOL)
    if a is None:
        return
    shape, d = g.aval(a)
    ops = ARITH + COMPARE + (["nextafter"] if is_float(d) else BITWISE + SHIFTS)
    op = g.ch.pick(ops)
    if g.ch.integer(0, 3) == 0:
        b = draw_lit(g.ch, d)
    else:
        b = g.partner(a)
    if g.ch.integer(0, 1):
        a, b = b, a
    g.add(f"lax.{op}({a}, {b})")


def op_bool(g):
    a = g.pick_value(lambda s, d: d == BOOL)
    if a is None:
        return
    b = g.partner(a)
    g.add(f"lax.{g.ch.pick(BITWISE + ['eq', 'ne'])}({a}, {b})")


def op_enp_binary(g):
    a = g.pick_value()
    sa, da = g.aval(a)
    b = g.pick_value(lambda s, d: _broadcastable(sa, s))
    op = g.ch.pick(ENP_BINARY)
    db = g.aval(b)[1]
    if g.ch.integer(0, 4) == 0:   # a weak Python scalar
        b = g.ch.pick(["2", "0.5", "-0.0", "1"]) if da != BOOL else "True"
        db = None
    if da == BOOL and db in (BOOL, None) and op in ("add", "subtract", "multiply"):
        op = "logical_xor"
    g.add(f"enp.{op}({a}, {b})")


def _broadcastable(s1, s2):
    for x, y in zip(reversed(s1), reversed(s2)):
        if x != y and x != 1 and y != 1:
            return False
    return True


def op_select(g):
    a = g.pick_value()
    shape, d = g.aval(a)
    b = g.partner(a)
    p = g.pick_value(lambda s, dd: dd == BOOL and (s == shape or s == ()))
    if p is None or g.deep or g.ch.integer(0, 2) == 0:
        if d == BOOL:
            p = f"lax.bitwise_xor({a}, C('bool', True))"
        else:
            p = f"lax.gt({a}, {draw_lit(g.ch, d)})"
    if g.ch.integer(0, 1):
        g.add(f"lax.select_n({p}, {a}, {b})")
    else:
        g.add(f"enp.where({p}, {b}, {a})")


def op_clamp(g):
    a = g.pick_value(lambda s, d: d != BOOL)
    if a is None:
        return
    d = g.aval(a)[1]
    lo, hi = sorted([g.ch.pick(specials(d)), g.ch.pick(specials(d))], key=lambda v: (v != v, v))
    g.add(f"lax.clamp({lit(d, lo)}, {a}, {lit(d, hi)})")


def op_cast(g):
    a = g.pick_value()
    dst = g.ch.pick(DTYPES)
    g.add(f"lax.convert_element_type({a}, enp.{NAMES[dst]})")


def op_bitcast(g):
    # only program inputs: NaN payloads of computed values are unspecified
    a = g.pick_value(lambda s, d: d != BOOL)
    if a is None or a not in g.inputs:
        return
    d = g.aval(a)[1]
    same = [t for t in DTYPES if t.itemsize == d.itemsize and t != d and t != BOOL]
    if same:
        g.add(f"lax.bitcast_convert_type({a}, enp.{NAMES[g.ch.pick(same)]})")


def op_move(g):
    a = g.pick_value()
    shape, d = g.aval(a)
    nd = len(shape)
    kind = g.ch.pick(["reshape", "transpose", "rev", "slice", "pad", "concat", "bcast", "expand", "squeeze",
                      "index", "dslice"])
    ch = g.ch
    if kind == "reshape":
        g.add(f"lax.reshape({a}, {_reshape_target(ch, shape)})")
    elif kind == "transpose" and nd:
        perm = list(range(nd))
        for i in range(nd - 1, 0, -1):
            j = ch.integer(0, i)
            perm[i], perm[j] = perm[j], perm[i]
        g.add(f"lax.transpose({a}, {tuple(perm)})")
    elif kind == "rev" and nd:
        dims = tuple(i for i in range(nd) if ch.integer(0, 1))
        g.add(f"lax.rev({a}, {dims})")
    elif kind == "slice" and nd:
        st, lim, strides = [], [], []
        for s in shape:
            lo = ch.integer(0, s)
            hi = ch.integer(lo, s)
            st.append(lo), lim.append(hi), strides.append(ch.integer(1, 3))
        g.add(f"lax.slice({a}, {tuple(st)}, {tuple(lim)}, {tuple(strides)})")
    elif kind == "pad" and nd:
        cfg = []
        for s in shape:
            interior = ch.integer(0, 2)
            full = s + max(s - 1, 0) * interior
            lo = ch.integer(-min(full, 2), 2)
            hi = ch.integer(-min(full + lo, 2) if full + lo > 0 else 0, 2)
            cfg.append((lo, hi, interior))
        g.add(f"lax.pad({a}, {draw_lit(ch, d)}, {tuple(cfg)})")
    elif kind == "concat" and nd:
        axis = ch.integer(0, nd - 1)
        others = g.values(lambda s, _: len(s) == nd and all(x == y for i, (x, y) in enumerate(zip(s, shape))
                                                              if i != axis))
        parts = [a] + [g.cast_to(ch.pick(others), d) for _ in range(ch.integer(1, 2))]
        if ch.integer(0, 2) == 0:   # an empty piece along the axis
            empty = tuple(0 if i == axis else s for i, s in enumerate(shape))
            parts.insert(ch.integer(0, len(parts)), f"lax.broadcast_in_dim({lit(d, 1)}, {empty}, ())")
        g.add(f"lax.concatenate([{', '.join(parts)}], {axis})")
    elif kind == "bcast":
        pos = ch.integer(0, nd)
        new = ch.pick([0, 1, 2, 3])
        out = list(shape)
        out.insert(pos, new)
        dims = tuple(i if i < pos else i + 1 for i in range(nd))
        for i in range(len(out)):
            if i in dims and out[i] == 1:
                out[i] = ch.pick([1, 3])
        g.add(f"lax.broadcast_in_dim({a}, {tuple(out)}, {dims})")
    elif kind == "expand":
        g.add(f"lax.expand_dims({a}, ({ch.integer(0, nd)},))")
    elif kind == "squeeze":
        ones = tuple(i for i, s in enumerate(shape) if s == 1)
        if ones:
            g.add(f"lax.squeeze({a}, {ones})")
    elif kind == "index" and nd:
        items = []
        for s in shape:
            k = ch.integer(0, 3)
            if k == 0 and s:
                items.append(str(ch.integer(-s, s - 1)))
            elif k == 1:
                items.append(f"{ch.integer(-3, 3)}:{ch.integer(-3, 5)}:{ch.pick([1, 2, -1, -2])}")
            elif k == 2:
                items.append("None")
            else:
                items.append(":")
        g.add(f"{a}[{', '.join(items)}]")
    elif kind == "dslice" and nd:
        starts = tuple(ch.integer(-2, s + 2) for s in shape)
        sizes = tuple(ch.integer(0, s) for s in shape)
        g.add(f"lax.dynamic_slice({a}, {starts}, {sizes})")


def op_gather(g):
    a = g.pick_value(lambda s, d: len(s) > 0 and 0 not in s)
    if a is None:
        return
    shape, d = g.aval(a)
    axis = g.ch.integer(0, len(shape) - 1)
    n = shape[axis]
    mode = g.ch.pick(["clip", "fill"])
    src = g.pick_value(lambda s, dd: dd in INTS and len(s) <= 2)
    if src is not None and g.ch.integer(0, 1):
        idx = src
    else:
        k = g.ch.integer(0, 5)
        idx = f"I({[g.ch.integer(-n - 2, n + 2) for _ in range(k)]})"
    g.add(f"enp.take({a}, {idx}, axis={axis}, mode='{mode}')")


def op_reduce(g):
    a = g.pick_value(lambda s, d: len(s) > 0)
    if a is None:
        return
    shape, d = g.aval(a)
    nd = len(shape)
    axes = tuple(i for i in range(nd) if g.ch.integer(0, 1)) or (g.ch.integer(0, nd - 1),)
    if d == BOOL:
        g.add(f"lax.{g.ch.pick(['reduce_and', 'reduce_or'])}({a}, {axes})")
        return
    op = g.ch.pick(["reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "argmax", "argmin", "mean"])
    if op in ("argmax", "argmin"):
        axis = g.ch.integer(0, nd - 1)
        if shape[axis] == 0:
            return
        g.add(f"lax.{op}({a}, {axis}, enp.int32)")
    elif op == "mean":
        if is_float(d):
            g.add(f"enp.mean({a}, axis={axes})", ("mean", axes), (a,))
    elif is_float(d) and op in ("reduce_sum", "reduce_prod"):
        g.add(f"lax.{op}({a}, {axes})", (op, axes), (a,))
    else:
        g.add(f"lax.{op}({a}, {axes})")


def op_cumulative(g):
    a = g.pick_value(lambda s, d: len(s) > 0 and d != BOOL)
    if a is None:
        return
    shape, d = g.aval(a)
    axis = g.ch.integer(0, len(shape) - 1)
    op = g.ch.pick(["cumsum", "cumprod", "cummax", "cummin"])
    rev = bool(g.ch.integer(0, 1))
    oracle = (op, axis, rev) if is_float(d) and op in ("cumsum", "cumprod") else None
    g.add(f"lax.{op}({a}, {axis}, {rev})", oracle, (a,) if oracle else ())


def op_dot(g):
    a = g.pick_value(lambda s, d: len(s) > 0 and d != BOOL)
    if a is None:
        return
    sa, d = g.aval(a)
    ca = g.ch.integer(0, len(sa) - 1)
    cands = g.values(lambda s, dd: dd != BOOL and sa[ca] in s)
    b = g.ch.pick(cands)
    sb = g.aval(b)[0]
    cb = g.ch.pick([i for i, s in enumerate(sb) if s == sa[ca]])
    bexpr = g.cast_to(b, d)
    if bexpr != b:
        b = g.add(bexpr)
        if b is None:
            return
    dn = (((ca,), (cb,)), ((), ()))
    oracle = ("dot", dn) if is_float(d) else None
    g.add(f"lax.dot_general({a}, {b}, {dn})", oracle, (a, b) if oracle else ())


def op_sort(g):
    a = g.pick_value(lambda s, d: len(s) > 0)
    if a is None:
        return
    g.add(f"lax.sort({a}, {g.ch.integer(0, len(g.aval(a)[0]) - 1)})")


def op_random(g):
    seed = g.ch.integer(0, 1000)
    shape = _shape(g.ch)
    kind = g.ch.pick(["uniform", "normal", "bits", "randint", "gumbel", "exponential", "laplace", "logistic",
                      "truncated_normal"])
    if kind == "truncated_normal":
        d = g.ch.pick(FLOATS)
        g.add(f"random.truncated_normal(random.key({seed}), -1.5, 2.0, {shape}, enp.{NAMES[d]})")
    elif kind not in ("bits", "randint"):
        d = g.ch.pick(FLOATS)
        g.add(f"random.{kind}(random.key({seed}), {shape}, enp.{NAMES[d]})")
    elif kind == "bits":
        g.add(f"random.bits(random.key({seed}), {shape})")
    else:
        g.add(f"random.randint(random.key({seed}), {shape}, -5, 9)")


OPS = ([op_cast] + [op_unary_float] * 3 + [op_unary_int] * 2 + [op_math_unary] * 4 + [op_math_binary] + [op_binary] * 5
       + [op_bool] + [op_enp_binary] * 2 + [op_select] * 2 + [op_clamp] + [op_cast] * 3 + [op_bitcast]
       + [op_move] * 6 + [op_gather] * 2 + [op_reduce] * 3 + [op_cumulative] + [op_dot] * 2 + [op_sort]
       + [op_random])


def op_chain(g):
    """A float -> same-float exact op of the newest value (with a literal), so
    a deep chain leaves no side outputs and fuses into one expression."""
    a = g.pick_value(lambda s, d: is_float(d))
    d = g.aval(a)[1]
    if g.ch.integer(0, 1):
        g.add(f"lax.{g.ch.pick(['neg', 'abs', 'floor', 'ceil', 'round', 'sqrt', 'square'])}({a})")
    else:
        g.add(f"lax.{g.ch.pick(ARITH)}({a}, {draw_lit(g.ch, d)})")


def generate(ch, max_ops=10, min_ops=1, deep=False, ops=OPS, shape=None, dtypes=FLOATS + DTYPES):
    """A random program: 1-3 inputs of random dtypes and broadcast-compatible
    shapes (rank 0-3, size-0 dims included; or ``shape``), then
    ``min_ops..max_ops`` nodes drawn from ``ops`` (``deep``: each reading the
    newest value it can, a long chain); input dtypes drawn from ``dtypes``."""
    g = _Gen(ch, deep)
    base = _shape(ch) if shape is None else shape
    for i in range(ch.integer(1, 3)):
        d = ch.pick(dtypes)      # by default floats twice as likely: most edge cases live there
        x = draw_array(ch, d, _variant(ch, base))
        name = f"x{i}"
        g.inputs[name] = x
        g.env[name] = enp.asarray(x)
    for _ in range(ch.integer(min_ops, max_ops)):
        before = len(g.nodes)
        for _ in range(8):         # a draw may not apply to the values at hand
            ch.pick(ops)(g)
            if len(g.nodes) > before:
                break
        else:
            op_cast(g)
    for n in g.nodes:
        g.env[n.name] = np.asarray(g.env[n.name])
    return Program(g.inputs, g.nodes, {k: np.asarray(v) for k, v in g.env.items()})


# --- checks -------------------------------------------------------------------------------

def bitwise_mismatch(got, want):
    """Positions where got and want differ: values, NaN positions and zero signs."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"aval {NAMES.get(got.dtype, got.dtype)}{list(got.shape)} vs {NAMES.get(want.dtype, want.dtype)}{list(want.shape)}"
    if is_float(got.dtype):
        g64, w64 = got.astype(np.float64), want.astype(np.float64)
        bad = (np.isnan(g64) != np.isnan(w64)) | (~np.isnan(w64) & ((g64 != w64) | (np.signbit(g64) != np.signbit(w64))))
    else:
        bad = got != want
    return _describe(bad, got, want)


def _describe(bad, got, want, extra=None):
    if not np.any(bad):
        return None
    idx = [tuple(int(i) for i in t) for t in np.argwhere(bad)[:4]]
    parts = [f"at {i}: got {np.asarray(got)[i]!r} want {np.asarray(want)[i]!r}"
             + (f" ({extra[i]})" if extra is not None else "") for i in idx]
    return f"{int(np.sum(bad))} of {bad.size} differ; " + "; ".join(parts)


def _accumulate(x, axes, op):
    """Extended-precision sum/product over ``axes`` with the error-bound inputs."""
    xl = x.astype(np.longdouble)
    n = math.prod(x.shape[a] for a in axes)
    with np.errstate(all="ignore"):
        if op == "sum":
            return xl.sum(axis=axes), np.abs(xl).sum(axis=axes), n
        return xl.prod(axis=axes), np.abs(xl).prod(axis=axes), n


def _bounded(got, exact, scale, n, d, kind, also_ok=False, extra=0):
    """|got - exact| <= 0.5 ulp(exact) + n u scale (the classic a-priori bound of a
    sum/dot in any order, u the accumulator's unit roundoff, float32's for the
    half types); non-finite exacts must match."""
    p, emin = precision(d)
    # half types accumulate in float32 and round once (docs/backends.md)
    u = np.longdouble(2.0) ** -(max(p, 24))
    fmax = float(ml_dtypes.finfo(d).max)
    got_l = np.asarray(got).astype(np.longdouble)
    with np.errstate(all="ignore"):
        err_ulp = ulp_distance(got, exact, d)
        ulp = np.ldexp(np.longdouble(1.0), np.maximum(np.frexp(np.abs(exact).astype(np.float64))[1] - p, emin))
        # n half-subnormals: each rounding below the normal range is absolute
        allowed = 0.5 * ulp + n * u * scale + n * np.ldexp(np.longdouble(1), emin) + extra
        ok = np.abs(got_l - exact) <= allowed
        # an intermediate may overflow in some order once the magnitudes get near the top
        may_overflow = scale * (1 + n * u) > fmax
        ok |= may_overflow & np.isinf(got_l)
        if kind == "prod":
            # an overflowed partial product meeting a zero, or an underflowed one
            # meeting an infinity, is NaN in that order: both are IEEE outcomes
            ok |= may_overflow & np.isnan(got_l)
            ok |= np.isinf(exact) & np.isnan(got_l)
        nonfin = ~np.isfinite(exact) | (np.abs(exact) > fmax * (1 + u))
        with np.errstate(over="ignore"):
            exact_t = exact.astype(np.float64).astype(d).astype(np.float64)
        same = (np.isnan(exact_t) & np.isnan(got_l)) | (exact_t == got_l)
        ok = np.where(nonfin & ~may_overflow, same, ok)
        ok |= np.isnan(exact) & np.isnan(got_l)
        ok |= also_ok
    return _describe(~ok, got, exact.astype(np.float64), np.round(err_ulp, 2))


def _nan_inf(x, axes):
    """The IEEE outcome of summing with infinities: NaN where a NaN or both infinities meet."""
    xl = x.astype(np.float64)
    has_nan = np.isnan(xl).any(axis=axes)
    pinf, ninf = (xl == np.inf).any(axis=axes), (xl == -np.inf).any(axis=axes)
    return has_nan | (pinf & ninf)


def check_inexact(node, got, env):
    """None if ``got`` (the jit's value of ``node``) is within its bound, else why not."""
    kind = node.oracle[0]
    args = [np.asarray(env[a]) for a in node.args]
    got = np.asarray(got)
    d = got.dtype
    if kind == "math":
        name = node.oracle[1]
        # the mpmath double-double (hi, lo) on equal-shape arguments: hi + lo in
        # extended precision
        bargs = np.broadcast_arrays(*[a.astype(np.float64) for a in args])
        hi, lo = mathlib_cases.reference(name, [np.atleast_1d(a).ravel() for a in bargs])
        ref = hi.astype(np.longdouble) + lo
        ref = np.broadcast_to(ref.reshape(bargs[0].shape), got.shape)
        err = ulp_distance(got, ref, d)
        return _describe(err > math_bound(name, d), got, ref, np.round(err, 2))
    x = args[0]
    if kind in ("reduce_sum", "reduce_prod", "mean"):
        axes = node.oracle[1]
        exact, scale, n = _accumulate(x, axes, "prod" if kind == "reduce_prod" else "sum")
        also_ok = False
        if kind == "reduce_prod":
            # a partial product through the subnormals loses digits that later
            # factors scale back up: in some order, any result of the right sign
            ax = np.abs(x.astype(np.float64))
            with np.errstate(all="ignore"):
                smalls = np.where(ax < 1, ax, 1).astype(np.longdouble).prod(axis=axes)
            also_ok = (smalls < float(ml_dtypes.finfo(x.dtype).tiny)) & (np.isfinite(exact))
        extra = 0
        if kind == "mean":
            # a mean is a sum rounded to the dtype, then a division rounded again
            p, emin = precision(d)
            with np.errstate(all="ignore"):
                e = np.frexp(np.abs(exact).astype(np.float64))[1]
            extra = 0.5 * np.ldexp(np.longdouble(1.0), np.maximum(e - p, emin)) / max(n, 1)
            exact, scale = exact / max(n, 1), scale / max(n, 1)
            if n == 0:
                exact = np.full(exact.shape, np.nan, np.longdouble)
        if kind != "reduce_prod":
            exact = np.where(_nan_inf(x, axes), np.nan, exact)
        return _bounded(got, exact, scale, n, d, "prod" if kind == "reduce_prod" else "sum", also_ok, extra)
    if kind in ("cumsum", "cumprod"):
        _, axis, rev = node.oracle
        xl = np.flip(x, axis) if rev else x
        with np.errstate(all="ignore"):
            if kind == "cumsum":
                exact, scale = np.cumsum(xl.astype(np.longdouble), axis), np.cumsum(np.abs(xl.astype(np.longdouble)), axis)
                xf = xl.astype(np.float64)
                bad = np.maximum.accumulate(np.isnan(xf), axis) | (np.maximum.accumulate(xf == np.inf, axis)
                                                                    & np.maximum.accumulate(xf == -np.inf, axis))
                exact = np.where(bad, np.nan, exact)
            else:
                exact, scale = np.cumprod(xl.astype(np.longdouble), axis), np.cumprod(np.abs(xl.astype(np.longdouble)), axis)
        # each prefix builds on the last rounded one: once a prefix overflows,
        # every later one may stay infinite (or turn NaN, meeting a zero)
        with np.errstate(invalid="ignore"):
            ovf = np.maximum.accumulate(~(np.abs(exact) <= float(ml_dtypes.finfo(d).max)), axis)
        if rev:
            exact, scale, ovf = np.flip(exact, axis), np.flip(scale, axis), np.flip(ovf, axis)
        return _bounded(got, exact, scale, max(x.shape[axis], 1), d, "prod" if kind == "cumprod" else "sum",
                        ovf & ~np.isfinite(got.astype(np.float64)))
    if kind == "dot":
        (ca, cb), _ = node.oracle[1]
        a, b = args[0].astype(np.longdouble), args[1].astype(np.longdouble)
        with np.errstate(all="ignore"):
            exact = np.tensordot(a, b, (ca, cb))
            scale = np.tensordot(np.abs(a), np.abs(b), (ca, cb))
            ap = np.moveaxis(args[0].astype(np.float64), ca[0], -1)
            bp = np.moveaxis(args[1].astype(np.float64), cb[0], -1)
            prods = (ap.reshape(ap.shape[:-1] + (1,) * (bp.ndim - 1) + ap.shape[-1:])
                     * bp.reshape((1,) * (ap.ndim - 1) + bp.shape))
            # NaN where a NaN, an inf * 0, or +inf meeting -inf enters the sum
            nanish = np.isnan(prods).any(-1) | ((prods == np.inf).any(-1) & (prods == -np.inf).any(-1))
            # a product or partial sum that overflows the dtype (in whatever
            # precision the backend multiplies half types) may give inf or NaN
            overflow = (np.isfinite(prods) & (np.abs(prods) > float(ml_dtypes.finfo(d).max))).any(-1)
        exact = np.where(nanish, np.nan, exact)
        why = _bounded(got, exact, scale, a.shape[ca[0]], d, "sum", ~np.isfinite(got.astype(np.float64)) & overflow)
        return why
    raise KeyError(kind)


def check_program(prog):
    """Run ``prog`` eagerly (done while generating), under the reference
    backend and under the LLVM backend; a list of mismatch descriptions."""
    f = prog.function()
    inputs = list(prog.inputs.values())
    outs = prog.outputs
    problems = []
    with np.errstate(all="ignore"):
        ref = ember.jit(f, backend="reference")(*inputs)
        nat = ember.jit(f)(*inputs)
    ref = dict(zip(outs, (np.asarray(v) for v in ref)))
    nat = dict(zip(outs, (np.asarray(v) for v in nat)))
    by_name = {n.name: n for n in prog.nodes}
    for name in outs:
        why = bitwise_mismatch(ref[name], prog.eager[name])
        if why:
            problems.append(("reference vs eager", name, by_name[name].expr if name in by_name else name, why))
    env = {k: enp.asarray(v) for k, v in prog.inputs.items()}
    for node in prog.nodes:
        val = np.asarray(eval_expr(node.expr, env))
        if node.oracle is not None:
            args = {a: np.asarray(env[a]) for a in node.args}
            why = check_inexact(node, nat[node.name], args)
            if why:
                problems.append(("native vs oracle", node.name, node.expr, why))
            # the a-priori bounds of sums, products and dots hold for numpy's
            # order too (its transcendentals are the mathlib's reference, not bounded here)
            why = None if node.oracle[0] == "math" else check_inexact(node, val, args)
            if why:
                problems.append(("eager vs oracle", node.name, node.expr, why))
            # carry on from the native value so its rounding is not counted twice
            same_aval = nat[node.name].shape == val.shape and nat[node.name].dtype == val.dtype
            val = nat[node.name] if same_aval else val
        elif node.name in nat:
            why = bitwise_mismatch(nat[node.name], val)
            if why:
                problems.append(("native vs eager", node.name, node.expr, why))
        env[node.name] = enp.asarray(val)
    return problems


def report(prog, problems):
    lines = [f"{len(problems)} mismatch(es):"]
    lines += [f"  [{what}] {name} = {expr}\n      {why}" for what, name, expr, why in problems]
    lines += ["reproducer:", prog.reproducer()]
    return "\n".join(lines)


def chain_depth(prog):
    """The longest path of nodes from an input to an output (a loop, no recursion)."""
    depth = {k: 0 for k in prog.inputs}
    for n in prog.nodes:
        depth[n.name] = 1 + max((depth[t] for t in _tokens(n.expr) if t in depth), default=0)
    return max(depth.values())


def rebuild(inputs, nodes):
    """A program over ``inputs`` with ``nodes`` (eager values recomputed); None if
    a node no longer evaluates."""
    env = {k: enp.asarray(v) for k, v in inputs.items()}
    try:
        for n in nodes:
            env[n.name] = eval_expr(n.expr, env)
    except Exception:  # noqa: BLE001  (a candidate the shrinker discards)
        return None
    return Program(dict(inputs), list(nodes), {k: np.asarray(v) for k, v in env.items()})


def shrink(prog, fails):
    """Greedily drop nodes (with everything that reads them) while ``fails(prog)``
    stays true: the triage driver's minimal reproducer (hypothesis shrinks the
    tests' failures itself)."""
    changed = True
    while changed:
        changed = False
        for i in range(len(prog.nodes) - 1, -1, -1):
            if i >= len(prog.nodes):
                continue
            dropped = {prog.nodes[i].name}
            keep = []
            for n in prog.nodes:
                if n.name in dropped or dropped & set(_tokens(n.expr)) or dropped & set(n.args):
                    dropped.add(n.name)
                else:
                    keep.append(n)
            cand = rebuild(prog.inputs, keep)
            if cand is not None and cand.nodes and fails(cand):
                prog, changed = cand, True
        used = {t for n in prog.nodes for t in _tokens(n.expr)}
        inputs = {k: v for k, v in prog.inputs.items() if k in used}
        if len(inputs) < len(prog.inputs):
            cand = rebuild(inputs, prog.nodes)
            if cand is not None and fails(cand):
                prog, changed = cand, True
    return prog


# --- a child process to run programs in ---------------------------------------------------

def _read_exact(f, n):
    buf = b""
    while len(buf) < n:
        chunk = f.read(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def _serve():
    """The child's loop: read a pickled program, answer its problems."""
    import pickle
    import traceback
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)          # stray prints go to stderr, not into the answers
    inp = sys.stdin.buffer
    while True:
        try:
            n = int.from_bytes(_read_exact(inp, 8), "little")
        except EOFError:
            return
        inputs, nodes, eager = pickle.loads(_read_exact(inp, n))
        try:
            problems = check_program(Program(inputs, nodes, eager))
        except Exception as e:  # noqa: BLE001  (an internal error on a valid program is a finding)
            tb = traceback.format_exc().strip().splitlines()
            problems = [("exception", "", "", f"{type(e).__name__}: {e} ({tb[-3].strip()})")]
        data = pickle.dumps(problems)
        out.write(len(data).to_bytes(8, "little") + data)
        out.flush()


class Sandbox:
    """Runs ``check_program`` in a long-lived child process, so a crash in
    native code (a segfault) is reported as a mismatch of that program, and
    hypothesis shrinks it, instead of killing the test session.

    Example:
        >>> import numpy as np
        >>> box = Sandbox()
        >>> box.check(generate(RngChooser(np.random.default_rng(0)), max_ops=3))
        []
        >>> box.close()
    """

    def __init__(self, timeout_s=300):
        self.proc, self.timeout_s = None, timeout_s

    def _start(self):
        import subprocess
        here = os.path.dirname(os.path.abspath(__file__))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([here] + [p for p in sys.path if p]))
        self.proc = subprocess.Popen([sys.executable, "-c", "import fuzz_programs; fuzz_programs._serve()"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

    def check(self, prog):
        import pickle
        import select
        import signal
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        data = pickle.dumps((prog.inputs, prog.nodes, prog.eager))
        try:
            self.proc.stdin.write(len(data).to_bytes(8, "little") + data)
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout_s)
            if not ready:
                self.proc.kill()
                raise EOFError
            n = int.from_bytes(_read_exact(self.proc.stdout, 8), "little")
            return pickle.loads(_read_exact(self.proc.stdout, n))
        except (BrokenPipeError, EOFError):
            rc = self.proc.wait()
            self.proc = None
            how = (f"killed by {signal.Signals(-rc).name}" if rc < 0 else f"exit status {rc}")
            return [("crash", "", "", f"the process running the program died ({how}); "
                                      f"run the reproducer to see where")]

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        self.proc = None
