"""Deep fused chains compile: every walk over the IR and the kernel expressions
is iterative (issue #12, item 5).  Before, ~324 fused primitives raised
RecursionError in codegen, and the recursive kernel fingerprint segfaulted with
a raised recursion limit.  20,000 primitives take ~7 s on a loaded 2-core
machine (LLVM's code generation dominates), so the default suite runs 3,000."""
import sys

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import grad, jit, lax
from ember.backends.kernels import fingerprint, format_program, schedule
from ember.backends.llvm.ops import supports


def _chain(n):
    def f(x):
        for _ in range(n // 2):
            x = x * 0.99991 + 0.001
        return x
    return f


def _run(n):
    x = np.linspace(-1, 1, 16).astype(np.float32)
    f = _chain(n)
    np.testing.assert_array_equal(np.asarray(jit(f)(x)), np.asarray(f(x)))
    g = lambda v: enp.sum(f(v))  # noqa: E731
    np.testing.assert_allclose(np.asarray(jit(grad(g))(x)), np.asarray(grad(g)(x)), rtol=1e-6)
    assert sys.getrecursionlimit() <= 10_000


def test_chain_of_3000_primitives():
    _run(3000)


@pytest.mark.slow
def test_chain_of_20000_primitives():
    _run(20000)


def test_audit_tanh_chain():
    def f(x):
        for _ in range(120):
            x = enp.tanh(x * 1.0001 + 0.001)
        return x
    x = np.linspace(-1, 1, 8).astype(np.float32)
    np.testing.assert_allclose(np.asarray(jit(f)(x)), np.asarray(f(x)), rtol=1e-5, atol=1e-6)


def test_deep_index_expressions_and_dumps():
    """1,500 reversals nest the index arithmetic 1,500 deep; the reduction, the
    program dump and the fingerprint walk it without recursion."""
    def f(x):
        for _ in range(1500):
            x = lax.rev(x, (0,)) * 1.0
        return lax.reduce_max(x, (0,))
    x = np.arange(10, dtype=np.float32) - 3.0
    np.testing.assert_array_equal(np.asarray(jit(f)(x)), np.asarray(f(x)))
    prog = schedule(ember.make_graph(f)(x), supports)
    assert fingerprint(prog) == fingerprint(schedule(ember.make_graph(f)(x), supports))
    assert "reduce_max" in format_program(prog)
