"""Random programs with reductions across processes, products, row sums and host
callbacks: compiled with the reductions overlapped they give the blocking
program's bits and run the callbacks in the same order, under a communicator
that reads each operand only when the reduction is waited for (as MPI may)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember import config, debug, lax
from ember.backends.kernels import CollectiveStart, CollectiveWait
from ember.distributed._comm import Pending
from ember.fx import axis_env

OPS = ("sin", "tanh", "add", "mul", "matmul", "rowsum", "psum", "callback")


class _MirroredLateWorld:
    """Two ranks holding the same values; a started reduction reads its operand at the wait."""
    rank, size = 0, 2

    def allreduce(self, x, op):
        x = np.asarray(x)
        return x + x if op == "sum" else x.copy()

    def start_allreduce(self, x, op):
        return Pending(lambda: self.allreduce(x, op))


def _build(ops, picks):
    """fn(x) for the drawn program; callbacks append to the list it returns."""
    seen = []

    def fn(x):
        vals = [x]
        for op, (i, j) in zip(ops, picks):
            a, b = vals[i % len(vals)], vals[j % len(vals)]
            if op == "sin":
                v = enp.sin(a)
            elif op == "tanh":
                v = enp.tanh(a)
            elif op == "add":
                v = a + b
            elif op == "mul":
                v = a * b * 0.5
            elif op == "matmul":
                v = (a @ b) * 0.25
            elif op == "rowsum":
                v = a + enp.sum(a, axis=1, keepdims=True)
            elif op == "psum":
                v = lax.psum(a, "batch") * 0.5
            else:
                debug.callback(lambda t, k=len(vals): seen.append((k, np.array(t))), a)
                v = a
            vals.append(v)
        return vals[-1], vals[len(vals) // 2]
    return fn, seen


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.tuples(st.integers(0, 30), st.integers(0, 30))),
                min_size=1, max_size=14),
       st.integers(0, 2 ** 31 - 1))
def test_overlapped_programs_give_the_blocking_bits(program, seed):
    ops = [op for op, _ in program]
    picks = [p for _, p in program]
    x = enp.asarray(np.random.default_rng(seed).normal(size=(4, 4)).astype(np.float32))
    got = {}
    try:
        for overlap in (True, False):
            config.update("overlap_collectives", overlap)
            fn, seen = _build(ops, picks)
            f = ember.jit(fn)
            with axis_env.bind_axis("batch", 2, comm=_MirroredLateWorld()):
                outs = [np.asarray(o) for o in f(x)]
                steps = f.lower(x).kernels().steps
            got[overlap] = (outs, seen, steps)
    finally:
        config.update("overlap_collectives", True)
    (o1, s1, steps), (o2, s2, blocking) = got[True], got[False]
    for a, b in zip(o1, o2):
        np.testing.assert_array_equal(a, b)
    assert [k for k, _ in s1] == [k for k, _ in s2]
    for (_, a), (_, b) in zip(s1, s2):
        np.testing.assert_array_equal(a, b)
    # every reduction the blocking program has is split, each wait after its start
    n_psum = sum(getattr(s, "eq", None) is not None and s.eq.prim.name == "psum" for s in blocking)
    starts = {s.outputs[0]: i for i, s in enumerate(steps) if isinstance(s, CollectiveStart)}
    waits = {s.args[0]: i for i, s in enumerate(steps) if isinstance(s, CollectiveWait)}
    assert len(starts) == len(waits) == n_psum
    assert all(starts[t] < waits[t] for t in starts)
