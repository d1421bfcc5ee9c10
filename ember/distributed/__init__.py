"""Data-parallel training across processes on an existing engine (MPI via mpi4py).

Launch N copies of a script with `mpiexec -n N python train.py`; each calls
`ember.distributed.init()` and gets its `rank()` of `world_size()`. A step
wrapped by `data_parallel(step, axis_name="batch")` runs on each rank's shard
of the batch, and the collectives inside it (`ember.lax.pmean(grads,
"batch")`, or `all_reduce_gradients`) are steps of the compiled program that
call MPI. Without a launcher (or without mpi4py) the world is this one
process, and the same script runs unchanged.

Example:
    >>> import ember, ember.numpy as enp
    >>> from ember import distributed as dist
    >>> dist.init().size
    1
    >>> step = dist.data_parallel(lambda g: ember.lax.pmean(g, "batch"))
    >>> step(enp.ones(2)).tolist()
    [1.0, 1.0]
"""
from __future__ import annotations

import contextlib
import functools
import os

from ..fx import axis_env
from ._comm import DistributedError, LocalCommunicator, MPICommunicator
from ._gradients import all_reduce_gradients

__all__ = ["DistributedError", "all_reduce_gradients", "barrier", "broadcast", "data_parallel",
           "init", "is_initialized", "process_axis", "rank", "world_size"]

_WORLD = None
DEFAULT_TIMEOUT = 300.0


def _launched_by_mpi() -> bool:
    return any(k in os.environ for k in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK",
                                         "PMIX_RANK", "MPI_LOCALRANKID", "HYDRA_CONTROL_FD"))


def init(backend: str | None = None, timeout: float | None = None):
    """Join the world of processes (idempotent); returns its communicator.

    `backend`: "mpi" (requires mpi4py: `pip install -e ".[distributed]"`), "nccl"
    (GPU arrays through NCCL, bootstrapped over MPI; host arrays still over MPI;
    needs CuPy: `.[gpu,distributed]`), "local" (one process), or None:
    `EMBER_DISTRIBUTED_BACKEND` if set, else MPI when an MPI launcher started this
    process, else local. `timeout` (seconds, default `EMBER_DISTRIBUTED_TIMEOUT` or 300) bounds
    every collective, so a dead peer is an error, not a hang.

    Example:
        >>> from ember import distributed as dist
        >>> dist.init().rank
        0
    """
    global _WORLD
    if _WORLD is not None:
        return _WORLD
    if timeout is None:
        timeout = float(os.environ.get("EMBER_DISTRIBUTED_TIMEOUT", DEFAULT_TIMEOUT))
    if backend is None:
        backend = os.environ.get("EMBER_DISTRIBUTED_BACKEND") or (
            "mpi" if _launched_by_mpi() else "local")
    if backend == "local":
        _WORLD = LocalCommunicator()
    elif backend in ("mpi", "nccl"):
        try:
            from mpi4py import MPI
        except ImportError:
            raise ImportError(f"ember.distributed.init(backend={backend!r}) needs mpi4py and an "
                              "MPI library: pip install -e \".[distributed]\" (brings mpi4py and "
                              "mpich)") from None
        world = MPICommunicator(MPI.COMM_WORLD, timeout)
        if backend == "nccl":
            from ._nccl import NCCLCommunicator
            world = NCCLCommunicator(world, timeout)
        _WORLD = world
    else:
        raise ValueError(f"ember.distributed.init: unknown backend {backend!r} "
                         "(expected 'mpi', 'nccl', 'local' or None)")
    return _WORLD


def is_initialized() -> bool:
    """Whether `init` has run in this process.

    Example:
        >>> from ember import distributed as dist
        >>> _ = dist.init(); dist.is_initialized()
        True
    """
    return _WORLD is not None


def _world():
    return _WORLD if _WORLD is not None else init()


def rank() -> int:
    """This process's index in the world (0 without a launcher).

    Example:
        >>> from ember import distributed as dist
        >>> dist.rank()
        0
    """
    return _world().rank


def world_size() -> int:
    """The number of processes (1 without a launcher).

    Example:
        >>> from ember import distributed as dist
        >>> dist.world_size()
        1
    """
    return _world().size


def barrier() -> None:
    """Wait until every process reaches this point.

    Example:
        >>> from ember import distributed as dist
        >>> dist.barrier()
    """
    _world().barrier()


def broadcast(tree, root: int = 0):
    """Every array of a pytree as rank `root` holds it (e.g. initial parameters).

    Example:
        >>> import ember.numpy as enp
        >>> from ember import distributed as dist
        >>> dist.broadcast({"w": enp.ones(2)})["w"].tolist()
        [1.0, 1.0]
    """
    import numpy as np
    from .. import tree as _tree
    from ..numpy import asarray
    comm = _world()
    return _tree.map(lambda x: asarray(comm.broadcast(np.asarray(x), root)), tree)


@contextlib.contextmanager
def process_axis(axis_name="batch"):
    """Bind `axis_name` to the world of processes for the block: collectives over it
    (traced or eager) reduce across ranks.

    Example:
        >>> import ember, ember.numpy as enp
        >>> from ember import distributed as dist
        >>> with dist.process_axis("batch"):
        ...     ember.lax.psum(enp.ones(2), "batch").tolist()
        [1.0, 1.0]
    """
    comm = _world()
    with axis_env.bind_axis(axis_name, comm.size, comm=comm):
        yield comm


def data_parallel(step_fn, axis_name="batch", *, jit: bool = True, **jit_kwargs):
    """Run `step_fn` on every rank with `axis_name` bound to the processes: the
    collectives it calls over that axis (e.g. `lax.pmean(grads, axis_name)`) become
    steps of its compiled program that reduce across ranks. Each rank passes its own
    shard of the batch.

    Example:
        >>> import ember, ember.numpy as enp
        >>> from ember import distributed as dist
        >>> mean_grad = dist.data_parallel(
        ...     lambda w, x: ember.lax.pmean(ember.grad(lambda w: enp.sum(w * x))(w), "batch"))
        >>> mean_grad(enp.zeros(2), enp.ones(2)).tolist()
        [1.0, 1.0]
    """
    import ember
    fn = ember.jit(step_fn, **jit_kwargs) if jit else step_fn

    @functools.wraps(step_fn)
    def run(*args, **kwargs):
        with process_axis(axis_name):
            return fn(*args, **kwargs)
    run.compiled = fn
    return run
