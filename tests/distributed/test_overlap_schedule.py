"""Overlapped all-reduce in the compiled program (one process: the local world).

A bucket's start must come after the kernels that make its gradients and before
the backward kernels that do not feed it; its wait after them and before the
first consumer (the update); effects keep their order; results equal the
blocking program's bit for bit; under vmap nothing is split."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember import config, debug, distributed as dist, lax
from ember.backends.kernels import CollectiveProgress, CollectiveStart, CollectiveWait, GemmKernel, LibraryStep
from ember.distributed._gradients import buckets
from ember.fx.core import AbstractArray

SIZES = [(6, 16), (16, 16), (16, 16), (16, 1)]


def _params(seed=0):
    rng = np.random.default_rng(seed)
    p = OrderedDict()
    for i, (a, b) in enumerate(SIZES):
        p[f"{i}.weight"] = enp.asarray(rng.normal(size=(a, b)).astype(np.float32) / np.sqrt(a))
        p[f"{i}.bias"] = enp.asarray(rng.normal(size=b).astype(np.float32) * 0.1)
    x = enp.asarray(rng.normal(size=(8, 6)).astype(np.float32))
    y = enp.asarray(rng.normal(size=(8, 1)).astype(np.float32))
    return p, x, y


def _loss(p, x, y):
    h = x
    for i in range(len(SIZES)):
        h = h @ p[f"{i}.weight"] + p[f"{i}.bias"]
        if i < len(SIZES) - 1:
            h = enp.tanh(h)
    return enp.mean((h - y) ** 2)


def _step(p, x, y):
    g = ember.grad(_loss)(p, x, y)
    g = dist.all_reduce_gradients(g, "batch", bucket_bytes=300)
    return OrderedDict((k, p[k] - 0.1 * g[k]) for k in p)


@pytest.fixture
def overlap_setting():
    yield
    config.update("overlap_collectives", True)


def _program(fn, *args, overlap=True):
    config.update("overlap_collectives", overlap)
    try:
        with dist.process_axis("batch"):
            return ember.jit(fn).lower(*args).kernels()
    finally:
        config.update("overlap_collectives", True)


def _readers(steps, buf):
    return [i for i, s in enumerate(steps) if buf in s.inputs]


def test_each_start_precedes_later_backward_kernels_and_its_wait_follows_them():
    prog = _program(_step, *_params())
    steps = prog.steps
    starts = [i for i, s in enumerate(steps) if isinstance(s, CollectiveStart)]
    waits = {s.args[0]: i for i, s in enumerate(steps) if isinstance(s, CollectiveWait)}
    assert len(starts) >= 3 and len(waits) == len(starts)
    gemms = [i for i, s in enumerate(steps) if isinstance(s, GemmKernel)]
    for t in starts:
        w = waits[steps[t].outputs[0]]
        # the backward pass goes on while the bucket is in flight ...
        if t != starts[-1]:
            assert any(t < g < w for g in gemms), (t, w, gemms)
        # ... and the wait comes just before the result's first reader, the update
        (first,) = _readers(steps, steps[w].outputs[0])[:1]
        assert all(isinstance(steps[j], CollectiveWait) for j in range(w + 1, first))
    # the first bucket (the last layer's gradients) starts before the first layer's
    # weight gradient exists: that product comes later
    assert starts[0] < max(gemms)
    # after each product run while reductions are in flight, MPI gets to move them on
    for g in gemms:
        tokens = {steps[t].outputs[0] for t in starts if t < g < waits[steps[t].outputs[0]]}
        if tokens:
            assert isinstance(steps[g + 1], CollectiveProgress) and set(steps[g + 1].args) == tokens


def test_the_blocking_program_keeps_one_step_where_the_reduction_was_traced():
    prog = _program(_step, *_params(), overlap=False)
    kinds = [type(s) for s in prog.steps]
    assert CollectiveStart not in kinds and CollectiveWait not in kinds
    assert sum(isinstance(s, LibraryStep) and s.eq.prim.name == "psum" for s in prog.steps) >= 3


def test_overlapped_and_blocking_programs_give_the_same_bits(overlap_setting):
    p, x, y = _params(1)
    results = {}
    for overlap in (True, False):
        config.update("overlap_collectives", overlap)
        f = ember.jit(_step)                         # a fresh jit: compiled under the setting
        q = p
        with dist.process_axis("batch"):
            for _ in range(5):
                q = f(q, x, y)
        results[overlap] = q
    for k in p:
        np.testing.assert_array_equal(np.asarray(results[True][k]), np.asarray(results[False][k]), err_msg=k)
    # and the local world's reduction is the identity: plain gradient descent
    ref = p
    for _ in range(5):
        g = ember.grad(_loss)(ref, x, y)
        ref = OrderedDict((k, ref[k] - 0.1 * g[k]) for k in ref)
    for k in p:
        np.testing.assert_allclose(np.asarray(results[True][k]), np.asarray(ref[k]), rtol=1e-5, atol=1e-6)


def test_callbacks_and_collectives_keep_their_program_order(overlap_setting):
    seen = []

    def fn(x):
        a = enp.sin(x)
        debug.callback(lambda v: seen.append(("first", float(v[0]))), a)
        s = lax.psum(a, "batch")            # may not start before the first callback
        b = enp.cos(x).sum()
        debug.callback(lambda v: seen.append(("second", float(v))), b)
        t = lax.psum(b * 2.0, "batch")      # nor before the second
        return s * t

    x = enp.asarray(np.linspace(0, 1, 5, dtype=np.float32))
    steps = _program(fn, x).steps
    names = [("start" if isinstance(s, CollectiveStart) else s.eq.prim.name) for s in steps
             if isinstance(s, LibraryStep) and not isinstance(s, (CollectiveWait, CollectiveProgress))]
    assert names == ["debug_callback", "start", "debug_callback", "start"], names
    with dist.process_axis("batch"):
        out = ember.jit(fn)(x)
    assert [w for w, _ in seen] == ["first", "second"]
    xs = np.asarray(x)
    np.testing.assert_allclose(np.asarray(out), np.sin(xs) * 2 * np.cos(xs).sum(), rtol=1e-5)


def test_a_reduction_of_a_reduction_waits_before_the_second_starts():
    def fn(x):
        return lax.psum(lax.psum(x * 3.0, "batch") + 1.0, "batch")

    x = enp.ones(4)
    steps = _program(fn, x).steps
    kinds = [type(s).__name__ for s in steps if isinstance(s, LibraryStep)]
    assert kinds == ["CollectiveStart", "CollectiveWait", "CollectiveStart", "CollectiveWait"]
    with dist.process_axis("batch"):
        assert ember.jit(fn)(x).tolist() == [4.0] * 4


def test_under_vmap_the_reduction_is_array_code_with_no_collective_steps():
    p, x, y = _params()
    g = ember.tree.map(lambda v: enp.stack([v, 3 * v]), dict(p))
    f = ember.vmap(lambda g: dist.all_reduce_gradients(g, "i", bucket_bytes=300), axis_name="i")
    prog = ember.jit(f).lower(g).kernels()
    assert not any(isinstance(s, LibraryStep) for s in prog.steps)
    out = ember.jit(f)(g)
    for k in p:
        np.testing.assert_allclose(np.asarray(out[k]), np.stack([2 * np.asarray(p[k])] * 2), rtol=1e-6)


def test_buckets_fill_from_the_last_parameter_and_respect_the_size():
    f32 = [AbstractArray((n,), np.dtype("float32")) for n in (10, 3, 3, 40)]
    assert buckets(f32, bucket_bytes=40) == [[3], [2, 1], [0]]
    with pytest.raises(ValueError, match="all_reduce_gradients: bucket_bytes must be a positive int"):
        buckets(f32, bucket_bytes=0)
    from ember import nn, optim
    model = nn.Linear(2, 1)
    with pytest.raises(ValueError, match=r"TrainStep: bucket_bytes must be a positive int .* got 2.5"):
        nn.TrainStep(model, optim.SGD(model, lr=0.1), lambda m, x: m(x).sum(), distributed=True,
                     bucket_bytes=2.5)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.sampled_from(["float32", "float16", "int32"])),
                max_size=12),
       st.integers(1, 200))
def test_buckets_partition_the_leaves_by_dtype_within_the_size(leaves, limit):
    avals = [AbstractArray((n,), np.dtype(d)) for n, d in leaves]
    groups = buckets(avals, bucket_bytes=limit)
    flat = [i for g in groups for i in g]
    assert sorted(flat) == list(range(len(avals)))
    for g in groups:
        assert len({avals[i].dtype for i in g}) == 1
        assert g == sorted(g, reverse=True)                 # last parameter first
        nbytes = sum(avals[i].size * avals[i].dtype.itemsize for i in g)
        assert len(g) == 1 or nbytes <= limit
    # buckets open in reverse leaf order: their first leaves decrease
    assert [g[0] for g in groups] == sorted((g[0] for g in groups), reverse=True)


class _LateReadingWorld:
    """Two mirrored ranks whose reduction reads its operand only when waited for,
    as MPI may: if the program reused the operand's memory while the reduction
    is in flight, the overlapped result would differ from the blocking one."""
    rank, size = 0, 2

    def __init__(self):
        self.in_flight = 0

    def allreduce(self, x, op):
        return np.asarray(x) * np.asarray(2, np.asarray(x).dtype)

    def start_allreduce(self, x, op):
        from ember.distributed._comm import Pending
        self.in_flight += 1
        return Pending(lambda: (self.__setattr__("in_flight", self.in_flight - 1), self.allreduce(x, op))[1])


def test_an_operand_in_flight_keeps_its_memory_until_the_wait(overlap_setting):
    from ember.fx import axis_env
    p, x, y = _params(2)
    results = {}
    for overlap in (True, False):
        config.update("overlap_collectives", overlap)
        f = ember.jit(_step)
        world = _LateReadingWorld()
        with axis_env.bind_axis("batch", 2, comm=world):
            q = p
            for _ in range(3):
                q = f(q, x, y)
        assert world.in_flight == 0
        results[overlap] = q
    for k in p:
        np.testing.assert_array_equal(np.asarray(results[True][k]), np.asarray(results[False][k]), err_msg=k)


def test_a_step_that_overwrites_an_operand_in_flight_runs_after_the_wait():
    from ember.backends.kernels.loop_ir import MapKernel
    from ember.backends.kernels.overlap import overlap_collectives, split_collective
    from ember.fx.ir import Equation
    from ember.fx.prims.collective import psum_p
    f32 = np.dtype(np.float32)
    fill = lambda name, out, src: MapKernel(name, out, (4,), ("load", src, ("v", 0), f32), [src])  # noqa: E731
    start, wait = split_collective(Equation(psum_p, [], [], {"axis_name": "batch"}), [1], [3],
                                   lambda *b: 2)
    # as the scheduler emits them: the wait right after its start
    steps = [fill("make", 1, 0), start, wait, fill("other", 4, 0), fill("overwrite", 1, 0),
             fill("use", 5, 3)]
    names = [getattr(s, "name", type(s).__name__) for s in overlap_collectives(steps)]
    assert names == ["make", "CollectiveStart", "other", "CollectiveWait", "overwrite", "use"]
