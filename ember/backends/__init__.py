"""Backends, each registered by name with a lazy factory: `reference` (numpy
impls and a graph interpreter, the oracle) and `cpu` (eager numpy impls, compiled
through LLVM; llvmlite is imported at the first compile).

Example:
    >>> from ember.backends.base import get_backend
    >>> get_backend("cpu").name
    'cpu'
"""
from .base import register_backend

register_backend("cpu", "ember.backends.cpu:CpuBackend")
register_backend("reference", "ember.backends.reference.backend:ReferenceBackend")
