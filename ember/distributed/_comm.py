"""Communicators: what a process axis's collectives call (MPI through mpi4py,
or the one-process world when no MPI launcher started us).

Every blocking operation is a non-blocking MPI call polled against a deadline,
so a rank whose peer has died or skipped a collective fails with a
`DistributedError` naming the operation instead of hanging.  The all-reduce
also comes split in two, `start_allreduce(x, op)` -> a `Pending` whose
`wait()` returns the result: a compiled program starts a gradient bucket's
reduction as soon as the bucket is computed and waits for it just before the
first use, so the rest of the backward pass runs while the message is in
flight (`allreduce` is `start_allreduce(...).wait()`, so both give the same
bits).  `wait_seconds` adds up the time this process has spent blocked in
waits: the communication the program did not hide.

Example:
    >>> import numpy as np
    >>> LocalCommunicator().allreduce(np.ones(2, np.float32), "sum").tolist()
    [1.0, 1.0]
"""
from __future__ import annotations

import functools
import time

import numpy as np

from .. import dtypes as _dt

_LOWP = (np.dtype(_dt.float16), np.dtype(_dt.bfloat16))


class DistributedError(RuntimeError):
    """A collective across processes failed or timed out (a peer died, or the ranks
    did not call the same collectives in the same order)."""


def is_device_array(x) -> bool:
    """Whether `x` lives in GPU memory (a CuPy array, or anything exporting
    `__cuda_array_interface__`): communicators must not read it as host memory."""
    return hasattr(type(x), "__cuda_array_interface__") or hasattr(x, "__cuda_array_interface__")


def _array(x):
    """A buffer as an array of its own library (numpy scalars become 0-d arrays)."""
    return x if isinstance(x, np.ndarray) or is_device_array(x) else np.asarray(x)


def host_staged(method):
    """Run a host-memory collective on a device array by copying it to the host and
    the result back (an MPI library that is not CUDA-aware cannot read GPU memory;
    the NCCL communicator avoids the copies)."""
    @functools.wraps(method)
    def run(self, x, *args):
        if not is_device_array(x):
            return method(self, x, *args)
        import cupy
        return cupy.asarray(method(self, cupy.asnumpy(x), *args))
    return run


class Pending:
    """An all-reduce in flight: `wait()` blocks until it completes (or raises
    `DistributedError` after the communicator's timeout) and returns the result;
    a second `wait()` returns it again.  `progress()` lets the engine move it on
    without blocking (MPI without a progress thread advances a large message
    only inside MPI calls: a compiled program calls it between its big kernels).

    Example:
        >>> import numpy as np
        >>> LocalCommunicator().start_allreduce(np.ones(2, np.float32), "sum").wait().tolist()
        [1.0, 1.0]
    """
    __slots__ = ("_finish", "_result", "_progress")

    def __init__(self, finish, progress=None):
        self._finish, self._result, self._progress = finish, None, progress

    def progress(self) -> None:
        if self._finish is not None and self._progress is not None:
            self._progress()

    def wait(self):
        if self._finish is not None:
            self._result, self._finish = self._finish(), None
        return self._result


class LocalCommunicator:
    """The world of one process: every collective is the identity (a copy, on the
    buffer's own device)."""
    rank, size = 0, 1
    name = "local"
    wait_seconds = 0.0

    def allreduce(self, x, op: str):
        return _array(x).copy()

    def start_allreduce(self, x, op: str) -> Pending:
        out = _array(x).copy()
        return Pending(lambda: out)

    def allgather(self, x):
        return _array(x)[None].copy()

    def alltoall(self, chunks):
        return _array(chunks).copy()

    def permute(self, x, perm):
        x = _array(x)
        return x.copy() if (0, 0) in perm else np.zeros_like(x)

    def broadcast(self, x, root: int = 0):
        return _array(x).copy()

    def barrier(self) -> None:
        return None


def _raw(x: np.ndarray) -> np.ndarray:
    """A byte view MPI can move whatever the dtype (bfloat16 has no MPI type)."""
    x = np.ascontiguousarray(x)
    return x.reshape(-1).view(np.uint8)


