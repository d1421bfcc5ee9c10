"""Tests of the windowed reductions and select_and_gather_add / select_and_scatter_add:
values vs a naive window loop, abstract eval, staging, derivatives, transposes, vmap."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember import dtypes as _dt
from ember import lax
from ember.fx.core import UndefinedPrimal, get_aval
from ember.fx.ir import typecheck
from ember.fx.prims import window as W
from ember.testing import check_grads, check_vmap

KINDS = {"sum": W.reduce_window_sum_p, "max": W.reduce_window_max_p, "min": W.reduce_window_min_p}
WRAPPERS = {"sum": lax.reduce_window_sum, "max": lax.reduce_window_max, "min": lax.reduce_window_min}

# (shape, window, strides, padding, base_dilation, window_dilation)
CASES = [
    ((7,), (3,), (1,), ((0, 0),), (1,), (1,)),
    ((7,), (3,), (2,), ((1, 2),), (1,), (1,)),
    ((6,), (2,), (1,), ((0, 0),), (2,), (1,)),
    ((8,), (2,), (2,), ((1, 0),), (1,), (3,)),
    ((9,), (3,), (2,), ((-1, -2),), (1,), (1,)),           # negative padding crops
    ((4, 5), (2, 3), (1, 2), ((0, 1), (1, 1)), (1, 1), (1, 1)),
    ((5, 4), (3, 2), (2, 1), ((1, 1), (0, 2)), (2, 1), (1, 2)),
    ((2, 3, 4), (1, 2, 2), (1, 2, 1), ((0, 0), (1, 0), (0, 1)), (1, 1, 2), (1, 1, 1)),
    ((3, 0), (2, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1)),  # size-0 operand
    ((2,), (3,), (1,), ((0, 0),), (1,), (1,)),              # window > operand: empty output
    ((), (), (), (), (), ()),                               # rank 0
]


def _params(case):
    _, wd, ws, pad, bd, rd = case
    return dict(window_dimensions=wd, window_strides=ws, padding=pad, base_dilation=bd,
                window_dilation=rd)


def _identity(dtype, kind):
    if kind == "sum":
        return 0
    if dtype == _dt.bool_:
        return kind == "min"
    if _dt.is_integer(dtype):
        i = np.iinfo(dtype)
        return i.min if kind == "max" else i.max
    return -np.inf if kind == "max" else np.inf


def _naive_windows(x, fill, window_dimensions, window_strides, padding, base_dilation,
                   window_dilation):
    """{output index: [(value, operand index or None) in window order]} by direct loops."""
    out = tuple(W.window_out_size(n, w, s, lo, hi, b, r) for n, w, s, (lo, hi), b, r in zip(
        x.shape, window_dimensions, window_strides, padding, base_dilation, window_dilation))
    res = {}
    for o in itertools.product(*[range(k) for k in out]):
        items = []
        for k in itertools.product(*[range(w) for w in window_dimensions]):
            src = []
            for d in range(x.ndim):
                q = o[d] * window_strides[d] + k[d] * window_dilation[d] - padding[d][0]
                b = base_dilation[d]
                if q < 0 or q > (x.shape[d] - 1) * b or q % b:
                    src = None
                    break
                src.append(q // b)
            items.append((fill, None) if src is None else (x[tuple(src)], tuple(src)))
        res[o] = items
    return out, res


def naive_reduce_window(x, kind, **params):
    x = np.asarray(x)
    wide = np.float64 if x.dtype in (_dt.float16, _dt.bfloat16) else x.dtype
    out, res = _naive_windows(x.astype(wide), _identity(x.dtype, kind), **params)
    r = np.zeros(out, wide)
    for o, items in res.items():
        vals = np.array([v for v, _ in items], wide)
        r[o] = vals.sum(dtype=wide) if kind == "sum" else (vals.max() if kind == "max" else vals.min())
    return r


def naive_select(x, select_prim, **params):
    """{output index: operand index of the first max/min (None = padding)}."""
    x = np.asarray(x, np.float64)
    out, res = _naive_windows(x, _identity(np.dtype(np.float64), select_prim), **params)
    sel = {}
    for o, items in res.items():
        best = None
        for v, src in items:
            if best is None or (v > best[0] if select_prim == "max" else v < best[0]):
                best = (v, src)
        sel[o] = best[1]
    return out, sel


def _rand(rng, shape, dtype):
    if dtype == _dt.bool_:
        return rng.random(shape) < 0.5
    if _dt.is_integer(dtype):
        lo = 0 if np.dtype(dtype).kind == "u" else -5
        return rng.integers(lo, 6, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


VALUE_DTYPES = [_dt.int8, _dt.int32, _dt.uint8, _dt.float16, _dt.bfloat16, _dt.float32,
                _dt.float64]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", VALUE_DTYPES + [_dt.bool_], ids=str)
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_values_vs_naive(kind, dtype, case):
    if kind == "sum" and dtype == _dt.bool_:
        with pytest.raises(TypeError):
            KINDS[kind].abstract_eval(get_aval(np.ones(case[0], bool)), **_params(case))
        return
    rng = np.random.default_rng(0)
    x = _rand(rng, case[0], dtype)
    p = _params(case)
    got = KINDS[kind].bind(x, **p)
    raw = KINDS[kind].impl(x, **p)
    aval = KINDS[kind].abstract_eval(get_aval(x), **p)
    assert raw.shape == aval.shape and raw.dtype == aval.dtype == dtype
    assert got.shape == aval.shape and got.dtype == dtype
    exp = naive_reduce_window(x, kind, **p)
    tol = {_dt.float16: 1e-2, _dt.bfloat16: 2e-2}.get(dtype, 1e-6)
    if _dt.is_float(dtype):
        np.testing.assert_allclose(np.asarray(got, np.float64), exp, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(np.asarray(got), exp.astype(dtype))


def test_max_min_pad_values():
    x = np.array([3, 1, 2], np.int8)
    p = dict(window_dimensions=(2,), window_strides=(1,), padding=((3, 0),), base_dilation=(1,),
             window_dilation=(1,))
    assert np.asarray(W.reduce_window_max_p.bind(x, **p)).tolist()[:2] == [-128, -128]
    assert np.asarray(W.reduce_window_min_p.bind(x, **p)).tolist()[:2] == [127, 127]
    xf = np.array([3.0, 1.0], np.float32)
    assert np.asarray(lax.reduce_window_max(xf, (1,), (1,), ((1, 0),))).tolist()[0] == -np.inf
    assert np.asarray(lax.reduce_window_min(xf, (1,), (1,), ((1, 0),))).tolist()[0] == np.inf


def test_padding_strings_and_defaults():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    y = lax.reduce_window_sum(x, (3, 3), (2, 2), "SAME")
    assert y.shape == (2, 3)
    assert lax.reduce_window_sum(x, (3, 3), (2, 2), "VALID").shape == (1, 2)
    assert lax.reduce_window_sum(x, (2, 2)).shape == (3, 4)
    assert W.padtype_to_pads((5,), (3,), (2,), "SAME_LOWER") == ((1, 1),)
    assert W.padtype_to_pads((4,), (3,), (2,), "SAME") == ((0, 1),)
    assert W.padtype_to_pads((4,), (3,), (2,), "SAME_LOWER") == ((1, 0),)
    with pytest.raises(ValueError):
        lax.reduce_window_sum(x, (2, 2), (1, 1), "FULL")


def test_errors():
    x = np.ones((3, 4), np.float32)
    with pytest.raises(TypeError, match="reduce_window"):
        lax.reduce_window_sum(x, (2,))
    with pytest.raises(TypeError, match="positive"):
        lax.reduce_window_max(x, (2, 2), (0, 1))
    with pytest.raises(TypeError, match="dtype"):
        lax.reduce_window_max(np.ones(3, np.complex64), (2,))
    with pytest.raises(TypeError, match="reduce_window_sum"):
        W.reduce_window_sum_p.bind(x, window_dimensions=(2,), window_strides=(1,),
                                   padding=((0, 0),), base_dilation=(1,), window_dilation=(1,))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("select_prim", ["max", "min"])
def test_select_and_gather_scatter_vs_naive(select_prim, case):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 3, size=case[0]).astype(np.float32)  # many ties
    p = _params(case)
    out, sel = naive_select(x, select_prim, **p)
    t = rng.standard_normal(case[0]).astype(np.float32)
    g = W.select_and_gather_add_p.bind(t, x, select_prim=select_prim, **p)
    exp = np.zeros(out, np.float32)
    for o, src in sel.items():
        exp[o] = 0.0 if src is None else t[src]
    assert g.shape == out and g.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(g), exp)
    s = rng.standard_normal(out).astype(np.float32)
    sc = W.select_and_scatter_add_p.bind(s, x, select_prim=select_prim, **p)
    exps = np.zeros(x.shape, np.float64)
    for o, src in sel.items():
        if src is not None:
            exps[src] += s[o]
    assert sc.shape == x.shape and sc.dtype == np.float32
    np.testing.assert_allclose(np.asarray(sc), exps, rtol=1e-6, atol=1e-6)
    for prim, args in ((W.select_and_gather_add_p, (t, x)), (W.select_and_scatter_add_p, (s, x))):
        aval = prim.abstract_eval(*map(get_aval, args), select_prim=select_prim, **p)
        raw = prim.impl(*args, select_prim=select_prim, **p)
        assert raw.shape == aval.shape and raw.dtype == aval.dtype


@pytest.mark.parametrize("dtype", [_dt.float16, _dt.bfloat16, _dt.float64], ids=str)
def test_select_ops_dtypes(dtype):
    x = np.array([[1, 5, 2], [7, 3, 3]], dtype)
    t = np.array([[1, 2, 3], [4, 5, 6]], dtype)
    g = lax.select_and_gather_add(t, x, "max", (2, 2))
    assert g.dtype == dtype and np.asarray(g, np.float64).tolist() == [[4.0, 2.0]]
    s = lax.select_and_scatter_add(np.array([[1, 1]], dtype), x, "max", (2, 2))
    assert s.dtype == dtype
    assert np.asarray(s, np.float64).tolist() == [[0, 1, 0], [1, 0, 0]]


def test_max_gradient_ties_pick_first():
    x = np.ones((4, 4))
    g = ember.grad(lambda a: lax.reduce_sum(lax.reduce_window_max(a, (2, 2), (2, 2)), (0, 1)))(x)
    exp = np.zeros((4, 4))
    exp[::2, ::2] = 1
    np.testing.assert_array_equal(np.asarray(g), exp)
    g = ember.grad(lambda a: lax.reduce_sum(lax.reduce_window_min(a, (3,), (1,)), (0,)))(np.ones(5))
    np.testing.assert_array_equal(np.asarray(g), [1, 1, 1, 0, 0])


def _grad_cases():
    # Windows always hold a real element, so max/min stay finite.
    return [c for c in CASES if 0 not in c[0] and c[0] != (2,) and c[0] != ()]


def _distinct(rng, shape):
    n = int(np.prod(shape))
    return (rng.permutation(n).astype(np.float64) / 3.0 + 0.1).reshape(shape)


@pytest.mark.parametrize("case", _grad_cases())
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_grads(kind, case):
    rng = np.random.default_rng(2)
    x = _distinct(rng, case[0])
    p = _params(case)
    if kind != "sum" and any(b > w for b, w in zip(p["base_dilation"], p["window_dimensions"])):
        pytest.skip("a window could hold only holes")
    check_grads(lambda a: KINDS[kind].bind(a, **p), (x,), order=2)


def test_grads_through_pooling_composite():
    rng = np.random.default_rng(3)
    x = _distinct(rng, (2, 6, 6))

    def f(a):
        m = lax.reduce_window_max(a, (1, 3, 3), (1, 2, 2), "SAME")
        s = lax.reduce_window_sum(lax.sin(a), (1, 2, 2), (1, 1, 1), ((0, 0), (1, 0), (0, 1)))
        return lax.reduce_sum(lax.mul(m, m), (0, 1, 2)), s
    check_grads(f, (x,), order=2)


@pytest.mark.parametrize("case", CASES)
def test_sum_transpose_dot_product(case):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(case[0])
    p = _params(case)
    y = np.asarray(W.reduce_window_sum_p.bind(x, **p))
    ct = rng.standard_normal(y.shape)
    (tx,) = W.reduce_window_sum_p.transpose(ct, UndefinedPrimal(get_aval(x)), **p)
    assert np.shape(tx) == x.shape
    np.testing.assert_allclose(np.sum(np.asarray(tx) * x), np.sum(ct * y), atol=1e-10)


@pytest.mark.parametrize("case", CASES)
def test_select_transposes_dot_product(case):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 3, size=case[0]).astype(np.float64)
    p = dict(_params(case), select_prim="max")
    t = rng.standard_normal(case[0])
    g = np.asarray(W.select_and_gather_add_p.bind(t, x, **p))
    ct = rng.standard_normal(g.shape)
    tt, none = W.select_and_gather_add_p.transpose(ct, UndefinedPrimal(get_aval(t)), x, **p)
    assert none is None
    np.testing.assert_allclose(np.sum(np.asarray(tt) * t), np.sum(ct * g), atol=1e-10)
    s = rng.standard_normal(g.shape)
    sc = np.asarray(W.select_and_scatter_add_p.bind(s, x, **p))
    ct2 = rng.standard_normal(sc.shape)
    ts, _ = W.select_and_scatter_add_p.transpose(ct2, UndefinedPrimal(get_aval(s)), x, **p)
    np.testing.assert_allclose(np.sum(np.asarray(ts) * s), np.sum(ct2 * sc), atol=1e-10)


def test_staged_graphs_typecheck():
    x = np.ones((2, 5, 6), np.float32)

    def f(a):
        m = lax.reduce_window_max(a, (1, 2, 3), (1, 2, 1), "SAME", window_dilation=(1, 1, 2))
        n = lax.reduce_window_min(a, (1, 2, 2), base_dilation=(1, 2, 1))
        s = lax.reduce_window_sum(a, (2, 2, 2), (1, 1, 2), ((0, 0), (-1, 1), (2, 0)))
        return lax.reduce_sum(m, (0, 1, 2)) + lax.reduce_sum(n, (0, 1, 2)) + lax.reduce_sum(s, (0, 1, 2))
    typecheck(ember.make_graph(f)(x))
    g = ember.make_graph(ember.grad(f))(x)
    typecheck(g)
    names = {e.prim.name for e in g.equations}
    assert {"select_and_scatter_add", "reduce_window_sum"} <= names
    h = ember.make_graph(lambda a, t: ember.jvp(ember.grad(f), (a,), (t,)))(x, x)
    typecheck(h)
    typecheck(ember.make_graph(ember.vmap(ember.grad(f)))(np.ones((3, 2, 5, 6), np.float32)))


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_vmap(kind, axis):
    rng = np.random.default_rng(6)
    shape = [5, 6]
    shape.insert(axis, 3)
    x = rng.standard_normal(shape)
    f = lambda a: WRAPPERS[kind](a, (2, 3), (2, 1), ((1, 0), (0, 2)), (1, 2), (2, 1))  # noqa: E731
    check_vmap(f, (x,), in_axes=axis)


@pytest.mark.parametrize("axes", [(0, 0), (1, 0), (None, 1), (1, None), (2, 2)])
@pytest.mark.parametrize("select_prim", ["max", "min"])
def test_vmap_select_ops(select_prim, axes):
    rng = np.random.default_rng(7)

    def batched(shape, ax):
        if ax is None:
            return rng.standard_normal(shape)
        s = list(shape)
        s.insert(ax, 3)
        return rng.standard_normal(s)
    kw = dict(window_dimensions=(2, 2), window_strides=(1, 2), padding="SAME")
    x = batched((4, 5), axes[1])
    t = batched((4, 5), axes[0])
    check_vmap(lambda a, b: lax.select_and_gather_add(a, b, select_prim, **kw), (t, x),
               in_axes=axes)
    s = batched((4, 3), axes[0])
    check_vmap(lambda a, b: lax.select_and_scatter_add(a, b, select_prim, **kw), (s, x),
               in_axes=axes)


def test_vmap_of_grad_of_maxpool():
    rng = np.random.default_rng(8)
    xs = _distinct(rng, (3, 4, 6))
    f = ember.grad(lambda a: lax.reduce_sum(lax.reduce_window_max(a, (2, 2), (2, 2)), (0, 1)))
    check_vmap(f, (xs,), in_axes=0)


@st.composite
def _window_problems(draw):
    nd = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(0, 5)) for _ in range(nd))
    wd = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    ws = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    pad = tuple((draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(nd))
    bd = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    rd = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    return shape, wd, ws, pad, bd, rd


@settings(max_examples=20, deadline=None)
@given(_window_problems(), st.sampled_from(["sum", "max", "min"]),
       st.sampled_from([_dt.int32, _dt.float32, _dt.float64]))
def test_hypothesis_vs_naive(case, kind, dtype):
    rng = np.random.default_rng(9)
    x = _rand(rng, case[0], dtype)
    p = _params(case)
    got = np.asarray(KINDS[kind].bind(x, **p))
    exp = naive_reduce_window(x, kind, **p)
    assert got.shape == exp.shape and got.dtype == dtype
    np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64), rtol=1e-5, atol=1e-5)
    if dtype == _dt.float64:
        ct = rng.standard_normal(exp.shape)
        if kind == "sum":
            (tx,) = W.reduce_window_sum_p.transpose(ct, UndefinedPrimal(get_aval(x)), **p)
            np.testing.assert_allclose(np.sum(np.asarray(tx) * x), np.sum(ct * exp), atol=1e-9)
        else:
            out, sel = naive_select(x, kind, **p)
            sc = np.asarray(W.select_and_scatter_add_p.bind(ct, x, select_prim=kind, **p))
            exps = np.zeros(x.shape)
            for o, src in sel.items():
                if src is not None:
                    exps[src] += ct[o]
            np.testing.assert_allclose(sc, exps, atol=1e-12)


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_large_windows_vs_naive(kind):
    """Windows of more than 64 offsets take the sliding-view path."""
    rng = np.random.default_rng(10)
    x = rng.integers(0, 4, size=(10, 12)).astype(np.float64)
    p = dict(window_dimensions=(9, 9), window_strides=(1, 3), padding=((1, 0), (2, 1)),
             base_dilation=(1, 1), window_dilation=(1, 1))
    np.testing.assert_allclose(np.asarray(KINDS[kind].bind(x, **p)),
                               naive_reduce_window(x, kind, **p))
    if kind != "sum":
        out, sel = naive_select(x, kind, **p)
        t = rng.standard_normal(x.shape)
        g = np.asarray(W.select_and_gather_add_p.bind(t, x, select_prim=kind, **p))
        np.testing.assert_array_equal(g, np.array([t[sel[o]] for o in np.ndindex(*out)]).reshape(out))


def test_nan_is_selected_like_numpy():
    x = np.array([1.0, np.nan, 3.0, 2.0])
    assert np.isnan(np.asarray(lax.reduce_window_max(x, (2,))).tolist()[:2]).all()
    t = np.array([10.0, 20.0, 30.0, 40.0])
    assert np.asarray(lax.select_and_gather_add(t, x, "max", (2,))).tolist() == [20.0, 20.0, 30.0]
    assert np.asarray(lax.select_and_gather_add(t, x, "min", (2,))).tolist() == [20.0, 20.0, 40.0]
