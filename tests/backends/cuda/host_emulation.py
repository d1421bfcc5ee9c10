"""Run rendered CUDA kernels on the host, one emulated thread, to test their
values without a GPU: the CUDA source is compiled by g++ with a shim that
defines the CUDA built-ins the renderer uses (`__fadd_rn` and friends as
strict IEEE host arithmetic with -ffp-contract=off, round-toward-zero
conversions under `fesetround`, `__half` through `_Float16`, bfloat16 by bit
arithmetic, atomics as plain read-modify-writes), with gridDim = blockDim = 1
so every grid-stride loop runs whole in the one thread.  The block fold's warp
shuffles need 32 lanes, so for one thread the fold is the thread's own value:
the two lines of the prelude that assume full warps are replaced (asserted to
exist, so a change of the prelude fails loudly).  `build(..., kernels)` and
`run_on_host(..., launch=(grid, block))` instead run blocks of real threads
(warps of 32 exchanging through a slot table for `__shfl_down_sync`, a barrier
per block for `__syncthreads`, locked atomics), which tests the folds,
barriers and contended atomic updates as written.  What neither tests: CUDA's
math library (the host's libm stands in), -ftz, memory-model subtleties a
real GPU has and a lock does not.

Example::

    outs = run_on_host(prog, mod, args)     # numpy arrays, one per program output
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np

from ember.backends.cuda.prelude import PRELUDE

SHIM = r"""
#include <cmath>
#include <cstring>
#include <cfenv>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __restrict__ __restrict
#define __shared__ static
template <typename T, typename U> static inline T ember_cast_bits(U u) { T t; std::memcpy(&t, &u, sizeof t); return t; }
static inline float __int_as_float(int i) { return ember_cast_bits<float>(i); }
static inline int __float_as_int(float f) { return ember_cast_bits<int>(f); }
static inline unsigned __float_as_uint(float f) { return ember_cast_bits<unsigned>(f); }
static inline float __uint_as_float(unsigned u) { return ember_cast_bits<float>(u); }
static inline double __longlong_as_double(long long i) { return ember_cast_bits<double>(i); }
static inline long long __double_as_longlong(double d) { return ember_cast_bits<long long>(d); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
template <typename T> static inline float ember_rz(T v) {
  std::fesetround(FE_TOWARDZERO);
  volatile float r = (float)v;
  std::fesetround(FE_TONEAREST);
  return r;
}
static inline float __double2float_rz(double v) { return ember_rz(v); }
static inline float __ll2float_rz(long long v) { return ember_rz(v); }
static inline float __ull2float_rz(unsigned long long v) { return ember_rz(v); }
static inline float __int2float_rz(int v) { return ember_rz(v); }
static inline float __uint2float_rz(unsigned v) { return ember_rz(v); }
struct __half { _Float16 h; };
struct __nv_bfloat16 { unsigned short x; };
static inline float __half2float(__half h) { return (float)h.h; }
static inline __half __float2half_rn(float f) { __half h; h.h = (_Float16)f; return h; }
static inline unsigned short __half_as_ushort(__half h) { return ember_cast_bits<unsigned short>(h); }
static inline __half __ushort_as_half(unsigned short u) { return ember_cast_bits<__half>(u); }
static inline float __bfloat162float(__nv_bfloat16 b) { return __int_as_float((int)((unsigned)b.x << 16)); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  unsigned u = __float_as_uint(f);
  __nv_bfloat16 b;
  if (f != f) { b.x = (unsigned short)((u >> 16) | 0x40); return b; }
  u += 0x7fffu + ((u >> 16) & 1u);
  b.x = (unsigned short)(u >> 16);
  return b;
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline float erfinvf(float) { return NAN; }   // no host erfinv: programs using it are left out
"""

# one thread: every grid-stride loop runs whole in it
ONE_THREAD = r"""
struct ember_dim3 { unsigned x; };
static const ember_dim3 blockIdx = {0}, threadIdx = {0}, blockDim = {1}, gridDim = {1};
static inline void __syncthreads() {}
template <typename T> static inline T atomicAdd(T* p, T v) { T o = *p; *p = (T)(o + v); return o; }
template <typename T> static inline T atomicMax(T* p, T v) { T o = *p; *p = o > v ? o : v; return o; }
template <typename T> static inline T atomicMin(T* p, T v) { T o = *p; *p = o < v ? o : v; return o; }
template <typename T> static inline T atomicCAS(T* p, T cmp, T v) { T o = *p; if (o == cmp) *p = v; return o; }
"""

# A block as real threads (blocks one after another, so a function's static
# "shared" array is the block's): __syncthreads is a barrier of the block,
# __shfl_down_sync an exchange through a per-warp slot table between two
# barriers of the warp, atomics a read-modify-write under one lock.
THREADS = r"""
#include <barrier>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>
struct ember_dim3 { unsigned x; };
static thread_local ember_dim3 threadIdx, blockIdx;
static ember_dim3 blockDim, gridDim;
static std::barrier<>* ember_block_bar;
static std::barrier<>* ember_warp_bar[32];
static unsigned long long ember_xchg[32][32];
static std::mutex ember_atomic_lock;
static inline void __syncthreads() { ember_block_bar->arrive_and_wait(); }
template <typename T> static inline T __shfl_down_sync(unsigned, T v, int off) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  std::memcpy(&ember_xchg[warp][lane], &v, sizeof(T));
  ember_warp_bar[warp]->arrive_and_wait();
  T r = v;
  if (lane + off < 32) std::memcpy(&r, &ember_xchg[warp][lane + off], sizeof(T));
  ember_warp_bar[warp]->arrive_and_wait();
  return r;
}
#define EMBER_LOCKED std::lock_guard<std::mutex> ember_guard(ember_atomic_lock)
template <typename T> static inline T atomicAdd(T* p, T v) { EMBER_LOCKED; T o = *p; *p = (T)(o + v); return o; }
template <typename T> static inline T atomicMax(T* p, T v) { EMBER_LOCKED; T o = *p; *p = o > v ? o : v; return o; }
template <typename T> static inline T atomicMin(T* p, T v) { EMBER_LOCKED; T o = *p; *p = o < v ? o : v; return o; }
template <typename T> static inline T atomicCAS(T* p, T cmp, T v) { EMBER_LOCKED; T o = *p; if (o == cmp) *p = v; return o; }
template <typename... P, std::size_t... I>
static void ember_call_(void (*fn)(P...), void** a, std::index_sequence<I...>) { fn((P)a[I]...); }
template <typename... P> static void ember_call(void (*fn)(P...), void** a) {
  ember_call_(fn, a, std::index_sequence_for<P...>{});
}
template <typename F> static void ember_launch(F body, unsigned grid, unsigned block) {
  gridDim.x = grid;
  blockDim.x = block;
  for (unsigned b = 0; b < grid; ++b) {
    std::barrier<> bar(block);
    ember_block_bar = &bar;
    std::vector<std::unique_ptr<std::barrier<>>> warps;
    for (unsigned w = 0; w < block / 32; ++w) {
      warps.emplace_back(new std::barrier<>(32));
      ember_warp_bar[w] = warps.back().get();
    }
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < block; ++t) threads.emplace_back([=] { blockIdx.x = b; threadIdx.x = t; body(); });
    for (auto& th : threads) th.join();
  }
}
"""

# the prelude's two full-warp assumptions, and what one thread does instead
_WARP_LOOP = "  for (int off = 16; off > 0; off >>= 1) v = f(v, __shfl_down_sync(0xffffffffu, v, off));\n"
_LAST_WARP = "    v = lane < (blockDim.x >> 5) ? part[lane] : identity;\n"


_INCLUDES = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"


def host_prelude(threads=False) -> str:
    """The prelude for one emulated thread (the warp steps are the identity), or
    (`threads`) for blocks of real threads, where it is the device's as written."""
    if threads:
        return SHIM + THREADS + PRELUDE.replace(_INCLUDES, "")
    assert _WARP_LOOP in PRELUDE and _LAST_WARP in PRELUDE, "the prelude's fold changed: update host_emulation"
    return SHIM + ONE_THREAD + PRELUDE.replace(_INCLUDES, "").replace(
        _WARP_LOOP, "").replace(_LAST_WARP, "    v = part[0];\n")


