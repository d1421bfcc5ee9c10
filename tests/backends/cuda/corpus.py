"""The corpus of jitted graphs the CUDA checks render: the per-primitive programs
of test_native_vs_reference.py over their dtypes (plus reductions, bool/select,
scatters and gathers) and random fused programs of fuzz_programs.py, each with
the arguments it was traced at.

Example::

    cases = primitive_programs()     # [(label, (closed graph, args)), ...]
"""
import os
import sys

import numpy as np

import ember
import ember.numpy as enp
from ember import lax

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fuzz_programs as fp  # noqa: E402
import test_native_vs_reference as nvr  # noqa: E402

N_FUZZ = 200


def _graph(f, *args):
    """The closed graph of `f` at `args`, and the args (the GPU launch test runs them)."""
    return ember.make_graph(f)(*args), args


def softmax(v):
    """The row kernel programs' softmax (max-subtracted, last axis)."""
    e = enp.exp(v - enp.max(v, axis=-1, keepdims=True))
    return e / enp.sum(e, axis=-1, keepdims=True)


def layernorm(v):
    """The row kernel programs' layer normalisation (no scale or shift, last axis)."""
    m = enp.mean(v, axis=-1, keepdims=True)
    c = v - m
    return c / enp.sqrt(enp.mean(c * c, axis=-1, keepdims=True) + 1e-5)


def primitive_programs():
    """(label, (closed graph, args)) for every per-primitive case of the differential
    tests, plus reductions, bool/select, scatter and gather cases."""
    rng = np.random.default_rng(0)
    out = []
    for name in nvr.UNARY:
        for d in nvr.FLOATS:
            out.append((f"{name}[{d}]", _graph(getattr(lax, name), nvr._data(d, (3, 37), rng))))
    for name in nvr.BINARY:
        for d in nvr.FLOATS:
            x, y = nvr._data(d, (5, 11), rng), nvr._data(d, (5, 11), rng)
            out.append((f"{name}[{d}]", _graph(getattr(lax, name), x, y)))
    for name in nvr.INT_BINARY:
        fn = getattr(lax, {"and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor"}.get(name, name))
        for d in nvr.INTS:
            x, y = nvr._data(d, (40,), rng), nvr._data(d, (40,), rng)
            out.append((f"{name}[{d}]", _graph(fn, x, y)))
    for name in ("neg", "abs", "sign", "bitwise_not", "population_count", "clz", "square"):
        for d in nvr.INTS:
            out.append((f"{name}[{d}]", _graph(getattr(lax, name), nvr._data(d, (9,), rng))))
    for d in nvr.FLOATS:
        for e, m in ((5, 10), (8, 7), (4, 3), (2, 1), (8, 0)):
            out.append((f"reduce_precision{e},{m}[{d}]",
                        _graph(lambda v, e=e, m=m: lax.reduce_precision(v, e, m), nvr._data(d, (64,), rng))))
    dts = nvr.FLOATS + nvr.INTS + [np.dtype(bool)]
    for src in dts:
        for dst in dts:
            out.append((f"convert[{src}->{dst}]",
                        _graph(lambda v, dst=dst: lax.convert_element_type(v, dst), nvr._data(src, (64,), rng))))
    for shape, axes in [((7,), (0,)), ((4, 9), (1,)), ((4, 9), (0,)), ((3, 4, 5), (0, 2)), ((3, 4, 5), (1,)),
                        ((0, 3), (0,)), ((3, 0), (1,)), ((2, 3), (0, 1)), ((4, 300), (1,))]:
        for op in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
            for d in (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32), np.dtype(np.float16),
                      nvr.BF16, np.dtype(np.int8), np.dtype(np.uint16)):
                out.append((f"{op}{shape}{axes}[{d}]",
                            _graph(lambda v, op=op, axes=axes: getattr(lax, op)(v, axes),
                                   nvr._data(d, shape, rng, special=False))))
    x = rng.random((5, 6)) < 0.5
    for op in ("reduce_and", "reduce_or"):
        out.append((op, _graph(lambda v, op=op: getattr(lax, op)(v, (1,)), x)))
    y = np.arange(30, dtype=np.float32).reshape(5, 6)
    out.append(("select_n", _graph(lambda p, v: lax.select_n(p, v, lax.neg(v)), x, y)))
    out.append(("integer_pow", _graph(lambda v: lax.integer_pow(v, -7) + lax.integer_pow(v, 13), y)))
    out.append(("clamp", _graph(lambda v: lax.clamp(np.float32(1), v, np.float32(9)), y)))
    for d in (np.float16, np.float32):
        out.append((f"softmax[{np.dtype(d)}]", _graph(softmax, rng.standard_normal((8, 300)).astype(d))))
    idx = np.array([0, 2, 2, 4, 1], np.int32)
    for d in (np.float32, np.float64, np.int32, np.int64, np.uint32, np.int8):
        z = np.zeros(6, d)
        u = np.arange(5).astype(d)
        out.append((f"scatter_add[{np.dtype(d)}]", _graph(lambda z, u: z.at[idx].add(u), z, u)))
        out.append((f"scatter_max[{np.dtype(d)}]", _graph(lambda z, u: z.at[idx].max(u), z, u)))
        out.append((f"scatter_min[{np.dtype(d)}]", _graph(lambda z, u: z.at[idx].min(u), z, u)))
        out.append((f"scatter_mul[{np.dtype(d)}]", _graph(lambda z, u: z.at[idx].multiply(u), z, u)))
        out.append((f"scatter_set[{np.dtype(d)}]", _graph(lambda z, u: z.at[idx].set(u), z, u)))
        out.append((f"gather[{np.dtype(d)}]", _graph(lambda z: enp.take(z, idx) * 2, np.arange(6).astype(d))))
    return out


def fuzz_programs(n):
    rng = np.random.default_rng(14)
    out = []
    for i in range(n):
        prog = fp.generate(fp.RngChooser(rng), max_ops=10)
        out.append((f"fuzz {i}:\n{prog.source()}", _graph(prog.function(), *prog.inputs.values())))
    return out
