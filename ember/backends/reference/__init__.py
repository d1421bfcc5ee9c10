"""The reference backend: numpy buffers, eager numpy impls, and a graph interpreter."""
from .backend import InterpretedExecutable, ReferenceBackend  # noqa: F401
