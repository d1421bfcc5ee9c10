"""The NCCL communicator's parts that need no GPU: the unique id survives its MPI
broadcast encoding in both of CuPy's spellings, device arrays are recognised (and
never read as host memory), asking for NCCL without CuPy is a clear error, and a
started all-reduce queues NCCL on a stream of its own after the current work (a
stand-in CuPy logs the stream operations)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from ember.distributed import _comm, _nccl


@pytest.mark.parametrize("uid", [bytes(range(128)), tuple(range(-64, 64))])
def test_unique_id_round_trips_through_its_int16_encoding(uid):
    raw = _nccl._encode_id(uid)
    assert raw.dtype == np.int16 and raw.shape == (129,)
    back = _nccl._decode_id(raw)
    assert type(back) is type(uid) and back == uid


def test_a_unique_id_of_the_wrong_size_is_refused():
    with pytest.raises(_comm.DistributedError, match="128"):
        _nccl._encode_id(b"short")


class _DeviceBuffer:
    """Stands in for a CuPy array: all the communicators look at is the interface."""
    __cuda_array_interface__ = {"shape": (2,), "typestr": "<f4", "data": (0, False), "version": 3}


def test_device_arrays_are_recognised_and_host_arrays_are_not():
    assert _comm.is_device_array(_DeviceBuffer())
    assert not _comm.is_device_array(np.ones(2))
    assert not _comm.is_device_array(np.float32(1))


def test_the_local_world_copies_numpy_scalars_and_arrays():
    local = _comm.LocalCommunicator()
    assert local.allreduce(np.float32(2), "sum").shape == ()
    x = np.arange(3.0)
    y = local.allreduce(x, "sum")
    assert y is not x and y.tolist() == x.tolist()
    assert local.permute(x, [(0, 0)]).tolist() == x.tolist()
    assert local.permute(x, []).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
@pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None, reason="needs mpi4py")
def test_nccl_without_cupy_says_what_to_install():
    code = ("from ember import distributed as d\n"
            "try:\n    d.init(backend='nccl')\n"
            "except ImportError as e:\n    print('ERR', e)\n")
    env = dict(os.environ, EMBER_DISTRIBUTED_TIMEOUT="20")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert "ERR" in p.stdout and ".[gpu,distributed]" in p.stdout, p.stdout + p.stderr


class _FakeCuda:
    """The parts of CuPy (and cupy.cuda.nccl) NCCLCommunicator.start_allreduce
    uses, logging the order of stream operations."""

    def __init__(self, log, finishes=True):
        import types
        self.log = log
        fake = self

        class Event:
            def __init__(self, disable_timing=True):
                self.name = f"event{sum(1 for e in log if e[0] == 'record')}"

            def record(self, stream=None):
                log.append(("record", self.name, "side" if stream is not None else "current"))

            @property
            def done(self):
                return finishes

        class Stream:
            ptr = 222

            def __init__(self, non_blocking=False):
                log.append(("new stream", non_blocking))

            def wait_event(self, event):
                log.append(("side waits", event.name))

        self.cuda = types.SimpleNamespace(Event=Event, Stream=Stream,
                                          get_current_stream=lambda: types.SimpleNamespace(ptr=111))
        self.nccl = types.SimpleNamespace(NCCL_FLOAT32=7, NCCL_SUM=0)

        class Comm:
            def allReduce(self, src, dst, count, dtype, op, stream):
                log.append(("allReduce", count, dtype, stream))

            def check_async_error(self):
                pass

            def abort(self):
                log.append(("abort",))
        self.comm = Comm()
        self.ascontiguousarray = lambda x: x
        self.empty_like = lambda x: fake.Array(x.size)

    class Array:
        __cuda_array_interface__ = {}
        dtype = np.dtype(np.float32)

        def __init__(self, size):
            import types
            self.size, self.shape, self.data = size, (size,), types.SimpleNamespace(ptr=1)

        def astype(self, dtype, copy=True):
            return self


def _fake_nccl(log, finishes=True, timeout=5.0):
    cp = _FakeCuda(log, finishes)
    comm = object.__new__(_nccl.NCCLCommunicator)
    comm._cp, comm._nccl, comm.comm = cp, cp.nccl, cp.comm
    comm.rank, comm.size, comm.timeout, comm.wait_seconds, comm._side = 0, 2, timeout, 0.0, None
    return comm, cp


def test_a_started_nccl_all_reduce_runs_on_its_own_stream_after_the_current_work():
    log = []
    comm, cp = _fake_nccl(log)
    x = cp.Array(6)
    pending = comm.start_allreduce(x, "sum")
    assert log == [("record", "event0", "current"), ("new stream", True), ("side waits", "event0"),
                   ("allReduce", 6, 7, 222), ("record", "event1", "side")]
    assert pending.wait().size == 6
    comm.start_allreduce(x, "sum")          # the side stream is made once
    assert sum(e[0] == "new stream" for e in log) == 1


def test_a_started_nccl_all_reduce_that_never_finishes_aborts_and_says_why():
    log = []
    comm, cp = _fake_nccl(log, finishes=False, timeout=0.05)
    pending = comm.start_allreduce(cp.Array(2), "sum")
    with pytest.raises(_comm.DistributedError, match=r"NCCL all-reduce \(sum\) of float32\[2\] did not complete"):
        pending.wait()
    assert log[-1] == ("abort",)
