"""Every elementwise primitive has a lowering on every native backend or is
declared a library step there, with the reason (issue #13); the lowerings added
for the primitives that used to fall out of fusion (clz, population_count,
nextafter, conj of real values) agree with eager evaluation bitwise, and fuse."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember.backends.llvm.kernel_target import cpu_target
from ember import jit, lax
from ember.backends.kernels import LibraryStep, MapKernel, schedule
from ember.backends.kernels.kinds import is_elementwise
from ember.backends.llvm import ops as llvm_ops
from ember.backends.cuda import ops as cuda_ops
from ember.fx.core import PRIMITIVES
from ember.fx.prims import elementwise as ew

NATIVE_BACKENDS = {"llvm": llvm_ops, "cuda": cuda_ops}
BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
INTS = [np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)]
# the primitives that were missing from the scheduler's elementwise table (issue #13)
FORMERLY_UNFUSED = [ew.lgamma_p, ew.digamma_p, ew.erf_inv_p, ew.nextafter_p, ew.clz_p, ew.population_count_p,
                    ew.real_p, ew.imag_p, ew.conj_p, ew.complex_p]


def _elementwise():
    return sorted((p for p in PRIMITIVES.values() if is_elementwise(p)), key=lambda p: p.name)


def test_the_formerly_unfused_primitives_are_elementwise():
    assert [p.name for p in FORMERLY_UNFUSED if not is_elementwise(p)] == []


@pytest.mark.parametrize("backend", sorted(NATIVE_BACKENDS))
def test_every_elementwise_primitive_is_lowered_or_a_declared_library_step(backend):
    table = NATIVE_BACKENDS[backend]
    prims = _elementwise()
    assert len(prims) > 60   # the helper sees the whole elementwise family
    missing = [p.name for p in prims if p not in table.LOWERINGS and p not in table.LIBRARY_STEPS]
    assert missing == [], f"{backend}: elementwise primitives with neither a lowering nor a library-step reason"
    both = [p.name for p in prims if p in table.LOWERINGS and p in table.LIBRARY_STEPS]
    assert both == []
    assert all(isinstance(r, str) and len(r) > 20 for r in table.LIBRARY_STEPS.values())
    assert all(is_elementwise(p) for p in table.LIBRARY_STEPS)


def test_library_steps_are_what_the_llvm_backend_declares():
    # a declared library step is one: its equation is not a kernel
    g = ember.make_graph(lambda x: lax.lgamma(lax.exp(x)))(np.ones(5, np.float32))
    kinds = [type(s).__name__ for s in schedule(g, cpu_target()).steps]
    assert kinds == ["MapKernel", "LibraryStep"]
    assert [llvm_ops.supports(eq) for eq in g.equations] == [True, False]


def _fuses(f, *args):
    steps = schedule(ember.make_graph(f)(*args), cpu_target()).steps
    return len(steps) == 1 and isinstance(steps[0], MapKernel) and not any(isinstance(s, LibraryStep)
                                                                          for s in steps)


def _bits(a):
    a = np.asarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def _int_values(dtype, n, seed):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    edge = [0, 1, info.max, info.min, info.max // 2 + 1, 2, 3]
    vals = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    vals[:min(n, len(edge))] = np.array(edge[:n], dtype=dtype) if n else vals[:0]
    return vals


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(INTS), st.integers(0, 70), st.integers(0, 2**31))
def test_clz_and_population_count_match_eager_and_closed_form(dtype, n, seed):
    x = _int_values(dtype, n, seed)
    width = dtype.itemsize * 8
    u = [int(v) & ((1 << width) - 1) for v in x.tolist()]
    for f, want in ((lax.clz, [width - v.bit_length() for v in u]),
                    (lax.population_count, [bin(v).count("1") for v in u])):
        got = jit(f)(x)
        assert got.dtype == dtype
        np.testing.assert_array_equal(np.asarray(got).astype(np.int64), np.array(want, np.int64))
        np.testing.assert_array_equal(_bits(got), _bits(f(x)))


def test_clz_and_population_count_fuse():
    x = np.arange(40, dtype=np.int32)
    assert _fuses(lambda v: lax.add(lax.clz(v), lax.population_count(lax.mul(v, v))), x)
    want = lax.add(lax.clz(x), lax.population_count(lax.mul(x, x)))
    np.testing.assert_array_equal(jit(lambda v: lax.add(lax.clz(v), lax.population_count(lax.mul(v, v))))(x),
                                  want)


def _float_values(dtype, n, seed):
    rng = np.random.default_rng(seed)
    fi = ml_dtypes.finfo(dtype) if dtype == BF16 else np.finfo(dtype)
    special = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, float(fi.max), -float(fi.max),
               float(fi.smallest_subnormal), -float(fi.smallest_subnormal), float(fi.tiny)]
    pick = rng.integers(0, 3, size=n)
    x = np.where(pick == 0, rng.choice(special, size=n), rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n))
    return x.astype(dtype)


def _c_nextafter(x, y):
    # C's (and XLA's) nextafter: equal operands give y; numpy's float16 loop gives x
    return np.where(x == y, y, np.nextafter(x, y)).astype(x.dtype)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(FLOATS), st.integers(0, 70), st.integers(0, 2**31))
def test_nextafter_matches_eager_and_numpy_bitwise(dtype, n, seed):
    x = _float_values(dtype, n, seed)
    y = _float_values(dtype, n, seed + 1)
    y[: n // 3] = x[: n // 3]             # x == y returns y
    got = jit(lax.nextafter)(x, y)
    assert got.dtype == dtype
    eager = lax.nextafter(x, y)
    want = _c_nextafter(x, y)
    nan = np.isnan(want.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(np.asarray(got).astype(np.float64)), nan)
    np.testing.assert_array_equal(_bits(got)[~nan], _bits(want)[~nan])
    np.testing.assert_array_equal(_bits(got)[~nan], _bits(eager)[~nan])


def test_nextafter_zeros_and_limits():
    for dtype in FLOATS:
        fi = ml_dtypes.finfo(dtype) if dtype == BF16 else np.finfo(dtype)
        x = np.array([0.0, 0.0, -0.0, -0.0, 0.0, fi.max, np.inf, -np.inf, 1.0], dtype)
        y = np.array([1.0, -1.0, 1.0, -0.0, -0.0, np.inf, 0.0, np.inf, 1.0], dtype)
        got = jit(lax.nextafter)(x, y)
        np.testing.assert_array_equal(_bits(got), _bits(_c_nextafter(x, y)))
        np.testing.assert_array_equal(_bits(lax.nextafter(x, y)), _bits(_c_nextafter(x, y)))
        assert _fuses(lambda a, b: lax.mul(lax.nextafter(a, b), a), x, y)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_conj_of_real_values_is_fused_identity(dtype):
    x = _float_values(dtype, 33, 7)
    got = jit(lambda v: lax.add(lax.conj(v), v))(x)
    np.testing.assert_array_equal(_bits(got), _bits(lax.add(lax.conj(x), x)))
    assert _fuses(lambda v: lax.add(lax.conj(v), v), x)


def test_complex_primitives_stay_library_steps_and_agree():
    x = np.linspace(-2, 2, 9).astype(np.float32)
    f = lambda a: lax.real(lax.mul(lax.complex(a, a), lax.complex(a, lax.neg(a))))  # noqa: E731
    np.testing.assert_array_equal(jit(f)(x), f(x))
    np.testing.assert_allclose(np.asarray(f(x)), 2 * x.astype(np.float64) ** 2, rtol=1e-6)
