"""The scheduler reads primitives' kinds and the backend's `Target`: the primitives
that once fell out of fusion silently are fused or declared library steps, a
non-default target changes the schedule as documented (results unchanged), and
the neutral layer imports nothing from the LLVM backend."""
import ast
import dataclasses
import pathlib

import numpy as np
import pytest

import ember
from ember import lax
from ember.backends.kernels import (ConvKernel, GemmKernel, LibraryStep, MapKernel, ReduceKernel, RowKernel,
                                    ScatterKernel, format_program, schedule)
from ember.backends.kernels.loop_ir import operands
from ember.backends.kernels.target import Target
from ember.backends.llvm.executable import compile_graph
from ember.backends.llvm.kernel_target import cpu_target
from ember.fx.interpreter import run_graph_numpy
from ember.fx.prims import elementwise as ew

RNG = np.random.default_rng(3)
F32 = RNG.uniform(0.25, 3.0, 16).astype(np.float32)
UNIT = RNG.uniform(-0.9, 0.9, 16).astype(np.float32)
I32 = RNG.integers(-1000, 1000, 16).astype(np.int32)
C64 = (RNG.standard_normal(16) + 1j * RNG.standard_normal(16)).astype(np.complex64)

# each once fell out of fusion without anyone noticing: (primitive, function with
# fusible neighbours, arguments)
LISTED = [
    (ew.lgamma_p, lambda x: lax.lgamma(x * 2.0) + 1.0, (F32,)),
    (ew.digamma_p, lambda x: lax.digamma(x * 2.0) + 1.0, (F32,)),
    (ew.erf_inv_p, lambda x: lax.erf_inv(x * 0.5) + 1.0, (UNIT,)),
    (ew.nextafter_p, lambda x, y: ew.nextafter(x * 2.0, y) + 0.0, (F32, UNIT)),
    (ew.clz_p, lambda x: lax.clz(x ^ 3) + 1, (I32,)),
    (ew.population_count_p, lambda x: lax.population_count(x ^ 3) + 1, (I32,)),
    (ew.real_p, lambda z: lax.real(z) * 2.0, (C64,)),
    (ew.imag_p, lambda z: lax.imag(z) * 2.0, (C64,)),
    (ew.conj_p, lambda x: lax.conj(x * 2.0) + 1.0, (F32,)),
    (ew.complex_p, lambda x, y: lax.complex(x * 2.0, y), (F32, UNIT)),
]


def _kernel_ops(prog):
    """Names of the primitives applied inside the program's kernels."""
    bodies = []
    for s in prog.steps:
        members = (s.members if isinstance(s, RowKernel) else [s.cols] if isinstance(s, ConvKernel)
                   else [s] + s.epilogue if isinstance(s, GemmKernel) else [s])
        for m in members:
            if isinstance(m, (MapKernel, ReduceKernel, ScatterKernel)):
                bodies.append(m.body)
    ops, seen, stack = set(), set(), bodies
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if e[0] == "op":
            ops.add(e[1])
        stack.extend(operands(e))
    return ops


@pytest.mark.parametrize("prim,f,args", LISTED, ids=[p.name for p, _, _ in LISTED])
def test_listed_primitives_fuse_or_are_declared_library_steps(prim, f, args):
    target = cpu_target()
    prog = schedule(ember.make_graph(f)(*args), target)
    library = [s.eq.prim for s in prog.steps if isinstance(s, LibraryStep)]
    fused = prim.name in _kernel_ops(prog)
    assert fused or prim in target.library, format_program(prog)
    if prim in target.library:
        assert library == [prim], format_program(prog)   # its neighbours still fuse
        assert not fused
    # and jit computes what the eager (numpy) path does
    got = ember.jit(f)(*args)
    want = f(*args)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# --- the neutral layer ------------------------------------------------------------------------

