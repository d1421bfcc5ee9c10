"""Collectives on GPU memory through NCCL (CuPy's `cupy.cuda.nccl`), bootstrapped
over MPI: rank 0 makes the NCCL unique id and MPI broadcasts it, then every rank
joins one NCCL communicator on its node-local GPU.  Device arrays go through
NCCL on the current CuPy stream (ordered after the kernels that made them); host
arrays still go through MPI, so one world serves both.

Every operation is bounded by the world's timeout like the MPI ones: the
communicator records an event after the NCCL call and polls it against a
deadline; on expiry it aborts the NCCL communicator (a peer that died leaves
NCCL waiting forever otherwise) and raises `DistributedError`.

NCCL reduces float16/bfloat16/float32/float64 and 8/32/64-bit integers
natively; bool reduces as uint8 (or/and are max/min on 0/1, the sum is cast
back as the MPI path does), 16-bit integers widen to int32.  Data movement
(gather, all-to-all, permute, broadcast) sends raw bytes, so every dtype moves.

Example (on a GPU machine, under `mpiexec -n 2`)::

    from ember import distributed as dist
    world = dist.init(backend="nccl")
    ember.lax.psum(x_on_gpu, "batch")      # inside data_parallel: an NCCL all-reduce
"""
from __future__ import annotations

import time

import numpy as np

from ._comm import DistributedError, is_device_array

_REDUCED_TYPES = {  # numpy dtype name -> NCCL datatype constant's name
    "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32", "uint32": "NCCL_UINT32",
    "int64": "NCCL_INT64", "uint64": "NCCL_UINT64", "float16": "NCCL_FLOAT16",
    "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64", "bfloat16": "NCCL_BFLOAT16",
}
_WIDENED = {"bool": "uint8", "int16": "int32", "uint16": "uint32"}
_OPS = {"sum": "NCCL_SUM", "max": "NCCL_MAX", "min": "NCCL_MIN"}


_ID_BYTES = 128  # sizeof(ncclUniqueId), fixed by NCCL's ABI


def _spell(x) -> str:
    """`float32[3,4]`, as users write it."""
    return f"{np.dtype(x.dtype).name}[{','.join(str(d) for d in x.shape)}]"


def _encode_id(uid) -> np.ndarray:
    """The unique id as int16s for an MPI broadcast: [kind, bytes...] (CuPy gives
    a tuple of C chars in older releases, bytes in newer ones)."""
    kind = 0 if isinstance(uid, (bytes, bytearray)) else 1
    if len(uid) != _ID_BYTES:
        raise DistributedError(f"NCCL unique id of {len(uid)} bytes (expected {_ID_BYTES})")
    return np.array([kind] + [int(b) for b in uid], np.int16)


def _decode_id(raw: np.ndarray):
    values = [int(v) for v in raw[1:]]
    return bytes(v & 0xFF for v in values) if raw[0] == 0 else tuple(values)


def node_local_rank(mpi_comm) -> int:
    """This process's index among the ranks on its machine (which GPU it takes)."""
    from mpi4py import MPI
    local = mpi_comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return local.Get_rank()
    finally:
        local.Free()


