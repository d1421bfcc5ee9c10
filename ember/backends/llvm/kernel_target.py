"""The CPU backend's scheduling `Target` (ember.backends.kernels.target).

Example:
    >>> t = cpu_target()
    >>> t.parallel_model, t.gemm_tile, t.scatter
    ('threads', 16, 'serial')
"""
from __future__ import annotations

import numpy as np

from ... import config
from ..kernels.target import Target
from .ops import LIBRARY_STEPS, supports
from .runtime import num_threads

# Elementwise primitives the LLVM renderer runs as library steps on purpose (each
# with its reason: ops.LIBRARY_STEPS)
LIBRARY = frozenset(LIBRARY_STEPS)


def cpu_target(threads: int | None = None) -> Target:
    """The CPU's target with today's policy; `threads` defaults to the pool size
    (`EMBER_NUM_THREADS`, else the core count).

    Example:
        >>> cpu_target(threads=4).threads
        4
    """
    return Target(
        name="cpu",
        supports=supports,
        library=LIBRARY,
        parallel_model="threads",
        threads=num_threads() if threads is None else int(threads),
        index_dtype=np.dtype(np.int64),
        gemm_dtypes=(np.dtype(np.float32), np.dtype(np.float64)),
        # packed gemm and BLAS take 32-bit sizes
        gemm_max_dim=1 << 31,
        # Of the grids with at most one block per thread, the one packing least is
        # taken (every block packs its rows of A and columns of B again).  More
        # blocks than threads would balance better on a busy machine but measured
        # slower on a quiet one (1024^3: 10.5 ms with 2 blocks, 11.3 ms with 8 on
        # two cores); on a busy one the pool runs products on the caller alone.
        gemm_min_block_flops=1 << 23,
        gemm_min_block=128,
        gemm_tile=16,
        gemm_epilogues=True,
        # A product contracting at most this many elements is written out: a gemm
        # call costs about a microsecond and vmap of per-example gradients makes
        # hundreds of 64x1 @ 1x32 outer products.  Floats only for k = 1 (one
        # correctly rounded product, what the gemm's overflow recomputation gives
        # too): a written-out sum of two could overflow where the exact result does
        # not, and only the gemm step recomputes such elements.
        dot_fuse_max_k=2,
        dot_fuse_max_k_float=1,
        # split a reduction the threads could not share when it has two chunks of
        # at least 32k elements
        split_reductions=True,
        split_min_chunk=1 << 15,
        split_max_chunks=32,
        register_accumulator=True,
        row_kernels=True,
        row_aliasing=True,
        # on the stack of the thread running the rows: a forward Laplacian's tanh
        # values and their derivatives, read only by the next members of their row,
        # were written out whole and never read again (1.5 MB of 7 per call)
        row_scratch_bytes=1 << 16,
        conv_strategy="im2col_per_image",
        scatter="serial",
        # a sum over a few elements (a forward Laplacian's Jacobian columns) is cheaper
        # written out in its reader than as a kernel accumulating through memory
        unrolled_reduce_max=8,
        # the executable runs a collective's start and wait as two host steps
        # (ember.config "overlap_collectives", EMBER_OVERLAP_COLLECTIVES)
        async_collectives=config.overlap_collectives(),
    )
