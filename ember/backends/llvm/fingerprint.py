"""The code generator's part of the compiled-program cache key: a hash of the
sources that turn a scheduled program into machine code.

Example:
    >>> len(generator_fingerprint()) >= 64
    True
"""
from __future__ import annotations

import functools

from . import packed_gemm


def generator_fingerprint() -> str:
    """`_sources_fingerprint` plus the matrix-product provider (EMBER_GEMM), which
    changes the code generated for products."""
    return _sources_fingerprint() + ("+blas" if packed_gemm.use_blas() else "")


@functools.lru_cache(maxsize=None)
def _sources_fingerprint() -> str:
    """A hash of the code that turns a scheduled program into machine code (this
    module, the toolkit pieces it emits through, the target attributes and the
    optimisation pipeline), part of the cache key of programs that are looked up
    before their IR is built."""
    import hashlib
    import importlib
    h = hashlib.sha256()
    here = __package__
    kernels = here.rsplit(".", 1)[0] + ".kernels"
    for name in ("codegen", "values", "body_sharing", "products", "ops", "mathlib", "trig_huge", "_coefficients", "blas",
                 "packed_gemm", "runtime", "target", "compiler"):
        with open(importlib.import_module(f"{here}.{name}").__file__, "rb") as f:
            h.update(f.read())
    # the renderer's address canonicalisation lives with the kernel IR
    with open(importlib.import_module(f"{kernels}.affine").__file__, "rb") as f:
        h.update(f.read())
    return h.hexdigest()
