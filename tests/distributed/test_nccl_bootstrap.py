"""The NCCL communicator's parts that need no GPU: the unique id survives its MPI
broadcast encoding in both of CuPy's spellings, device arrays are recognised (and
never read as host memory), and asking for NCCL without CuPy is a clear error."""
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
