"""The CPU backend's scheduling `Target` (ember.backends.kernels.target).

Example:
    >>> t = cpu_target()
    >>> t.parallel_model, t.gemm_tile, t.scatter
    ('threads', 16, 'serial')
"""
from __future__ import annotations

import numpy as np

from ...fx.prims import elementwise as _ew
from ..kernels.target import Target
from .codegen import supports
from .runtime import num_threads

# Elementwise primitives the LLVM renderer has no lowering for, so each is one
# library step (its numpy impl on whole buffers) between fused kernels:
LIBRARY = frozenset({
    # no vectorisable approximation in mathlib with a measured ulp bound yet
    _ew.lgamma_p, _ew.digamma_p, _ew.polygamma_p, _ew.erf_inv_p,
    # half precision must step in its own format (the renderer computes halves
    # in float32, where a half's neighbour is not the next float32)
    _ew.nextafter_p,
    # integer bit counts: no lowering yet (population_count follows numpy's
    # bitwise_count, the bits of |x|, which a ctpop lowering must reproduce)
    _ew.clz_p, _ew.population_count_p,
    # complex values are not native here, and conj of a real operand is not
    # lowered (it would be the identity)
    _ew.real_p, _ew.imag_p, _ew.conj_p, _ew.complex_p,
})


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
        conv_strategy="im2col_per_image",
        scatter="serial",
    )
