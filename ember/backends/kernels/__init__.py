"""Backend-neutral scheduling: a graph becomes fused loop kernels and library steps."""
from .loop_ir import Buffer, LibraryStep, MapKernel, Program, ReduceKernel  # noqa: F401
from .printing import format_program  # noqa: F401
from .schedule import schedule  # noqa: F401
