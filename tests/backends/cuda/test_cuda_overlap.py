"""Overlapped reductions across processes in a CUDA program, run by the CUDA
executable on the host emulation (numpy buffers as device memory): the halves
bind as library steps on device values, tokens stay host objects, and the
results are the blocking program's bits and the LLVM backend's."""
import os
import sys
from collections import OrderedDict

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_emulation as he  # noqa: E402

if not he.available():
    pytest.skip("no g++ for the host emulation", allow_module_level=True)

import ember  # noqa: E402
import ember.numpy as enp  # noqa: E402
from emulated_runtime import EmulatedRuntime  # noqa: E402
from ember import config, distributed as dist  # noqa: E402
from ember.backends.cuda.executable import compile_graph  # noqa: E402
from ember.backends.cuda.launch import LibraryLaunch  # noqa: E402
from ember.backends.kernels import CollectiveStart, CollectiveWait  # noqa: E402
from ember.distributed._comm import Pending  # noqa: E402
from ember.fx import axis_env  # noqa: E402


class _LateWorld:
    """Two mirrored ranks; a started reduction reads its operand only at the wait."""
    rank, size = 0, 2

    def allreduce(self, x, op):
        return np.asarray(x) + np.asarray(x)

    def start_allreduce(self, x, op):
        return Pending(lambda: self.allreduce(x, op))


def _step(p, x):
    def loss(p):
        h = enp.tanh(x @ p["w1"] + p["b1"])
        return enp.mean((h @ p["w2"]) ** 2)
    g = dist.all_reduce_gradients(ember.grad(loss)(p), "batch", bucket_bytes=64)
    return [p[k] - 0.1 * g[k] for k in p]


def _args():
    rng = np.random.default_rng(0)
    p = OrderedDict(w1=rng.normal(size=(5, 8)).astype(np.float32), b1=np.zeros(8, np.float32),
                    w2=rng.normal(size=(8, 3)).astype(np.float32))
    return p, rng.normal(size=(4, 5)).astype(np.float32)


def _run_cuda(overlap):
    config.update("overlap_collectives", overlap)
    try:
        p, x = _args()
        with axis_env.bind_axis("batch", 2, comm=_LateWorld()):
            closed = ember.make_graph(_step)(p, x)
            exe = compile_graph(closed, runtime=EmulatedRuntime())
            outs = exe(*[np.asarray(a) for a in list(p.values()) + [x]])
        return exe, [np.asarray(o) for o in outs]
    finally:
        config.update("overlap_collectives", True)


def test_a_cuda_program_runs_the_halves_and_gives_the_blocking_bits():
    exe, got = _run_cuda(True)
    steps = exe.program.steps
    starts = [i for i, s in enumerate(steps) if isinstance(s, CollectiveStart)]
    waits = [i for i, s in enumerate(steps) if isinstance(s, CollectiveWait)]
    assert len(starts) == len(waits) == 3 and max(starts) < max(waits)
    # every half is a library launch on device values (no host round trip)
    launched = {r.step: r.kind for r in exe.launches if isinstance(r, LibraryLaunch)}
    assert all(launched[i] == "device" for i in starts + waits)
    blocking_exe, want = _run_cuda(False)
    assert not any(isinstance(s, CollectiveStart) for s in blocking_exe.program.steps)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    # and the LLVM backend computes the same update (to its rounding of tanh/products)
    p, x = _args()
    with axis_env.bind_axis("batch", 2, comm=_LateWorld()):
        ref = ember.jit(_step)({k: enp.asarray(v) for k, v in p.items()}, enp.asarray(x))
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-5, atol=1e-6)
