"""The launch list of a CUDA program: what each step of a scheduled `Program`
does on the device, as plain records prepared once at compile time (no device
needed to build or inspect them; executable.py binds them to a runtime).

- `KernelLaunch(step, kernel, grid, block, params)`: a rendered kernel of the
  module (map, reduce, row, scatter; a convolution's patch matrix);
- `GemmLaunch(step, a, b, out, dtype)`: a product by the runtime's gemm
  (cuBLAS), each operand a view of its buffer given as (buffer, shape to
  reshape to, transpose or not, element offset) so batches, transposes and
  operands that are slices of a larger buffer (GemmKernel.a_offset) cost nothing;
- `LibraryLaunch(step, kind)`: a library step (kind: driver / device / host,
  library.py).

A convolution (`ConvKernel`) is its patch-matrix kernel then a batched gemm of
the weights (G, Og, K) with the patches (N, G, K, P).

Example:
    >>> import ember, numpy as np
    >>> from ember.backends.kernels import schedule
    >>> from ember.backends.cuda.target import cuda_target
    >>> from ember.backends.cuda.render import render_program
    >>> g = ember.make_graph(lambda a, b: ember.numpy.tanh(a @ b))(np.ones((4, 8), np.float32),
    ...                                                           np.ones((8, 2), np.float32))
    >>> prog = schedule(g, cuda_target())
    >>> [describe(l) for l in launch_list(prog, render_program(prog))]
    ['gemm b2[4, 2] = b0[4, 8] @ b1[8, 2] (float32)', 'kernel k2_tanh<<<1, 256>>>(b2, b3)']
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.loop_ir import ConvKernel, GemmKernel, LibraryStep, MapKernel, ReduceKernel, RowKernel, ScatterKernel
from .library import binding_kind


@dataclass(frozen=True)
class KernelLaunch:
    """One rendered kernel: `params` are buffer ids, one device pointer each."""
    step: int
    kernel: str
    grid: int
    block: int
    params: tuple


@dataclass(frozen=True)
class GemmLaunch:
    """out_view = a_view @ b_view; each view is (buffer id, shape, transpose the
    last two axes, element offset into the buffer)."""
    step: int
    a: tuple
    b: tuple
    out: tuple
    dtype: np.dtype


@dataclass(frozen=True)
class LibraryLaunch:
    """A library step and how it is bound (library.binding_kind)."""
    step: int
    kind: str


def _gemm(i, g: GemmKernel):
    if g.epilogue:
        raise ValueError(f"CUDA launch list: gemm {g.name} has a fused epilogue, which the CUDA target never "
                         "asks for (gemm_epilogues=False); schedule with cuda_target()")
    lead = (g.batch,) if g.batch > 1 else ()
    a = (g.a, lead + ((g.k, g.m) if g.trans_a else (g.m, g.k)), g.trans_a, getattr(g, "a_offset", 0))
    b = (g.b, lead + ((g.n, g.k) if g.trans_b else (g.k, g.n)), g.trans_b, getattr(g, "b_offset", 0))
    return GemmLaunch(i, a, b, (g.out, lead + (g.m, g.n), False, 0), np.dtype(g.dtype))


def _conv(i, c: ConvKernel, rec):
    kl = KernelLaunch(i, rec.name, rec.grid, rec.block, rec.params)
    w = (c.w, (c.groups, c.og, c.k), False, 0)
    cols = (c.cols.out, (c.n, c.groups, c.k, c.p), False, 0)
    out = (c.out, (c.n, c.groups, c.og, c.p), False, 0)
    if c.channels_last:
        # the image stored P x O: write the (N, G, Og, P) product through a
        # transposed view of (N, P, G, Og)
        out = (c.out, (c.n, c.p, c.groups, c.og), "channels_last", 0)
    return [kl, GemmLaunch(i, w, cols, out, np.dtype(c.dtype))]


_RENDERED = (MapKernel, ReduceKernel, RowKernel, ScatterKernel, ConvKernel)


def launch_list(program, module, runtime=None) -> list:
    """The launch records of every step of `program`, in order; `module` is its
    `render_program` result (kernels in program order).  Empty kernels (grid 0)
    are left out.

    Example:
        >>> launch_list.__name__
        'launch_list'
    """
    records = iter(module.kernels)
    out = []
    for i, step in enumerate(program.steps):
        if isinstance(step, _RENDERED):
            rec = next(records)
            if isinstance(step, ConvKernel):
                if rec.grid:
                    out.extend(_conv(i, step, rec))
                continue
            if rec.grid:
                out.append(KernelLaunch(i, rec.name, rec.grid, rec.block, rec.params))
        elif isinstance(step, GemmKernel):
            if step.m and step.n and step.batch:
                out.append(_gemm(i, step))   # (k = 0: the gemm writes zeros)
        elif isinstance(step, LibraryStep):
            out.append(LibraryLaunch(i, binding_kind(step.eq, runtime)))
        else:
            raise TypeError(f"CUDA launch list: no launch for a {type(step).__name__} step ({step.name})")
    return out


def describe(rec, program=None) -> str:
    """One line per launch record (tests and dumps)."""
    def view(v):
        b, shape, t, off = v
        mark = "^T" if t is True else ".transpose(0, 2, 3, 1)" if t == "channels_last" else ""
        at = f"@{off}" if off else ""
        return f"b{b}{at}[{', '.join(map(str, shape))}]{mark}"
    if isinstance(rec, KernelLaunch):
        return f"kernel {rec.kernel}<<<{rec.grid}, {rec.block}>>>({', '.join(f'b{p}' for p in rec.params)})"
    if isinstance(rec, GemmLaunch):
        return f"gemm {view(rec.out)} = {view(rec.a)} @ {view(rec.b)} ({rec.dtype.name})"
    return f"library step {rec.step} ({rec.kind})"
