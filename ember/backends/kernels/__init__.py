"""Backend-neutral scheduling: a graph becomes fused loop kernels and library steps."""
from .loop_ir import (Buffer, ConvKernel, GemmKernel, LibraryStep, MapKernel, Program, ReduceKernel, RowKernel,  # noqa: F401
                      ScatterKernel)
from .printing import fingerprint, format_program  # noqa: F401
from .schedule import schedule  # noqa: F401
