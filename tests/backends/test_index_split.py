"""Index division/modulo by a constant distributes products over sums before it
splits (loop_ir._split_multiple): reading a reshape that only regroups or inserts
unit axes costs no division per element, and the values stay right."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.backends.kernels.loop_ir import E, idiv, imod, linearize
from ember.backends.kernels.schedule import schedule
from ember.backends.llvm.kernel_target import cpu_target


def _has(expr, tag):
    stack = [expr]
    while stack:
        e = stack.pop()
        if type(e) is E:
            if e[0] == tag:
                return True
            stack.extend(x for x in e if type(x) is E)
    return False


def test_reshape_flat_index_splits_without_division():
    idx = (E("v", 0), E("v", 1), E("v", 2))
    ranges = {0: 1000, 1: 3, 2: 64}
    flat = linearize(idx, (1000, 3, 64))
    assert idiv(flat, 192, ranges) is E("v", 0)
    q = idiv(flat, 64, ranges)
    assert not _has(q, "/") and imod(q, 3, ranges) is E("v", 1)
    assert imod(flat, 64, ranges) is E("v", 2)
    # a term that does not divide stays a division
    assert _has(idiv(flat, 128, ranges), "/")


@pytest.mark.parametrize("shape,new", [((5, 3, 1, 8), (5, 3, 8)), ((4, 1, 6), (4, 6, 1)), ((6, 4), (3, 2, 4))])
def test_reshape_reads_native_equal_reference_and_need_no_division(shape, new):
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    f = lambda x: x.reshape(new) * x.reshape(new) * 2.0 + x.reshape(new)  # noqa: E731
    g = ember.jit(f).lower(x).closed
    bodies = [s.body for s in schedule(g, cpu_target()).steps if hasattr(s, "body")]
    assert bodies and not any(_has(b, "/") or _has(b, "%") for b in bodies)
    np.testing.assert_array_equal(np.asarray(ember.jit(f)(x)), np.asarray(ember.jit(f, backend="reference")(x)))


def test_multiples_of_the_divisor_drop_out_of_a_larger_remainder():
    # (i0*8192 + i1) with i1 < 8192: % 256 is i1 % 256 and // 256 is i0*32 + i1 // 256
    idx = (E("v", 0), E("v", 1))
    ranges = {0: 16, 1: 8192}
    flat = linearize(idx, (16, 8192))
    assert imod(flat, 256, ranges) is E("%", E("v", 1), 256)
    q = idiv(flat, 256, ranges)
    assert not _has(q, "%") and _has(q, "/")
    rng = np.random.default_rng(0)
    for i0, i1 in zip(rng.integers(0, 16, 50), rng.integers(0, 8192, 50)):
        a = int(i0) * 8192 + int(i1)
        env = {0: int(i0), 1: int(i1)}
        assert _eval(imod(flat, 256, ranges), env) == a % 256
        assert _eval(q, env) == a // 256


def _eval(e, env):
    """An index expression's value at loop variables `env` (iterative)."""
    vals, stack = {}, [(e, False)]
    while stack:
        x, done = stack.pop()
        if x in vals:
            continue
        kids = [c for c in x[1:] if type(c) is E]
        if not done and kids:
            stack.append((x, True))
            stack.extend((c, False) for c in kids)
            continue
        t = x[0]
        if t == "v":
            vals[x] = env[x[1]]
        elif t == "c":
            vals[x] = x[1]
        elif t == "+":
            vals[x] = vals[x[1]] + vals[x[2]]
        elif t == "*":
            vals[x] = vals[x[1]] * x[2]
        elif t == "/":
            vals[x] = vals[x[1]] // x[2]
        elif t == "%":
            vals[x] = vals[x[1]] % x[2]
        else:
            raise AssertionError(t)
    return vals[e]
