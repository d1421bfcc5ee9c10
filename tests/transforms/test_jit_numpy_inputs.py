"""jit reads aligned, C-contiguous numpy arguments in place (no copy), and the
immutability of what it returns still holds."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.transforms import jit as jit_mod

BACKENDS = [None, "reference"]


def test_peak_memory_of_a_reduction_over_a_big_numpy_array():
    # the peak resident set (tracemalloc does not see it all), in a subprocess; it reads
    # VmHWM, its memory map's high-water mark (Linux), since a child's ru_maxrss starts
    # at its parent's (the kernel carries it over fork + exec), else ru_maxrss
    n = 50_000_000   # 200 MB of float32
    code = textwrap.dedent(f"""
        import resource, numpy as np, ember
        def peak():
            try:
                for line in open("/proc/self/status"):
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
            except OSError:
                pass
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        x = np.ones({n}, np.float32)
        f = ember.jit(lambda x: x.sum())
        f(np.ones(8, np.float32))   # compile on a small input first
        before = peak()
        r = float(f(x))
        after = peak()
        print(r, after - before, before)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600, check=True).stdout.split()
    assert float(out[0]) == n
    grown, before = int(out[1]), int(out[2])
    assert before >= n * 4   # the reading includes the input: it measures this process
    assert grown < 0.25 * n * 4, f"peak RSS grew by {grown / 1e6:.0f} MB for a {n * 4 / 1e6:.0f} MB input"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [lambda a: a, lambda a: a.reshape(2, 3), lambda a: a[1:4],
                                lambda a: (a, a * 2), lambda a: {"x": a.T, "y": a.sum()}],
                         ids=["identity", "reshape", "slice", "pair", "dict"])
def test_outputs_do_not_alias_the_callers_array(fn, backend):
    x = np.arange(6, dtype=np.float32)
    ref = ember.tree.tree_map(lambda t: np.array(t), fn(x.copy()))
    r = ember.jit(fn, backend=backend)(x)
    x[:] = -1   # the caller writes its array after the call
    got = ember.tree.tree_map(np.asarray, r)
    for a, b in zip(ember.tree.tree_leaves(got), ember.tree.tree_leaves(ref)):
        np.testing.assert_array_equal(a, b)
        assert not a.flags.writeable


@pytest.mark.parametrize("backend", BACKENDS)
def test_program_never_writes_its_numpy_input(backend):
    x = np.linspace(-1, 1, 1000).astype(np.float32)
    keep = x.copy()
    f = ember.jit(lambda a: enp.sin(a) * 2 + a, backend=backend)
    for _ in range(3):   # repeated calls (output recycling) too
        y = f(x)
        np.testing.assert_array_equal(x, keep)
        del y
    assert x.flags.writeable   # the caller's flags are left alone


def test_in_place_only_where_safe():
    base = np.arange(13, dtype=np.float64)
    cases = {
        "contiguous": (base, True),
        "strided": (base[::2], False),
        "fortran": (np.asfortranarray(np.arange(6.0).reshape(2, 3)), False),
        "misaligned": (np.zeros(8 * 4 + 1, np.uint8)[1:].view(np.float64), False),
        "big-endian": (np.arange(4, dtype=">f4"), False),
    }
    for name, (x, inplace) in cases.items():
        op = jit_mod._borrowed_operand(x)
        assert (op is not None) == inplace, name
        if op is not None:
            assert np.shares_memory(np.asarray(op), x) and not np.asarray(op).flags.writeable
    f = ember.jit(lambda a: a * 2)
    for name, (x, _) in cases.items():
        if x.dtype.isnative:
            np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(x) * 2, err_msg=name)


def test_under_a_transform_numpy_arguments_are_still_snapshots():
    # inside an outer jit the inner call's numpy argument becomes a staged constant:
    # a copy, so a later write by the caller does not reach the compiled program
    data = np.ones(3, np.float32)
    inner = ember.jit(lambda a, b: a + b)
    outer = ember.jit(lambda a: inner(a, data))
    a = enp.zeros(3)
    assert outer(a).tolist() == [1.0, 1.0, 1.0]
    data[:] = 5
    assert outer(a).tolist() == [1.0, 1.0, 1.0]
    g = ember.grad(lambda w: (inner(w, data) * w).sum())(enp.ones(3))
    assert g.tolist() == [7.0, 7.0, 7.0]


def test_numpy_argument_with_donation_is_not_written():
    x = np.ones(1000, np.float32)
    f = ember.jit(lambda a: a + 1, donate_argnums=0)
    for _ in range(3):
        y = f(x)
        np.testing.assert_array_equal(np.asarray(y), 2)
    np.testing.assert_array_equal(x, 1)


@pytest.mark.parametrize("fn", [lambda a, b: a, lambda a, b: a.reshape(-1) * b, lambda a, b: (a[1:], b)],
                         ids=["identity", "product", "slices"])
def test_repeated_calls_with_numpy_arguments(fn):
    # from the second call on, numpy arguments take the fast path (no flattening, a
    # memoised aval): the same values, outputs that never alias the caller's arrays,
    # mixed Array / numpy arguments, and a layout change (non-contiguous, other
    # dtype) on a later call with the same shape still copied or retraced
    f = ember.jit(fn)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    w = enp.asarray(np.float32(3.0))
    for b in (w, np.float32(3.0) * np.ones((), np.float32), w):
        for _ in range(3):
            keep = x.copy()
            r = f(x, b)
            want = ember.tree.tree_map(np.array, fn(keep, np.asarray(b)))
            x[:] = x + 1   # written after the call: results must not change
            for a, c in zip(ember.tree.tree_leaves(ember.tree.tree_map(np.asarray, r)),
                            ember.tree.tree_leaves(want)):
                np.testing.assert_array_equal(a, c)
    fortran = np.asfortranarray(x)
    np.testing.assert_array_equal(np.asarray(ember.tree.tree_leaves(f(fortran, w))[0]),
                                  np.asarray(ember.tree.tree_leaves(fn(fortran.copy(), np.float32(3.0)))[0]))
    d64 = x.astype(np.float64)
    assert ember.tree.tree_leaves(f(d64, w))[0].dtype == ember.tree.tree_leaves(fn(d64, np.float32(3.0)))[0].dtype

