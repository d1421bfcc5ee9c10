"""Differential fuzzing: random ember programs run eagerly, under
``jit(f, backend="reference")`` and under the LLVM ``jit``, must agree.

The programs (``fuzz_programs.py``) are straight-line ``lax``/``enp`` source
over a broad primitive table (elementwise math, comparisons and select, casts
between every dtype, broadcasting, movement, reductions, cumulative ops,
dot_general, gather, sort, random samplers) on inputs full of signed zeros,
NaN, infinities, subnormals and dtype extremes, with 0-d and size-0 shapes.
Exact nodes must match bitwise (NaN positions and zero signs included);
inexact ones (transcendentals, float sums/products/dots) must lie within their
documented bounds of a float64/extended-precision oracle, measured in ulps.

Hypothesis draws every choice (a fixed derandomized seed, so runs repeat) and
shrinks a failure to a minimal program, printed as Python source with its
inputs. ``python tests/backends/test_differential_fuzz.py N`` runs N seeded
programs and prints every mismatch, each shrunk, instead of stopping at the first.
"""
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_programs as fp  # noqa: E402

_SETTINGS = dict(deadline=None, derandomize=True, database=None, print_blob=False,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                        HealthCheck.filter_too_much, HealthCheck.large_base_example])


@st.composite
def programs(draw, max_ops):
    return fp.generate(fp.HypothesisChooser(draw), max_ops=max_ops)


@pytest.fixture(scope="module")
def sandbox():
    box = fp.Sandbox()
    yield box
    box.close()


def _check(prog, sandbox=None):
    problems = sandbox.check(prog) if sandbox is not None else fp.check_program(prog)
    assert not problems, fp.report(prog, problems)


# the programs run in a child process: a crash in native code fails (and
# shrinks) one program instead of ending the session
@settings(max_examples=100, **_SETTINGS)
@given(prog=programs(max_ops=8))
def test_random_programs_agree(sandbox, prog):
    _check(prog, sandbox)


@pytest.mark.slow
@settings(max_examples=1200, **_SETTINGS)
@given(prog=programs(max_ops=14))
def test_many_random_programs_agree(sandbox, prog):
    _check(prog, sandbox)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_long_chains_agree(seed):
    # thousands of fused elementwise nodes, each reading the previous one: no
    # walk over the graph or a kernel's expression may recurse per node
    prog = fp.generate(fp.RngChooser(np.random.default_rng(seed)), min_ops=3000, max_ops=3000, deep=True,
                       ops=[fp.op_chain, fp.op_clamp], shape=(3, 5), dtypes=fp.FLOATS)
    assert len(prog.outputs) == 1 and fp.chain_depth(prog) == 3000
    _check(prog)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_long_half_precision_reductions_agree(dtype):
    # more elements than float16 can count (65504 is its largest finite value):
    # a mean must not divide by an overflowed count, a sum must not accumulate
    # in the narrow type
    x = fp.C(dtype, np.random.default_rng(0).random(70000))
    prog = fp.rebuild({"x0": x}, [
        fp.Node("v1", "enp.mean(x0, axis=(0,))", ("mean", (0,)), ("x0",)),
        fp.Node("v2", f"lax.mul(x0, C('{dtype}', 0.5))"),
        fp.Node("v3", "lax.reduce_sum(v2, (0,))", ("reduce_sum", (0,)), ("v2",))])
    _check(prog)


def test_oracle_measures_ulps_and_flags_what_exceeds_the_bound():
    x = np.array([0.5, 1.0, 10.0, -3.0], np.float32)
    exact = np.exp(x.astype(np.float64))
    node = fp.Node("v1", "lax.exp(x0)", ("math", "exp"), ("x0",))
    one_ulp = np.nextafter(exact.astype(np.float32), np.float32(np.inf))
    assert fp.check_inexact(node, exact.astype(np.float32), {"x0": x}) is None
    assert fp.ulp_distance(one_ulp, exact, np.float32).max() <= 1.5
    far = exact.astype(np.float32) * np.float32(1 + 2 ** -18)      # ~64 ulp off
    assert "4 of 4 differ" in fp.check_inexact(node, far, {"x0": x})
    # a float sum: the a-priori bound of any summation order, not a fixed rtol
    s = np.array([[1e8, 1.0, -1e8, 3.0]], np.float32)
    sum_node = fp.Node("v1", "lax.reduce_sum(x0, (1,))", ("reduce_sum", (1,)), ("x0",))
    assert fp.check_inexact(sum_node, np.array([4.0], np.float32), {"x0": s}) is None
    assert fp.check_inexact(sum_node, np.array([0.0], np.float32), {"x0": s}) is None   # 1e8+1 rounds away
    assert fp.check_inexact(sum_node, np.array([64.0], np.float32), {"x0": s}) is not None
    # bitwise comparison sees the sign of zero and NaN positions
    assert fp.bitwise_mismatch(np.float32(-0.0), np.float32(0.0)) is not None
    assert fp.bitwise_mismatch(np.array([np.nan, 1]), np.array([np.nan, 1])) is None


def _triage(n, start=0, max_ops=14):
    """Run ``n`` seeded programs; print each distinct mismatch once, shrunk."""
    seen = set()

    def problems(p):
        try:
            return fp.check_program(p)
        except Exception as e:  # noqa: BLE001  (a crash is a finding too)
            return [("exception", "", "", f"{type(e).__name__}: {e}"[:300])]

    def key(ps):
        return {(w, expr.split("(")[0], expr.split(", ")[-1] if "convert" in expr else "",
                 why[:40] if w == "exception" else "") for w, _, expr, why in ps}

    bad = 0
    for s in range(start, start + n):
        prog = fp.generate(fp.RngChooser(np.random.default_rng(s)), max_ops=max_ops)
        ps = problems(prog)
        if not ps:
            continue
        bad += 1
        k = key(ps)
        if k <= seen:
            continue
        seen |= k
        small = fp.shrink(prog, lambda p: bool(key(problems(p)) & k))
        print(f"=== seed {s}\n{fp.report(small, problems(small))}\n", flush=True)
    print(f"{n} programs, {bad} with mismatches")


if __name__ == "__main__":
    _triage(int(sys.argv[1]) if len(sys.argv) > 1 else 200, int(sys.argv[2]) if len(sys.argv) > 2 else 0)
