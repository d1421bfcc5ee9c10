"""The device helpers every rendered CUDA module starts with: IEEE 754-2019
max/min, numpy's integer division and float->int conversion, round-to-odd
narrowing, half-precision rounding, the folds of reductions (warp shuffles and
a shared-memory step per block) and atomic read-modify-write loops.

Example:
    >>> "__shfl_down_sync" in PRELUDE and "#include <cuda_bf16.h>" in PRELUDE
    True
"""
from __future__ import annotations

PRELUDE = r"""// ember CUDA kernels (rendered from the kernel IR; see ember/backends/cuda)
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// IEEE 754-2019 maximum/minimum: NaN propagates, -0 < +0 (the CPU's llvm.maximum)
static __device__ __forceinline__ float ember_fmax(float a, float b) {
  if (a != a || b != b) return a + b;
  if (a == b) return __float_as_int(a) < 0 ? b : a;
  return a > b ? a : b;
}
static __device__ __forceinline__ float ember_fmin(float a, float b) {
  if (a != a || b != b) return a + b;
  if (a == b) return __float_as_int(a) < 0 ? a : b;
  return a < b ? a : b;
}
static __device__ __forceinline__ double ember_fmax(double a, double b) {
  if (a != a || b != b) return a + b;
  if (a == b) return __double_as_longlong(a) < 0 ? b : a;
  return a > b ? a : b;
}
static __device__ __forceinline__ double ember_fmin(double a, double b) {
  if (a != a || b != b) return a + b;
  if (a == b) return __double_as_longlong(a) < 0 ? a : b;
  return a < b ? a : b;
}

static __device__ __forceinline__ bool ember_isfinite(float x) { return fabsf(x) < __int_as_float(0x7f800000); }
static __device__ __forceinline__ bool ember_isfinite(double x) {
  return fabs(x) < __longlong_as_double(0x7ff0000000000000LL);
}

static __device__ __forceinline__ float ember_logistic(float x) {
  return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-x)));
}
static __device__ __forceinline__ double ember_logistic(double x) {
  return __ddiv_rn(1.0, __dadd_rn(1.0, exp(-x)));
}

// numpy's integer division: x / 0 = -1 (all ones), x % 0 = x, MIN / -1 wraps to MIN
template <typename T> static __device__ __forceinline__ T ember_idiv(T x, T y) {
  if (y == 0) return (T)-1;
  if ((T)-1 < (T)0 && y == (T)-1) return (T)(0ull - (unsigned long long)x);
  return (T)(x / y);
}
template <typename T> static __device__ __forceinline__ T ember_irem(T x, T y) {
  if (y == 0) return x;
  if ((T)-1 < (T)0 && y == (T)-1) return (T)0;
  return (T)(x % y);
}

// float -> integer: truncate, saturate at the type's range, NaN -> 0
template <typename T>
static __device__ __forceinline__ T ember_f2i(double x, double lo, double hi_excl, T tmin, T tmax) {
  if (x != x) return (T)0;
  if (x < lo) return tmin;
  if (x >= hi_excl) return tmax;
  return (T)x;
}

// Round to float32 *to odd* (truncate, set the last bit when inexact): the
// float32 -> half rounding after it is then the correctly rounded result of one
// rounding, as the reference converts float64 and 32/64-bit integers to half.
static __device__ __forceinline__ float ember_odd(float t, bool inexact) {
  return inexact ? __int_as_float(__float_as_int(t) | 1) : t;
}
static __device__ __forceinline__ float ember_to_f32_odd(double v) {
  float t = __double2float_rz(v);
  return ember_odd(t, v == v && (double)t != v);
}
static __device__ __forceinline__ float ember_to_f32_odd(long long v) {
  float t = __ll2float_rz(v);
  return ember_odd(t, (long long)t != v);
}
static __device__ __forceinline__ float ember_to_f32_odd(unsigned long long v) {
  float t = __ull2float_rz(v);
  return ember_odd(t, (unsigned long long)t != v);
}
static __device__ __forceinline__ float ember_to_f32_odd(int v) {
  float t = __int2float_rz(v);
  return ember_odd(t, (int)t != v);
}
static __device__ __forceinline__ float ember_to_f32_odd(unsigned int v) {
  float t = __uint2float_rz(v);
  return ember_odd(t, (unsigned int)t != v);
}

// one primitive's float32 result rounded to the half format (nearest even)
static __device__ __forceinline__ float ember_round_f16(float x) { return __half2float(__float2half_rn(x)); }
static __device__ __forceinline__ float ember_round_bf16(float x) {
  return __bfloat162float(__float2bfloat16_rn(x));
}

// the monoids reductions and atomic updates fold with (integers wrap)
struct ember_fold_sum {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const {
    return (T)((unsigned long long)a + (unsigned long long)b);
  }
  __device__ __forceinline__ float operator()(float a, float b) const { return __fadd_rn(a, b); }
  __device__ __forceinline__ double operator()(double a, double b) const { return __dadd_rn(a, b); }
};
struct ember_fold_prod {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const {
    return (T)((unsigned long long)a * (unsigned long long)b);
  }
  __device__ __forceinline__ float operator()(float a, float b) const { return __fmul_rn(a, b); }
  __device__ __forceinline__ double operator()(double a, double b) const { return __dmul_rn(a, b); }
};
struct ember_fold_max {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a > b ? a : b; }
  __device__ __forceinline__ float operator()(float a, float b) const { return ember_fmax(a, b); }
  __device__ __forceinline__ double operator()(double a, double b) const { return ember_fmax(a, b); }
};
struct ember_fold_min {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a < b ? a : b; }
  __device__ __forceinline__ float operator()(float a, float b) const { return ember_fmin(a, b); }
  __device__ __forceinline__ double operator()(double a, double b) const { return ember_fmin(a, b); }
};
struct ember_fold_and {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a & b; }
};
struct ember_fold_or {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a | b; }
};

template <typename T, typename F> static __device__ __forceinline__ T ember_warp_fold(T v, F f) {
  for (int off = 16; off > 0; off >>= 1) v = f(v, __shfl_down_sync(0xffffffffu, v, off));
  return v;
}
// Every thread of the block calls it (blockDim.x a multiple of 32, at most
// 1024); thread 0 gets the fold of all their values.
template <typename T, typename F> static __device__ __forceinline__ T ember_block_fold(T v, F f, T identity) {
  __shared__ T part[32];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  v = ember_warp_fold(v, f);
  __syncthreads();  // an earlier fold of this block may still be reading part
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x >> 5) ? part[lane] : identity;
    v = ember_warp_fold(v, f);
  }
  return v;
}

// an atomic p[0] = f(p[0], v) for 4- and 8-byte types without a native atomic
template <typename T, typename U> static __device__ __forceinline__ U ember_bits(T x) {
  union { T t; U u; } c;
  c.t = x;
  return c.u;
}
template <int N> struct ember_uint;
template <> struct ember_uint<4> { typedef unsigned int type; };
template <> struct ember_uint<8> { typedef unsigned long long type; };
template <typename T, typename F> static __device__ __forceinline__ void ember_atomic_update(T* p, T v, F f) {
  typedef typename ember_uint<sizeof(T)>::type U;
  U* a = (U*)p;
  U old = *a, assumed;
  do {
    assumed = old;
    old = atomicCAS(a, assumed, ember_bits<T, U>(f(ember_bits<U, T>(assumed), v)));
  } while (assumed != old);
}
"""
