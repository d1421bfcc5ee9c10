"""jit(f).lower(*args): Lowered with as_text (ir, kernels, llvm, asm), cost_analysis, compile."""
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember.backends.llvm.codegen import kernel_names


def _f(x, w):
    return enp.tanh(x @ w).sum(axis=0) + enp.exp(x[0, 0])


def test_reads_like_the_closed_graph():
    x, w = enp.ones((4, 3)), enp.ones((3, 2))
    low = ember.jit(_f).lower(x, w)
    assert str(low) == str(low.closed)
    assert low.graph is low.closed.graph and low.consts == low.closed.consts
    assert [e.prim.name for e in low.equations] == [e.prim.name for e in low.closed.equations]
    assert low.out_avals[0].shape == (2,)
    assert low.as_text() == str(low.closed) and low.as_text("ir") == str(low)


def test_kernels_llvm_asm():
    low = ember.jit(_f).lower(enp.ones((4, 3)), enp.ones((3, 2)))
    prog = low.kernels()
    names = kernel_names(prog)
    assert names
    ktext = low.as_text("kernels")
    # fused kernels print by name; gemm steps as "library dot_general ... (the target's gemm"
    assert {m for m in re.findall(r"^kernel (\S+):", ktext, re.M)} == {n for n in names if "gemm" not in n}
    assert ("the target's gemm" in ktext) == any("gemm" in n for n in names)
    llvm = low.as_text("llvm")
    defined = set(re.findall(r'define [^@]*@"?([A-Za-z0-9_.]+)"?\(', llvm))
    assert set(names) <= defined          # a function per kernel
    asm = low.as_text("asm")
    for n in names:
        assert re.search(rf"^{re.escape(n)}:", asm, re.M), n
    assert "\tret" in asm or "ret\n" in asm


@settings(max_examples=15, deadline=None)
@given(m=st.integers(1, 6), k=st.integers(1, 6), n=st.integers(2, 6))
def test_cost_of_a_product_and_a_map(m, k, n):
    c = ember.jit(lambda a, b: a @ b).lower(enp.ones((m, k)), enp.ones((k, n))).cost_analysis()
    gemm = [s for s in c["kernels"] if s["kind"] == "gemm"]
    if gemm:   # a gemm step: 2 m n k flops, A, B and C each moved once
        assert gemm[0]["flops"] == 2 * m * n * k
        assert gemm[0]["bytes"] == 4 * (m * k + k * n + m * n)
    assert c["flops"] >= m * n * k   # written out as fused multiply-adds or a gemm
    assert c["bytes accessed"] == sum(s["bytes"] for s in c["kernels"])
    e = ember.jit(lambda x: enp.sin(x) * 2.0 + 1.0).lower(enp.ones((m, n))).cost_analysis()
    assert e["flops"] == 3 * m * n and e["bytes accessed"] == 2 * 4 * m * n


def test_library_steps_have_no_flop_estimate():
    c = ember.jit(lambda x: enp.sort(x)).lower(enp.ones(5)).cost_analysis()
    lib = [s for s in c["kernels"] if s["kind"] == "library"]
    assert lib and lib[0]["flops"] is None and lib[0]["name"] == "library sort"
    assert lib[0]["bytes"] == 2 * 5 * 4


def test_compile_runs_and_checks_the_signature():
    x, w = np.arange(12.0, dtype=np.float32).reshape(4, 3) / 10, np.ones((3, 2), np.float32)
    c = ember.jit(_f).lower(enp.ones((4, 3)), enp.ones((3, 2))).compile()
    want = np.tanh(x @ w).sum(axis=0) + np.exp(x[0, 0])
    np.testing.assert_allclose(np.asarray(c(x, w)), want, rtol=1e-5)
    with pytest.raises(TypeError, match=r"lowered for arguments \(float32\[4,3\], float32\[3,2\]\) but was "
                                        r"called with \(float32\[5,3\], float32\[3,2\]\)"):
        c(np.ones((5, 3), np.float32), w)


def test_compile_with_static_arguments():
    f = ember.jit(lambda x, n: x * n, static_argnums=1)
    c = f.lower(1.0, 3).compile()
    assert float(c(2.0, 3)) == 6.0
    with pytest.raises(TypeError, match="other static arguments"):
        c(2.0, 4)


def test_compiled_under_grad():
    c = ember.jit(lambda x: enp.sin(x)).lower(1.0).compile()
    np.testing.assert_allclose(float(ember.grad(lambda x: c(x))(0.5)), np.cos(0.5), rtol=1e-6)


def test_reference_backend_has_no_kernel_text():
    low = ember.jit(lambda x: x + 1.0, backend="reference").lower(1.0)
    assert "add" in low.as_text()
    with pytest.raises(ValueError, match="only backend='cpu'"):
        low.as_text("llvm")
    with pytest.raises(ValueError, match="unknown dialect 'hlo'"):
        ember.jit(lambda x: x).lower(1.0).as_text("hlo")
