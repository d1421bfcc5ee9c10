"""dtypes/promotion, Array basics, the IR printer (golden), passes and typecheck."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember import dtypes as dt, lax
from ember.fx.ir import typecheck
from ember.fx.passes import cse, dce, fold_constants, optimize
import ember.numpy as enp

# The array API standard's promotion table (the rows it defines).
TABLE = [
    (dt.int8, dt.uint8, dt.int16), (dt.int16, dt.uint16, dt.int32), (dt.int32, dt.uint32, dt.int64),
    (dt.int8, dt.int32, dt.int32), (dt.uint8, dt.uint16, dt.uint16), (dt.float16, dt.float32, dt.float32),
    (dt.float32, dt.float64, dt.float64), (dt.float32, dt.complex64, dt.complex64),
    (dt.float64, dt.complex64, dt.complex128), (dt.bool_, dt.bool_, dt.bool_),
    (dt.bfloat16, dt.float16, dt.float32),
]


@pytest.mark.parametrize("a,b,c", TABLE)
def test_promotion_table_symmetric(a, b, c):
    assert dt.promote([a, b], [False, False])[0] == c
    assert dt.promote([b, a], [False, False])[0] == c


@given(st.sampled_from(dt.ALL_DTYPES), st.sampled_from(dt.ALL_DTYPES), st.sampled_from(dt.ALL_DTYPES))
@settings(max_examples=60, deadline=None)
def test_promotion_is_associative(a, b, c):
    ab, ab_weak = dt.promote([a, b], [False, False])
    bc, bc_weak = dt.promote([b, c], [False, False])
    assert dt.promote([ab, c], [ab_weak, False])[0] == dt.promote([a, bc], [False, bc_weak])[0]


def test_weak_scalars_keep_array_dtype():
    assert (enp.asarray([1.0], dtype="float32") * 2.0).dtype == dt.float32
    assert (enp.asarray([1], dtype="int8") + 1).dtype == dt.int8
    assert (enp.asarray([1.0], dtype="float64") + 1.0).dtype == dt.float64
    assert (enp.asarray([1], dtype="int8") * 1.5).dtype == dt.float32
    assert enp.asarray(1.5).dtype == dt.float32 and enp.asarray(3).dtype == dt.int32
    assert enp.asarray(np.float64(1.5)).dtype == dt.float64


def test_finfo_iinfo_can_cast_isdtype():
    assert float(dt.finfo(dt.bfloat16).eps) == 2 ** -7
    assert dt.iinfo(dt.uint8).max == 255
    assert dt.can_cast(dt.int8, dt.int16) and not dt.can_cast(dt.float64, dt.float32)
    assert dt.isdtype(dt.float32, ("real floating", "complex floating"))
    with pytest.raises(ValueError):
        dt.isdtype(dt.float32, "nonsense")
    with pytest.raises(TypeError, match="not supported"):
        dt.canonicalize(np.dtype("datetime64[s]"))


def test_array_is_immutable_and_points_to_at():
    x = enp.asarray([1.0, 2.0])
    with pytest.raises(TypeError, match=r"\.at\["):
        x[0] = 3.0
    assert not np.asarray(x).flags.writeable
    assert repr(x) == "Array([1., 2.], dtype=float32)"
    with pytest.raises(TypeError):
        ember.Array()


def test_array_scalar_conversions():
    x = enp.asarray(3)
    assert int(x) == 3 and float(x) == 3.0 and bool(x) and x.item() == 3
    assert [1, 2, 3][enp.asarray(1)] == 2
    with pytest.raises(TypeError, match="size 1"):
        bool(enp.asarray([1.0, 2.0]))


def test_dlpack_roundtrip():
    x = enp.asarray([1.0, 2.0, 3.0])
    y = np.from_dlpack(x)
    np.testing.assert_array_equal(y, [1.0, 2.0, 3.0])


GOLDEN = """{ lambda ; a:f32[3]. let
    b:f32[3] = sin a
    c:f32[3] = mul b 2.0
    d:f32[3] = max c 0.0
  in (d,) }"""


def test_graph_printing_golden():
    g = ember.make_graph(lambda x: lax.max(lax.mul(lax.sin(x), np.float32(2.0)), np.float32(0.0)))(
        np.ones(3, np.float32))
    assert str(g) == GOLDEN
    typecheck(g)
    assert g.to_dot().startswith("digraph ember")


def test_equations_record_user_source_line():
    g = ember.make_graph(lambda x: lax.sin(x))(np.float32(1.0))
    assert "test_dtypes_and_ir.py" in g.equations[0].source


def test_passes():
    def f(x):
        a = lax.sin(x)
        b = lax.sin(x)  # duplicate
        lax.cos(x)  # dead
        return lax.add(lax.mul(a, lax.add(np.float32(1.0), np.float32(2.0))), b)
    g = ember.make_graph(f)(np.float32(1.0))
    opt = optimize(g)
    assert [e.prim.name for e in opt.equations] == ["sin", "mul", "add"]
    typecheck(opt)
    assert len(dce(g.graph).equations) == len(g.equations) - 1
    assert len(cse(g.graph).equations) == len(g.equations) - 1
    assert len(fold_constants(g.graph).equations) == len(g.equations) - 1


def test_shape_error_names_shapes_and_line():
    with pytest.raises(TypeError, match=r"\(2,\).*\(3,\)|cannot be broadcast"):
        enp.add(enp.asarray([1.0, 2.0]), enp.asarray([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError, match="equal shapes"):
        ember.make_graph(lambda a, b: lax.add(a, b))(np.ones(2, np.float32), np.ones(3, np.float32))


def test_jit_cache_and_recompile_log(capsys):
    calls = []

    def f(x):
        calls.append(1)
        return lax.mul(x, x)
    jf = ember.jit(f)
    ember.config.update("log_compiles", True)
    try:
        jf(np.ones(2, np.float32))
        jf(np.ones(2, np.float32))
        jf(np.ones(3, np.float32))
    finally:
        ember.config.update("log_compiles", False)
    assert len(calls) == 2 and jf._cache_size() == 2
    err = capsys.readouterr().err
    assert "first call" in err and "f32[2] -> f32[3]" in err


def test_jit_static_args():
    f = ember.jit(lambda x, n: lax.integer_pow(x, n), static_argnums=1)
    assert float(f(np.float32(2.0), 3)) == 8.0
    with pytest.raises(TypeError, match="hashable"):
        ember.jit(lambda x, n: x, static_argnums=1)(np.float32(1.0), [1])


def test_tree_none_is_empty_node_and_dataclass():
    import dataclasses
    assert ember.tree.leaves({"a": None, "b": (1, 2)}) == [1, 2]

    @ember.tree.register_dataclass
    @dataclasses.dataclass
    class P:
        w: object
        name: str = dataclasses.field(default="p", metadata={"static": True})
    leaves, td = ember.tree.flatten(P(3.0))
    assert leaves == [3.0] and ember.tree.unflatten(td, [4.0]).w == 4.0


@pytest.mark.parametrize("jit", [False, True])
def test_python_scalars_passed_to_lax_have_their_weak_dtype(jit):
    # the impls see a Python scalar as an array of its aval's dtype (not numpy's float64 /
    # int64), eagerly and staged; an int out of range is a clear error, not numpy's
    run = (lambda f: ember.jit(f)()) if jit else (lambda f: f())
    b = run(lambda: ember.lax.broadcast_in_dim(2.0, (3, 2), ()))
    assert b.dtype == np.float32 and b.aval.weak_type and np.asarray(b).tolist() == [[2.0] * 2] * 3
    i = run(lambda: ember.lax.broadcast_in_dim(7, (2,), ()))
    assert i.dtype == np.int32 and np.asarray(i).tolist() == [7, 7]
    with pytest.raises(OverflowError, match=r"broadcast_in_dim: Python int 1099511627776 is out of range "
                                            r"for dtype int32"):
        run(lambda: ember.lax.broadcast_in_dim(2 ** 40, (3,), ()))