class MPICommunicator:
    """Collectives over an mpi4py communicator, each bounded by `timeout` seconds
    (device arrays are staged through host memory: `host_staged`)."""
    name = "mpi"

    def __init__(self, comm, timeout: float):
        from mpi4py import MPI
        self._MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = float(timeout)
        self._ops = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}
        self.wait_seconds = 0.0

    def _wait(self, reqs, what: str, *keep):
        """Complete `reqs` or raise after the timeout (`keep`: buffers MPI still reads)."""
        if self._MPI.Request.Testall(reqs):
            return
        start = time.monotonic()
        try:
            self._poll(reqs, what, start)
        finally:
            self.wait_seconds += time.monotonic() - start

    def _poll(self, reqs, what: str, start: float):
        deadline = start + self.timeout
        pause = 0.0
        while not self._MPI.Request.Testall(reqs):
            now = time.monotonic()
            if now > deadline:
                raise DistributedError(
                    f"rank {self.rank} of {self.size}: {what} did not complete within "
                    f"{self.timeout:g} s; another rank has probably died, or the ranks are not "
                    "calling the same collectives in the same order (set the limit with "
                    "ember.distributed.init(timeout=...) or EMBER_DISTRIBUTED_TIMEOUT)")
            # spin for the first millisecond (latency), then back off (a rank waiting
            # for a slow peer should not burn a core)
            if now - start > 1e-3:
                time.sleep(pause)
                pause = min(pause * 2 + 1e-5, 1e-3)

    def allreduce(self, x, op: str):
        return self.start_allreduce(x, op).wait()

    def start_allreduce(self, x, op: str) -> Pending:
        """Post the all-reduce (`Iallreduce`) and return at once; the caller keeps
        `x` unchanged until `wait()` (MPI reads it meanwhile).  A device array is
        copied to the host now and the result back in `wait()`."""
        device = is_device_array(x)
        if device:
            import cupy
            x = cupy.asnumpy(x)
        x = np.asarray(x)
        dtype = x.dtype
        work = x.astype(np.float32) if dtype in _LOWP else np.ascontiguousarray(x)
        if work.dtype == np.bool_:      # MPI has no bool sum; or/and are max/min on 0/1
            work = work.astype(np.uint8)
        out = np.empty_like(work)
        req = self.comm.Iallreduce(work, out, self._ops[op])
        what = f"all-reduce ({op}) of {dtype}{list(x.shape)}"

        def finish():
            # `work` is named here so that the send buffer, which MPI reads until the
            # request completes, lives as long as the pending reduction
            self._wait([req], what, work)
            res = out.astype(dtype, copy=False)
            if device:
                import cupy
                return cupy.asarray(res)
            return res
        return Pending(finish, lambda: self._MPI.Request.Testall([req]))

    @host_staged
    def allgather(self, x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x)
        out = np.empty((self.size,) + x.shape, x.dtype)
        req = self.comm.Iallgather(_raw(x), _raw(out))
        self._wait([req], f"all-gather of {x.dtype}{list(x.shape)}")
        return out

    @host_staged
    def alltoall(self, chunks: np.ndarray) -> np.ndarray:
        chunks = np.ascontiguousarray(chunks)
        out = np.empty_like(chunks)
        req = self.comm.Ialltoall(_raw(chunks), _raw(out))
        self._wait([req], f"all-to-all of {chunks.dtype}{list(chunks.shape)}")
        return out

    @host_staged
    def permute(self, x: np.ndarray, perm) -> np.ndarray:
        x = np.ascontiguousarray(x)
        out = np.zeros_like(x)
        reqs = []
        for src, dst in perm:
            if src == self.rank:
                reqs.append(self.comm.Isend(_raw(x), dest=dst, tag=7001))
            if dst == self.rank:
                reqs.append(self.comm.Irecv(_raw(out), source=src, tag=7001))
        self._wait(reqs, f"ppermute {list(perm)}")
        return out

    @host_staged
    def broadcast(self, x: np.ndarray, root: int = 0) -> np.ndarray:
        buf = np.array(x, copy=True, order="C")
        req = self.comm.Ibcast(_raw(buf), root=root)
        self._wait([req], f"broadcast from rank {root}")
        return buf

    def barrier(self) -> None:
        self._wait([self.comm.Ibarrier()], "barrier")
