"""Backends, each registered by name with a lazy factory: `reference` (numpy
impls and a graph interpreter, the oracle) and `cpu` (eager numpy impls, compiled
through LLVM; llvmlite is imported at the first compile) and `cuda` (CuPy arrays on
an NVIDIA GPU; CuPy is imported when its devices are first asked for).

Example:
    >>> from ember.backends.base import get_backend
    >>> get_backend("cpu").name
    'cpu'
"""
from .base import register_backend

register_backend("cpu", "ember.backends.cpu:CpuBackend")
register_backend("reference", "ember.backends.reference.backend:ReferenceBackend")
# CuPy is imported only when this backend is first asked for its devices
register_backend("cuda", "ember.backends.cuda.backend:CudaBackend")
