"""The line every benchmark prints first: which code-generation target and
gemm kernel variant produced its numbers (``EMBER_CPU``/``EMBER_CPU_FEATURES``
change both; see docs/backends.md).

Example::

    from _header import target_header
    print(target_header())
    # target: znver4 (host): avx512f fma, 512-bit vectors | gemm: float32 avx512 8x48, ...
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def target_header() -> str:
    """One line naming the native target and the packed gemm's tiles."""
    from ember.backends.llvm import packed_gemm, target
    return f"target: {target.describe()} | gemm: {packed_gemm.describe()}"