def available() -> bool:
    """Whether a host C++ compiler with _Float16 is here."""
    return shutil.which("g++") is not None


_CACHE = os.path.join(tempfile.gettempdir(), f"ember-cuda-host-{os.getuid()}")


def build(functions: str, kernels=None) -> ctypes.CDLL:
    """Compile kernel functions (a module's `functions`, possibly several
    concatenated) with the host prelude into a shared library; with `kernels`
    (their `CudaKernel`s), for blocks of threads, each with an entry
    `launch_<name>(void** args, unsigned grid, unsigned block)`."""
    threads = kernels is not None
    src = host_prelude(threads) + "\n" + functions
    if threads:
        src += "".join(f'\nextern "C" void launch_{k.name}(void** a, unsigned g, unsigned b) '
                       f'{{ ember_launch([=] {{ ember_call({k.name}, a); }}, g, b); }}' for k in kernels)
    key = hashlib.sha256(src.encode()).hexdigest()[:24]
    os.makedirs(_CACHE, exist_ok=True)
    so = os.path.join(_CACHE, f"{key}.so")
    if not os.path.exists(so):
        cpp = os.path.join(_CACHE, f"{key}.cpp")
        with open(cpp, "w") as f:
            f.write(src)
        tmp = f"{so}.{os.getpid()}"
        out = subprocess.run(["g++", "-std=c++20" if threads else "-std=c++17", "-O0", "-ffp-contract=off",
                              "-frounding-math", "-shared", "-fPIC", "-pthread", "-w", cpp, "-o", tmp],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"g++ could not compile the host emulation of {cpp}:\n{out.stderr[-4000:]}")
        os.replace(tmp, so)
    return ctypes.CDLL(so)


def run_on_host(lib, prog, mod, args, launch=None):
    """Run `mod`'s kernels (from `lib`) over fresh buffers of `prog` holding its
    consts and `args`; returns the program's outputs.  `launch=(max grid,
    block)` runs each kernel on blocks of threads (a library built with its
    kernels), at most that many blocks of that many threads."""
    bufs = [np.zeros(b.shape, b.dtype) for b in prog.buffers]
    for bid, value in prog.consts:
        bufs[bid][...] = np.asarray(value)
    for bid, a in zip(prog.inputs, args):
        bufs[bid][...] = np.asarray(a)
    for k in mod.kernels:
        if k.grid == 0:
            continue
        ptrs = [ctypes.c_void_p(bufs[b].ctypes.data) for b in k.params]
        if launch is None:
            fn = getattr(lib, k.name)
            fn.restype = None
            fn(*ptrs)
        else:
            table = (ctypes.c_void_p * max(len(ptrs), 1))(*ptrs)
            block = min(k.block, launch[1])
            getattr(lib, f"launch_{k.name}")(table, ctypes.c_uint(min(k.grid, launch[0])), ctypes.c_uint(block))
    return [np.asarray(o[1]) if type(o) is tuple else bufs[o] for o in prog.outputs]
