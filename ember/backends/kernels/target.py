"""What a native backend tells the scheduler about itself: a `Target`.

Every decision of `schedule` that depends on the machine (how work runs in
parallel, which products go to a gemm and how they are cut, which reductions
are split, how scatters combine, which primitives are library steps) reads a
field here; the scheduler assumes nothing of its own.  A backend supplies its
target (the CPU's is `ember.backends.llvm.kernel_target.cpu_target`).

Example:
    >>> import dataclasses
    >>> from ember.backends.llvm.kernel_target import cpu_target
    >>> one = dataclasses.replace(cpu_target(), threads=1, split_reductions=False)
    >>> one.threads, one.split_reductions
    (1, False)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

PARALLEL_MODELS = ("threads", "grid")
SCATTER_MODES = ("serial", "atomic")
CONV_STRATEGIES = ("im2col_per_image", None)


@dataclass(frozen=True)
class Target:
    """The scheduling policy of one native backend.

    Fields:
      name: for dumps and errors.
      supports(eq) -> bool: whether the renderer handles this equation (its
          dtypes and params); asked only for primitives the scheduler would
          otherwise put in a kernel.
      library: primitives always run as library steps (their impl on whole
          buffers), whatever their kind: those the renderer has no lowering for.
      parallel_model: "threads": a kernel's outermost loop is split across
          `threads` workers, each running a contiguous range of it; "grid": a
          GPU's launch grid, where the renderer maps every kernel onto blocks
          and threads itself and a gemm is one library call over the whole
          product (never cut into blocks by the scheduler).
      threads: how many workers run at once (gemm blocks are cut for them;
          1 for "grid").
      index_dtype: the dtype of index arithmetic in value expressions (gather
          and scatter starts are converted to it).
      gemm_dtypes: dtypes whose `dot_general` is a `GemmKernel` (others fuse
          when small or are library steps).
      gemm_max_dim: products with m, n or k at least this stay library steps
          (a gemm with 32-bit sizes).
      gemm_min_block_flops, gemm_min_block: a product is cut into at most one
          block per worker, each at least this much work and this many rows or
          columns wide.
      gemm_tile: block edges are rounded up to a multiple of this (the gemm's
          micro-tile), so no block but the last has a partial tile.
      gemm_epilogues: elementwise map kernels reading a product may run inside
          its GemmKernel, on each block after it is computed.
      dot_fuse_max_k, dot_fuse_max_k_float: a `dot_general` contracting at most
          this many elements (integers / floats) is written out as an
          expression and fuses like elementwise code.
      split_reductions: a reduction whose outermost loop would not be
          parallel is cut into chunk partials and a small final reduction, with
          `split_min_chunk` elements per chunk at least and at most
          `split_max_chunks` chunks.
      register_accumulator: reductions may fold each output element in a
          register (reduced axes innermost) rather than into the output buffer
          (half precision always folds in a float32 register, as the reference
          accumulates it in float32).
      row_kernels: kernels over the same leading rows may run as one
          `RowKernel`, a row at a time (the row stays in cache);
          `row_aliasing`: a row group's intermediate may live in the output of
          the member that reads it last; `row_scratch_bytes`: one that nothing
          outside the group reads may live in per-thread memory of the loop,
          one row of it at a time, up to this many bytes a group (0: never).
      conv_strategy: "im2col_per_image" (patch matrix and gemm per image, one
          image per task) or None (convolutions are library steps).
      scatter: "serial" (updates combine one at a time, in order) or "atomic"
          (the renderer may combine updates in parallel with atomic operations).
      unrolled_reduce_max: a sum or product over at most this many elements
          per output element whose result has one reader is written out as an
          in-order expression and fuses into that reader like elementwise code
          (0: never).  A forward Laplacian's
          sum over its n Jacobian columns is then part of the kernel that uses
          it, not a kernel of its own accumulating through memory.
      async_collectives: a reduction across processes (a primitive with a
          `start_impl`: psum, pmax, pmin) becomes a `CollectiveStart` placed as
          early as its operand allows and a `CollectiveWait` just before its
          first consumer (overlap.py), for a backend whose executable runs the
          two halves; False: one blocking library step where it was traced.
    """
    name: str
    supports: Callable
    library: frozenset
    parallel_model: str
    threads: int
    index_dtype: np.dtype
    gemm_dtypes: tuple
    gemm_max_dim: int
    gemm_min_block_flops: int
    gemm_min_block: int
    gemm_tile: int
    gemm_epilogues: bool
    dot_fuse_max_k: int
    dot_fuse_max_k_float: int
    split_reductions: bool
    split_min_chunk: int
    split_max_chunks: int
    register_accumulator: bool
    row_kernels: bool
    row_aliasing: bool
    conv_strategy: str | None
    scatter: str
    unrolled_reduce_max: int = 0
    async_collectives: bool = False
    row_scratch_bytes: int = 0

    def __post_init__(self):
        checks = (
            (self.parallel_model in PARALLEL_MODELS, f"parallel_model must be one of {PARALLEL_MODELS}"),
            (self.scatter in SCATTER_MODES, f"scatter must be one of {SCATTER_MODES}"),
            (self.conv_strategy in CONV_STRATEGIES, f"conv_strategy must be one of {CONV_STRATEGIES}"),
            (np.dtype(self.index_dtype) in (np.dtype(np.int32), np.dtype(np.int64)),
             "index_dtype must be int32 or int64"),
            (self.threads >= 1, "threads must be at least 1"),
            (self.gemm_tile >= 1 and self.gemm_min_block >= 1, "gemm_tile and gemm_min_block must be positive"),
            (self.split_max_chunks >= 1 and self.split_min_chunk >= 1,
             "split_min_chunk and split_max_chunks must be positive"),
        )
        for ok, msg in checks:
            if not ok:
                raise ValueError(f"Target {self.name!r}: {msg}")
