"""Native CPU toolkit for ember: LLVM IR -> machine code -> parallel launches.

This package is the only place in ember that imports llvmlite.

* ``target``   host CPU target machine, fingerprint, function attributes
* ``compiler`` ``compile_ir``: O3 + MCJIT with an in-process memo and a disk
  cache of object code
* ``mathlib``  vectorisable inline approximations of exp, log, tanh, erf, ...
* ``runtime``  the kernel ABI ``void kernel(i64 start, i64 stop, i8** args)``,
  launchers and the persistent worker pool
* ``blas``     sgemm/dgemm from scipy's BLAS, from Python and from generated IR
* ``packed_gemm`` ember's own matrix multiply (packed, register-tiled), which
  generated programs call for products and convolutions
* ``loops``    hand-written elementwise and row-sum kernels (tests, benchmarks)

Example::

    from ember.backends import llvm as eb
    cm = eb.compile_ir(ir_text, ["k"])
    eb.KernelLauncher(cm["k"], 2).prepare([x, y]).run(x.size)
"""

from . import blas, compiler, loops, mathlib, packed_gemm, runtime, target
from .blas import declare_gemm, emit_batched_gemm, emit_gemm_call, gemm, gemm_address, matmul
from .compiler import (CompiledModule, cache_dir, cache_enabled, cache_key, cache_stats,
                       clear_memory_cache, compile_ir, inspect_ir, register_symbol,
                       register_symbol_provider)
from .mathlib import MATH_FUNCTIONS, MathFunction
from .mathlib import emit as emit_math
from .runtime import (KERNEL_SIGNATURE, KernelLauncher, PreparedCall, ThreadPool, declare_kernel,
                      get_pool, kernel_arg, kernel_type, num_threads, parallel_for)
from .target import (add_target_attributes, host_fingerprint, host_target_machine)

__all__ = [
    "blas", "compiler", "loops", "mathlib", "packed_gemm", "runtime", "target",
    "compile_ir", "inspect_ir", "CompiledModule", "cache_key", "cache_dir", "cache_enabled",
    "cache_stats", "clear_memory_cache", "register_symbol", "register_symbol_provider",
    "emit_math", "MATH_FUNCTIONS", "MathFunction",
    "KERNEL_SIGNATURE", "kernel_type", "declare_kernel", "kernel_arg", "KernelLauncher",
    "PreparedCall", "ThreadPool", "get_pool", "parallel_for", "num_threads",
    "gemm", "matmul", "gemm_address", "declare_gemm", "emit_gemm_call", "emit_batched_gemm",
    "host_target_machine", "host_fingerprint", "add_target_attributes",
]