def _imported(pkg, node):
    """Absolute names an import statement in package `pkg` (a list of parts) binds."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not node.level:
        return [node.module]
    base = pkg[:len(pkg) - node.level + 1]
    mod = ".".join(base + ([node.module] if node.module else []))
    return [mod] + [f"{mod}.{a.name}" for a in node.names]


def test_kernels_imports_nothing_from_llvm():
    root = pathlib.Path(ember.__file__).parent
    files = sorted((root / "backends" / "kernels").rglob("*.py"))
    assert len(files) >= 4
    bad = []
    for path in files:
        pkg = ["ember"] + list(path.relative_to(root).parts[:-1])
        for node in ast.walk(ast.parse(path.read_text(), str(path))):   # module level and in functions
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                bad += [f"{path.name}:{node.lineno}: {n}" for n in _imported(pkg, node)
                        if n.startswith("ember.backends.llvm") or n.split(".")[0] == "llvmlite"]
    assert not bad, bad


def test_import_walk_resolves_relative_imports():
    pkg = ["ember", "backends", "kernels"]
    tree = ast.parse("def f():\n    from ..llvm import codegen\n    from .. import llvm\n")
    names = [n for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for n in _imported(pkg, node)]
    assert "ember.backends.llvm.codegen" in names and "ember.backends.llvm" in names


# --- a non-default target -----------------------------------------------------------------------

def _run(f, target, *args):
    g = ember.make_graph(f)(*args)
    got = compile_graph(g, target)(*args)
    ref = run_graph_numpy(g.graph, g.consts_as_buffers(), list(args))
    for a, b in zip(got, ref):
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=2e-4, atol=2e-4)
    return schedule(g, target)


def test_one_thread_no_epilogues_no_split_changes_the_schedule_not_the_results():
    cpu = cpu_target(threads=8)
    small = dataclasses.replace(cpu, threads=1, gemm_epilogues=False, split_reductions=False)
    x = RNG.standard_normal((600, 300)).astype(np.float32)
    w = RNG.standard_normal((300, 500)).astype(np.float32)
    mm = lambda a, b: lax.tanh(lax.dot_general(a, b, (((1,), (0,)), ((), ()))))  # noqa: E731
    (g8,) = [s for s in _run(mm, cpu, x, w).steps if isinstance(s, GemmKernel)]
    assert g8.tasks > 1 and len(g8.epilogue) == 1
    steps = _run(mm, small, x, w).steps
    (g1,) = [s for s in steps if isinstance(s, GemmKernel)]
    assert g1.tasks == 1 and not g1.epilogue          # one block, tanh its own kernel
    assert [type(s) for s in steps] == [GemmKernel, MapKernel]

    v = RNG.standard_normal(1 << 17).astype(np.float32)
    total = lambda a: lax.reduce_sum(a * 2.0, (0,))  # noqa: E731
    assert [type(s) for s in _run(total, cpu, v).steps] == [ReduceKernel, ReduceKernel]   # partials + final
    assert [type(s) for s in _run(total, small, v).steps] == [ReduceKernel]


def test_no_row_kernels_and_no_register_accumulators():
    cpu = cpu_target()
    plain = dataclasses.replace(cpu, row_kernels=False, register_accumulator=False)
    x = RNG.standard_normal((64, 48)).astype(np.float32)

    def softmax(a):
        m = lax.reduce_max(a, (1,))
        e = lax.exp(a - lax.broadcast_in_dim(m, a.shape, (0,)))
        return e / lax.broadcast_in_dim(lax.reduce_sum(e, (1,)), a.shape, (0,))
    assert any(isinstance(s, RowKernel) for s in _run(softmax, cpu, x).steps)
    steps = _run(softmax, plain, x).steps
    assert not any(isinstance(s, RowKernel) for s in steps)
    reductions = [s for s in steps if isinstance(s, ReduceKernel)]
    assert len(reductions) == 2 and not any(r.register_accumulator for r in reductions)


def test_gemm_dtypes_and_conv_strategy_are_the_targets():
    cpu = cpu_target()
    x = RNG.standard_normal((64, 32)).astype(np.float32)
    w = RNG.standard_normal((32, 48)).astype(np.float32)
    mm = lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())))  # noqa: E731
    no_gemm = dataclasses.replace(cpu, gemm_dtypes=())
    assert [type(s) for s in _run(mm, no_gemm, x, w).steps] == [LibraryStep]
    img = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    k = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    conv = lambda a, b: lax.conv_general_dilated(a, b, (1, 1), ((1, 1), (1, 1)))  # noqa: E731
    assert any(isinstance(s, ConvKernel) for s in _run(conv, cpu, img, k).steps)
    steps = _run(conv, dataclasses.replace(cpu, conv_strategy=None), img, k).steps
    assert [type(s) for s in steps] == [LibraryStep]


def test_target_rejects_unknown_policies_and_schedule_rejects_a_bare_callable():
    cpu = cpu_target()
    with pytest.raises(ValueError, match="scatter must be one of"):
        dataclasses.replace(cpu, scatter="parallel")
    with pytest.raises(ValueError, match="threads must be at least 1"):
        dataclasses.replace(cpu, threads=0)
    g = ember.make_graph(lambda a: a + 1.0)(F32)
    with pytest.raises(TypeError, match="target must be a backends.kernels.Target"):
        schedule(g, lambda eq: True)
    assert isinstance(cpu, Target)
