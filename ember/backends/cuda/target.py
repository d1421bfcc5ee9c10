"""The CUDA backend's scheduling `Target` (ember.backends.kernels.target).

Example:
    >>> t = cuda_target()
    >>> t.parallel_model, t.scatter, t.gemm_epilogues, t.split_reductions
    ('grid', 'atomic', False, False)
"""
from __future__ import annotations

import numpy as np

from ... import config
from ..kernels.target import Target
from .ops import GEMM_DTYPES, LIBRARY_STEPS, supports

# Elementwise primitives the CUDA renderer runs as library steps on purpose
# (each with its reason: ops.LIBRARY_STEPS)
LIBRARY = frozenset(LIBRARY_STEPS)


def cuda_target() -> Target:
    """The target of one NVIDIA GPU: the renderer maps kernels onto a launch grid
    (map kernels: grid-stride loops; reductions: a block per output element or
    row), products go to cuBLAS whole, elementwise work reading a product is a
    kernel of its own, scatters combine with atomics.

    Example:
        >>> [d.name for d in cuda_target().gemm_dtypes]
        ['float16', 'bfloat16', 'float32', 'float64']
    """
    return Target(
        name="cuda",
        supports=supports,
        library=LIBRARY,
        parallel_model="grid",
        # the scheduler cuts gemms for workers; a grid target's gemm is one cuBLAS call
        threads=1,
        index_dtype=np.dtype(np.int64),
        gemm_dtypes=GEMM_DTYPES,
        # cuBLAS takes 32-bit sizes
        gemm_max_dim=1 << 31,
        gemm_min_block_flops=1,
        gemm_min_block=1,
        gemm_tile=1,
        # cuBLAS runs the product; an epilogue is a separate fused map kernel
        gemm_epilogues=False,
        # a tiny product written out costs less than a cuBLAS launch (as on the
        # CPU, floats only for k = 1: one correctly rounded product)
        dot_fuse_max_k=2,
        dot_fuse_max_k_float=1,
        # a reduction is spread over a block's threads by the renderer, not cut
        # into chunk kernels by the scheduler
        split_reductions=False,
        split_min_chunk=1,
        split_max_chunks=1,
        register_accumulator=True,
        # a row group is one block per row, its members separated by __syncthreads
        row_kernels=True,
        row_aliasing=True,
        # im2col: the patch matrices are a rendered map kernel, the product one
        # batched cuBLAS gemm over all images (launch.py)
        conv_strategy="im2col_per_image",
        scatter="atomic",
        # a sum over a few elements (a forward Laplacian's Jacobian columns) is cheaper
        # written out in its reader than as a kernel accumulating through memory
        unrolled_reduce_max=8,
        # a reduction across processes is a start and a wait (NCCL on the
        # communicator's own stream: executable.py runs the halves as library steps)
        async_collectives=config.overlap_collectives(),
    )