class NCCLCommunicator:
    """Collectives over NCCL for device arrays, over the MPI communicator `host`
    for host arrays; `timeout` seconds bound each one."""
    name = "nccl"

    def __init__(self, host, timeout: float):
        try:
            import cupy
            from cupy.cuda import nccl
        except ImportError:
            raise ImportError("ember.distributed.init(backend='nccl') needs CuPy with NCCL: "
                              "pip install -e \".[gpu,distributed]\"") from None
        self._cp, self._nccl = cupy, nccl
        self.host = host
        self.rank, self.size = host.rank, host.size
        self.timeout = float(timeout)
        self.wait_seconds = 0.0
        self._side = None      # the stream started all-reduces run on (made on first use)
        try:
            n_gpus = cupy.cuda.runtime.getDeviceCount()
        except cupy.cuda.runtime.CUDARuntimeError:
            n_gpus = 0
        if n_gpus == 0:
            raise DistributedError(f"rank {self.rank}: ember.distributed.init(backend='nccl') "
                                   "found no CUDA GPU; use backend='mpi' on CPU machines")
        self.device = cupy.cuda.Device(node_local_rank(host.comm) % n_gpus)
        self.device.use()
        raw = (_encode_id(nccl.get_unique_id()) if self.rank == 0
               else np.zeros(1 + _ID_BYTES, np.int16))
        raw = host.broadcast(raw, 0)
        self.comm = nccl.NcclCommunicator(self.size, _decode_id(raw), self.rank)

    # --- helpers ---------------------------------------------------------------------

    def _type(self, dtype) -> int:
        const = getattr(self._nccl, _REDUCED_TYPES.get(np.dtype(dtype).name, ""), None)
        if const is None:
            raise DistributedError(f"NCCL cannot reduce {np.dtype(dtype).name} arrays")
        return const

    def _stream(self) -> int:
        return self._cp.cuda.get_current_stream().ptr

    def _wait(self, what: str) -> None:
        """Block until the NCCL work queued so far on the stream is done, or fail
        after the timeout (aborting the communicator, whose peers may be gone)."""
        event = self._cp.cuda.Event(disable_timing=True)
        event.record()
        self._wait_event(event, what)

    def _wait_event(self, event, what: str, *keep) -> None:
        """Poll `event` against the timeout (`keep`: buffers NCCL still reads)."""
        deadline = time.monotonic() + self.timeout
        pause = 0.0
        start = time.monotonic()
        try:
            while not event.done:
                self.comm.check_async_error()
                if time.monotonic() > deadline:
                    self.comm.abort()
                    raise DistributedError(
                        f"rank {self.rank} of {self.size}: NCCL {what} did not complete within "
                        f"{self.timeout:g} s; another rank has probably died, or the ranks are not "
                        "calling the same collectives in the same order (the communicator is "
                        "aborted; set the limit with ember.distributed.init(timeout=...))")
                time.sleep(pause)
                pause = min(pause * 2 + 1e-5, 1e-3)
        finally:
            self.wait_seconds += time.monotonic() - start

    def _contiguous(self, x):
        return self._cp.ascontiguousarray(x)

    # --- collectives -----------------------------------------------------------------

    def allreduce(self, x, op: str):
        return self.start_allreduce(x, op).wait()

    def start_allreduce(self, x, op: str):
        """Queue the all-reduce on the communicator's own stream, after the work
        queued so far on the current one (the kernels that made `x`), so kernels
        queued later run while it is in flight; return a `Pending` whose `wait()`
        polls an event recorded after it.  Host arrays go to the MPI
        communicator's `start_allreduce`."""
        from ._comm import Pending
        if not is_device_array(x):
            return self.host.start_allreduce(x, op)
        x = self._contiguous(x)
        dtype = x.dtype
        work = x.astype(_WIDENED[dtype.name]) if dtype.name in _WIDENED else x
        out = self._cp.empty_like(work)
        ready = self._cp.cuda.Event(disable_timing=True)
        ready.record()
        if self._side is None:
            self._side = self._cp.cuda.Stream(non_blocking=True)
        self._side.wait_event(ready)
        self.comm.allReduce(work.data.ptr, out.data.ptr, work.size, self._type(work.dtype),
                            getattr(self._nccl, _OPS[op]), self._side.ptr)
        event = self._cp.cuda.Event(disable_timing=True)
        event.record(self._side)
        what = f"all-reduce ({op}) of {_spell(x)}"

        def finish():
            # `work` is passed so that the send buffer lives until NCCL has read it
            self._wait_event(event, what, work)
            return out.astype(dtype, copy=False)
        return Pending(finish)

    def allgather(self, x):
        if not is_device_array(x):
            return self.host.allgather(x)
        x = self._contiguous(x)
        out = self._cp.empty((self.size,) + x.shape, x.dtype)
        self.comm.allGather(x.data.ptr, out.data.ptr, x.nbytes, self._nccl.NCCL_UINT8, self._stream())
        self._wait(f"all-gather of {_spell(x)}")
        return out

    def _exchange(self, pairs, what: str) -> None:
        """Point-to-point sends/receives as one NCCL group: [(kind, buffer, peer)]."""
        nccl, stream = self._nccl, self._stream()
        nccl.groupStart()
        try:
            for kind, buf, peer in pairs:
                call = self.comm.send if kind == "send" else self.comm.recv
                call(buf.data.ptr, buf.nbytes, nccl.NCCL_UINT8, peer, stream)
        finally:
            nccl.groupEnd()
        self._wait(what)

    def alltoall(self, chunks):
        if not is_device_array(chunks):
            return self.host.alltoall(chunks)
        chunks = self._contiguous(chunks)
        out = self._cp.empty_like(chunks)
        pairs = []
        for j in range(self.size):
            pairs += [("send", chunks[j], j), ("recv", out[j], j)]
        self._exchange(pairs, f"all-to-all of {_spell(chunks)}")
        return out

    def permute(self, x, perm):
        if not is_device_array(x):
            return self.host.permute(x, perm)
        x = self._contiguous(x)
        out = self._cp.zeros_like(x)
        pairs = []
        for src, dst in perm:
            if src == self.rank:
                pairs.append(("send", x, dst))
            if dst == self.rank:
                pairs.append(("recv", out, src))
        self._exchange(pairs, f"ppermute {list(perm)}")
        return out

    def broadcast(self, x, root: int = 0):
        if not is_device_array(x):
            return self.host.broadcast(x, root)
        buf = self._contiguous(x).copy()
        self.comm.bcast(buf.data.ptr, buf.nbytes, self._nccl.NCCL_UINT8, root, self._stream())
        self._wait(f"broadcast from rank {root}")
        return buf

    def barrier(self) -> None:
        self._cp.cuda.get_current_stream().synchronize()
        self.host.barrier()
