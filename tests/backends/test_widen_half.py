"""Half-precision dot_general under jit runs on the native float32 gemm and agrees
bitwise with the reference (float32 products and sums, one rounding)."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("shape", [((5, 7), (7, 3)), ((2, 4, 6), (2, 6, 5)), ((0, 3), (3, 4))])
def test_half_matmul_native_equals_reference(dtype, shape):
    rng = np.random.default_rng(0)
    a = enp.asarray(rng.normal(size=shape[0]), dtype=dtype)
    b = enp.asarray(rng.normal(size=shape[1]), dtype=dtype)
    f = lambda a, b: enp.tanh(a @ b)
    native = np.asarray(ember.jit(f)(a, b))
    ref = np.asarray(ember.jit(f, backend="reference")(a, b))
    assert native.dtype == ref.dtype == np.dtype(a.dtype)
    np.testing.assert_array_equal(native.view(np.uint16), ref.view(np.uint16))


def test_half_products_are_gemm_steps_not_library_steps():
    from ember.backends.kernels.schedule import schedule
    from ember.backends.kernels.loop_ir import GemmKernel
    from ember.backends.llvm.kernel_target import cpu_target
    a = enp.ones((64, 64), dtype="bfloat16")
    g = ember.make_graph(lambda a, b: lax.dot(a, b))(a, a)
    prog = schedule(g, cpu_target())
    kinds = [type(s).__name__ for s in prog.steps]
    assert "GemmKernel" in kinds and "LibraryStep" not in kinds, kinds
    assert GemmKernel is not None


def test_preferred_float32_output_keeps_its_dtype():
    a = enp.ones((3, 4), dtype="bfloat16")
    f = lambda a: lax.dot_general(a, a, (((1,), (1,)), ((), ())), preferred_element_type=np.float32)
    out = ember.jit(f)(a)
    assert str(out.dtype) == "float32" and float(out[0, 0]) == 4.0
