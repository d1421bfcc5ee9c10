"""Tests of conv_general_dilated and conv_transpose: values vs a naive direct-loop
convolution, abstract eval, staging, derivatives, transposes and vmap."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember import dtypes as _dt
from ember import lax
from ember.fx.core import UndefinedPrimal, get_aval
from ember.fx.ir import typecheck
from ember.fx.prims.conv import ConvDimensionNumbers, conv_dimension_numbers, conv_general_dilated_p
from ember.testing import check_grads, check_vmap


def naive_conv(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, dn, fg=1, bg=1):
    """Direct loops over the definition (canonical layouts inside)."""
    ls, rs, os_ = dn
    wide = lambda a: a.astype(np.float64) if a.dtype.kind == "f" or a.dtype == _dt.bfloat16 else a  # noqa
    x = np.transpose(wide(np.asarray(lhs)), ls)
    w = np.transpose(wide(np.asarray(rhs)), rs)
    n, c = x.shape[:2]
    o, i = w.shape[:2]
    nsp = x.ndim - 2
    ks = w.shape[2:]
    g = fg * bg
    nb = n // bg

    def value(b, ch, pos):
        src = []
        for j, p in enumerate(pos):
            q = p - padding[j][0]
            d = lhs_dilation[j]
            if q < 0 or q > (x.shape[2 + j] - 1) * d or q % d:
                return 0
            src.append(q // d)
        return x[(b, ch) + tuple(src)]

    sp = []
    for j in range(nsp):
        p = ((x.shape[2 + j] - 1) * lhs_dilation[j] + 1 if x.shape[2 + j] else 0) + sum(padding[j])
        e = (ks[j] - 1) * rhs_dilation[j] + 1
        sp.append(0 if p < e else (p - e) // strides[j] + 1)
    out = np.zeros((nb, o) + tuple(sp), np.result_type(x, w))
    for b, f in itertools.product(range(nb), range(o)):
        grp = f // (o // g)
        for pos in itertools.product(*[range(s) for s in sp]):
            acc = 0
            for ci in range(i):
                bi = grp * nb + b if bg > 1 else b
                ch = grp * i + ci if fg > 1 else ci
                for k in itertools.product(*[range(s) for s in ks]):
                    acc += value(bi, ch, [pos[j] * strides[j] + k[j] * rhs_dilation[j]
                                          for j in range(nsp)]) * w[(f, ci) + k]
            out[(b, f) + pos] = acc
    inv = [0] * len(os_)
    for a, p in enumerate(os_):
        inv[p] = a
    return np.transpose(out, inv)


def _canon(nd):
    s = tuple(range(nd))
    return ConvDimensionNumbers(s, s, s)


def _problem(lhs_c, rhs_c, strides, padding, ld, rd, fg=1, bg=1, dn=None):
    """lhs_c/rhs_c: canonical (N, C, spatial) / (O, I, spatial) shapes; dn permutes them."""
    nd = len(lhs_c)
    dn = dn or _canon(nd)
    lhs_shape = [0] * nd
    rhs_shape = [0] * nd
    for a in range(nd):
        lhs_shape[dn.lhs_spec[a]] = lhs_c[a]
        rhs_shape[dn.rhs_spec[a]] = rhs_c[a]
    return dict(lhs=tuple(lhs_shape), rhs=tuple(rhs_shape), strides=strides, padding=padding,
                ld=ld, rd=rd, fg=fg, bg=bg, dn=dn)


NHWC = conv_dimension_numbers((1,) * 4, (1,) * 4, ("NHWC", "HWIO", "NHWC"))
WEIRD = ConvDimensionNumbers((2, 0, 3, 1), (1, 3, 0, 2), (3, 1, 0, 2))
CASES = [
    _problem((2, 3, 7), (4, 3, 3), (1,), ((0, 0),), (1,), (1,)),
    _problem((2, 4, 7), (6, 2, 3), (2,), ((1, 2),), (1,), (2,), fg=2),
    _problem((4, 3, 5), (6, 3, 2), (1,), ((-1, 2),), (2,), (1,), bg=2),
    _problem((2, 2, 5, 4), (4, 2, 2, 3), (2, 1), ((1, 0), (2, 1)), (1, 2), (2, 1)),
    _problem((2, 6, 5, 5), (6, 1, 3, 3), (1, 2), ((1, 1), (1, 1)), (1, 1), (1, 1), fg=6),
    _problem((3, 2, 4, 5), (3, 2, 2, 2), (1, 1), ((0, 1), (1, 0)), (1, 1), (1, 2), dn=NHWC),
    _problem((2, 4, 5, 4), (4, 2, 3, 2), (2, 1), ((1, 1), (0, 1)), (2, 1), (1, 1), fg=2, dn=WEIRD),
    _problem((4, 2, 4, 3), (4, 2, 2, 2), (1, 2), ((0, 0), (1, 1)), (1, 1), (1, 1), bg=4, dn=WEIRD),
    _problem((1, 6, 4, 3, 3), (3, 2, 2, 1, 2), (1, 2, 1), ((0, 0), (1, 1), (0, 1)), (1, 1, 1),
             (1, 1, 2), fg=3),
    _problem((2, 2, 3), (3, 2, 5), (1,), ((0, 0),), (1,), (1,)),     # kernel > input: empty out
    _problem((0, 2, 5), (3, 2, 2), (1,), ((0, 0),), (1,), (1,)),     # empty batch
    _problem((2, 0, 5), (3, 0, 2), (1,), ((0, 0),), (1,), (1,)),     # no input features
    _problem((2, 2, 5), (0, 2, 2), (1,), ((0, 0),), (1,), (1,)),     # no output features
]
IDS = [f"case{i}" for i in range(len(CASES))]


def _rand(rng, shape, dtype):
    if _dt.is_integer(dtype):
        return rng.integers(-3, 4, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _conv(c, **kw):
    return lambda x, w: lax.conv_general_dilated(x, w, c["strides"], c["padding"], c["ld"], c["rd"],
                                                 c["dn"], c["fg"], c["bg"], **kw)


def _params(c):
    return dict(window_strides=c["strides"], padding=c["padding"], lhs_dilation=c["ld"],
                rhs_dilation=c["rd"], dimension_numbers=c["dn"], feature_group_count=c["fg"],
                batch_group_count=c["bg"], preferred_element_type=None)


@pytest.mark.parametrize("dtype", [_dt.int8, _dt.int32, _dt.float16, _dt.bfloat16, _dt.float32,
                                   _dt.float64], ids=str)
@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_values_vs_naive(c, dtype):
    rng = np.random.default_rng(0)
    x, w = _rand(rng, c["lhs"], dtype), _rand(rng, c["rhs"], dtype)
    got = _conv(c)(x, w)
    p = _params(c)
    aval = conv_general_dilated_p.abstract_eval(get_aval(x), get_aval(w), **p)
    raw = conv_general_dilated_p.impl(x, w, **p)
    assert raw.shape == aval.shape and raw.dtype == aval.dtype == dtype
    assert got.shape == aval.shape and got.dtype == dtype
    exp = naive_conv(x, w, c["strides"], c["padding"], c["ld"], c["rd"], c["dn"], c["fg"], c["bg"])
    assert exp.shape == got.shape
    if _dt.is_integer(dtype):
        np.testing.assert_array_equal(np.asarray(got), exp.astype(dtype))
    else:
        tol = {_dt.float16: 2e-2, _dt.bfloat16: 8e-2}.get(dtype, 1e-5)
        np.testing.assert_allclose(np.asarray(got, np.float64), exp, rtol=tol, atol=tol)


def test_preferred_element_type_and_half_accumulation():
    x = np.full((1, 1, 64), 100, np.int8)
    w = np.ones((1, 1, 64), np.int8)
    y = lax.conv_general_dilated(x, w, (1,), "VALID", preferred_element_type=np.int32)
    assert y.dtype == np.int32 and np.asarray(y).item() == 6400
    xh = np.ones((1, 1, 4096), np.float16)
    wh = np.ones((1, 1, 4096), np.float16)
    # float16 accumulation would stall at 2048.
    assert float(np.asarray(lax.conv_general_dilated(xh, wh, (1,), "VALID")).item()) == 4096.0
    yb = lax.conv_general_dilated(xh.astype(_dt.bfloat16), wh.astype(_dt.bfloat16), (1,), "VALID",
                                  preferred_element_type=np.float32)
    assert yb.dtype == np.float32 and np.asarray(yb).item() == 4096.0
    with pytest.raises(TypeError, match="same dtype"):
        lax.conv_general_dilated(xh, wh.astype(np.float32), (1,), "VALID")


def test_dimension_numbers_parsing():
    dn = conv_dimension_numbers((2, 8, 8, 3), (3, 3, 3, 16), ("NHWC", "HWIO", "NHWC"))
    assert dn == ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    assert hash(dn) == hash(ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2)))
    dn = conv_dimension_numbers((2, 3, 8), (4, 3, 2), None)
    assert dn == ((0, 1, 2),) * 3
    # Spatial letters are matched by name, in the kernel's order.
    dn = conv_dimension_numbers((1,) * 4, (1,) * 4, ("NWHC", "OIHW", "NCHW"))
    assert dn.lhs_spec == (0, 3, 2, 1) and dn.rhs_spec == (0, 1, 2, 3)
    assert conv_dimension_numbers((1,) * 3, (1,) * 3, ((0, 2, 1), (2, 1, 0), (0, 1, 2))) == \
        ConvDimensionNumbers((0, 2, 1), (2, 1, 0), (0, 1, 2))
    with pytest.raises(TypeError):
        conv_dimension_numbers((1,) * 4, (1,) * 4, ("NCHW", "OIHW", "NCDW"))
    with pytest.raises(TypeError):
        conv_dimension_numbers((1,) * 4, (1,) * 4, ((0, 1, 2, 2), (0, 1, 2, 3), (0, 1, 2, 3)))


def test_string_layouts_match_canonical():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 6, 5))
    w = rng.standard_normal((4, 3, 3, 2))
    ref = lax.conv_general_dilated(x, w, (2, 1), "SAME", rhs_dilation=(1, 2))
    got = lax.conv_general_dilated(x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0), (2, 1), "SAME",
                                   rhs_dilation=(1, 2), dimension_numbers=("NHWC", "HWIO", "NHWC"))
    np.testing.assert_allclose(np.asarray(got).transpose(0, 3, 1, 2), np.asarray(ref), rtol=1e-12)


@pytest.mark.parametrize("n,k,s,d,mode,expect", [
    (5, 3, 1, 1, "SAME", (1, 1)), (5, 3, 2, 1, "SAME", (1, 1)), (6, 3, 2, 1, "SAME", (0, 1)),
    (5, 4, 1, 1, "SAME", (1, 2)), (5, 3, 1, 2, "SAME", (2, 2)), (5, 3, 1, 1, "VALID", (0, 0)),
    (5, 3, 2, 1, "SAME_LOWER", (1, 1)), (5, 4, 1, 1, "SAME_LOWER", (2, 1))])
def test_padding_strings(n, k, s, d, mode, expect):
    x = np.ones((1, 1, n), np.float32)
    w = np.ones((1, 1, k), np.float32)
    g = ember.make_graph(lambda a, b: lax.conv_general_dilated(a, b, (s,), mode, rhs_dilation=(d,)))(x, w)
    assert g.equations[0].params["padding"] == (expect,)
    if mode.startswith("SAME"):
        assert g.out_avals[0].shape[2] == -(-n // s)


def test_errors():
    x, w = np.ones((2, 4, 5), np.float32), np.ones((3, 2, 2), np.float32)
    with pytest.raises(TypeError, match="feature_group_count"):
        lax.conv_general_dilated(x, w, (1,), "VALID")
    with pytest.raises(TypeError, match="divisible"):
        lax.conv_general_dilated(x, w, (1,), "VALID", feature_group_count=2)
    with pytest.raises(TypeError, match="both"):
        lax.conv_general_dilated(x, np.ones((4, 1, 2), np.float32), (1,), "VALID",
                                 feature_group_count=2, batch_group_count=2)
    with pytest.raises(TypeError, match="spatial"):
        lax.conv_general_dilated(x, np.ones((4, 4, 2), np.float32), (1, 1), "VALID")
    with pytest.raises(TypeError, match="positive"):
        lax.conv_general_dilated(x, np.ones((4, 4, 2), np.float32), (0,), "VALID")
    with pytest.raises(TypeError, match="rank"):
        lax.conv_general_dilated(x, np.ones((4, 4), np.float32), (1,), "VALID")


@pytest.mark.parametrize("c", CASES[:9], ids=IDS[:9])
def test_grads(c):
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal(c["lhs"]), rng.standard_normal(c["rhs"])
    check_grads(_conv(c), (x, w), order=2 if c["lhs"][-1] < 6 else 1)


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_transpose_dot_product(c):
    """<ct, conv(x, w)> == <T_lhs(ct), x> == <T_rhs(ct), w>, rules called directly."""
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal(c["lhs"]), rng.standard_normal(c["rhs"])
    y = np.asarray(_conv(c)(x, w))
    ct = rng.standard_normal(y.shape)
    p = _params(c)
    tx, none = conv_general_dilated_p.transpose(ct, UndefinedPrimal(get_aval(x)), w, **p)
    assert none is None and np.shape(tx) == x.shape
    none, tw = conv_general_dilated_p.transpose(ct, x, UndefinedPrimal(get_aval(w)), **p)
    assert none is None and np.shape(tw) == w.shape
    ref = np.sum(ct * y)
    np.testing.assert_allclose(np.sum(np.asarray(tx) * x), ref, atol=1e-9)
    np.testing.assert_allclose(np.sum(np.asarray(tw) * w), ref, atol=1e-9)


def test_transpose_dtypes_with_preferred_element_type():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 2, 6)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3)).astype(np.float32)
    f = lambda a, b: lax.conv_general_dilated(a, b, (2,), "SAME",  # noqa: E731
                                              preferred_element_type=np.float64)
    out, f_vjp = ember.vjp(f, x, w)
    assert out.dtype == np.float64
    gx, gw = f_vjp(np.ones(out.shape))
    assert gx.dtype == np.float32 and gw.dtype == np.float32
    ex, ew = ember.vjp(lambda a, b: lax.conv_general_dilated(a, b, (2,), "SAME"),
                       x.astype(np.float64), w.astype(np.float64))[1](np.ones(out.shape))
    np.testing.assert_allclose(np.asarray(gx), np.asarray(ex), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(gw), np.asarray(ew), rtol=1e-5)


_STAGED = (0, 1, 2, 5, 6, 7)


@pytest.mark.parametrize("c", [CASES[i] for i in _STAGED], ids=[IDS[i] for i in _STAGED])
def test_staged_graphs_typecheck(c):
    x, w = np.ones(c["lhs"], np.float32), np.ones(c["rhs"], np.float32)
    f = _conv(c)
    typecheck(ember.make_graph(f)(x, w))
    loss = lambda a, b: lax.reduce_sum(lax.square(f(a, b)), tuple(range(len(c["lhs"]))))  # noqa
    typecheck(ember.make_graph(ember.grad(loss, argnums=(0, 1)))(x, w))
    typecheck(ember.make_graph(ember.vmap(f, in_axes=(0, 0)))(
        np.ones((2,) + c["lhs"], np.float32), np.ones((2,) + c["rhs"], np.float32)))


def _insert(rng, shape, ax, v=3):
    if ax is None:
        return rng.standard_normal(shape)
    s = list(shape)
    s.insert(ax, v)
    return rng.standard_normal(s)


@pytest.mark.parametrize("axes", [(0, None), (None, 0), (0, 0), (2, 1), (3, None), (None, 3)])
@pytest.mark.parametrize("c", [CASES[i] for i in (1, 2, 3, 6, 7)], ids=[IDS[i] for i in (1, 2, 3, 6, 7)])
def test_vmap(c, axes):
    rng = np.random.default_rng(5)
    if any(a is not None and a > len(c["lhs"]) for a in axes):
        pytest.skip("axis out of range")
    x, w = _insert(rng, c["lhs"], axes[0]), _insert(rng, c["rhs"], axes[1])
    check_vmap(_conv(c), (x, w), in_axes=axes, atol=1e-10)


def test_vmap_of_grad_per_example():
    rng = np.random.default_rng(6)
    xs = rng.standard_normal((3, 1, 2, 5, 5))
    w = rng.standard_normal((4, 2, 3, 3))

    def loss(w, x):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME")
        return lax.reduce_sum(lax.square(y), (0, 1, 2, 3))
    check_vmap(ember.grad(loss), (w, xs), in_axes=(None, 0), atol=1e-9)


# --- conv_transpose -------------------------------------------------------------------------

def naive_torch_conv_transpose(x, w, stride, padding, dilation, output_padding, groups=1):
    """PyTorch ConvTranspose1d by its scatter definition: x (N, Cin, L), w (Cin, Cout/g, K)."""
    n, cin, length = x.shape
    _, coutg, k = w.shape
    lout = (length - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1
    out = np.zeros((n, coutg * groups, lout))
    cing = cin // groups
    for b, ci, i, kk in itertools.product(range(n), range(cin), range(length), range(k)):
        pos = i * stride - padding + kk * dilation
        if 0 <= pos < lout:
            gi = ci // cing
            out[b, gi * coutg:(gi + 1) * coutg, pos] += x[b, ci, i] * w[ci, :, kk]
    return out


@pytest.mark.parametrize("stride,padding,dilation,output_padding", [
    (1, 0, 1, 0), (2, 1, 1, 1), (3, 2, 2, 0), (2, 0, 1, 1)])
def test_conv_transpose_matches_pytorch_semantics(stride, padding, dilation, output_padding):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 5))
    w = rng.standard_normal((3, 4, 3))
    k = 3
    pad = dilation * (k - 1) - padding
    got = lax.conv_transpose(x, w, (stride,), ((pad, pad + output_padding),), rhs_dilation=(dilation,),
                             dimension_numbers=("NCH", "OIH", "NCH"), transpose_kernel=True)
    exp = naive_torch_conv_transpose(x, w, stride, padding, dilation, output_padding)
    np.testing.assert_allclose(np.asarray(got), exp, rtol=1e-10, atol=1e-10)


def test_conv_transpose_is_conv_gradient():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 7, 6, 3))                 # NHWC
    w = rng.standard_normal((3, 2, 3, 5))                 # HWIO of the forward conv
    dn = ("NHWC", "HWIO", "NHWC")
    fwd = lambda a: lax.conv_general_dilated(a, w, (2, 2), "VALID", dimension_numbers=dn)  # noqa
    y, f_vjp = ember.vjp(fwd, x)
    ct = rng.standard_normal(y.shape)
    (gx,) = f_vjp(ct)
    got = lax.conv_transpose(ct, w, (2, 2), "VALID", dimension_numbers=dn, transpose_kernel=True)
    # VALID transposed output is (in-1)*s + max(k, s): here exactly the forward input size.
    g = np.asarray(got)
    assert g.shape == (2, 7, 6, 3)
    np.testing.assert_allclose(g, np.asarray(gx), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("n,k,s", [(4, 3, 2), (5, 2, 2), (3, 4, 1), (3, 1, 3)])
def test_conv_transpose_string_padding_shapes(n, k, s):
    x = np.ones((1, n, 2), np.float32)     # default layout: N, spatial, C / spatial, I, O
    w = np.ones((k, 2, 3), np.float32)
    assert lax.conv_transpose(x, w, (s,), "SAME").shape == (1, n * s, 3)
    assert lax.conv_transpose(x, w, (s,), "VALID").shape == (1, (n - 1) * s + max(k, s), 3)
    check_grads(lambda a, b: lax.conv_transpose(a, b, (s,), "SAME"),
                (np.arange(n * 2.0).reshape(1, n, 2), np.linspace(-1, 1, k * 6).reshape(k, 2, 3)),
                order=1)


# --- hypothesis -----------------------------------------------------------------------------------

@st.composite
def _conv_problems(draw):
    nsp = draw(st.integers(1, 2))
    groups = draw(st.sampled_from([(1, 1), (2, 1), (1, 2)]))
    fg, bg = groups
    n = bg * draw(st.integers(0, 2))
    i = draw(st.integers(1, 2))
    o = fg * bg * draw(st.integers(1, 2))
    xs = tuple(draw(st.integers(1, 5)) for _ in range(nsp))
    ks = tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    strides = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    ld = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    rd = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    pad = tuple((draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(nsp))
    nd = nsp + 2
    dn = ConvDimensionNumbers(*(tuple(draw(st.permutations(range(nd)))) for _ in range(3)))
    return _problem((n, i * fg, *xs), (o, i, *ks), strides, pad, ld, rd, fg, bg, dn)


@settings(max_examples=20, deadline=None)
@given(_conv_problems())
def test_hypothesis_vs_naive_and_transposes(c):
    rng = np.random.default_rng(9)
    x, w = rng.standard_normal(c["lhs"]), rng.standard_normal(c["rhs"])
    y = np.asarray(_conv(c)(x, w))
    exp = naive_conv(x, w, c["strides"], c["padding"], c["ld"], c["rd"], c["dn"], c["fg"], c["bg"])
    assert y.shape == exp.shape
    np.testing.assert_allclose(y, exp, rtol=1e-9, atol=1e-9)
    ct = rng.standard_normal(y.shape)
    p = _params(c)
    tx, _ = conv_general_dilated_p.transpose(ct, UndefinedPrimal(get_aval(x)), w, **p)
    _, tw = conv_general_dilated_p.transpose(ct, x, UndefinedPrimal(get_aval(w)), **p)
    np.testing.assert_allclose(np.sum(np.asarray(tx) * x), np.sum(ct * y), atol=1e-8)
    np.testing.assert_allclose(np.sum(np.asarray(tw) * w), np.sum(ct * y), atol=1e-8)
