"""Tests of gather and the scatter family: values vs numpy and vs a loop-by-loop
reference of the XLA semantics, abstract eval, errors, modes, derivatives,
transposes and batching."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import lax
from ember.fx.core import UndefinedPrimal, get_aval
from ember.fx.ir import typecheck
from ember.fx.prims import indexing as I
from ember.lax import GatherDimensionNumbers as GDN
from ember.lax import ScatterDimensionNumbers as SDN
from ember.testing import check_grads, check_vmap

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, F16, BF16, np.float32, np.float64,
          np.complex64]
IDX_DTYPES = [np.int8, np.uint8, np.int32, np.int64]
SMALL = settings(max_examples=25, deadline=None)
SCATTERS = ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"]


def rand(rng, shape, dtype=np.float64):
    d = np.dtype(dtype)
    if d == np.bool_:
        x = rng.random(shape) < 0.5
    elif d.kind in "iu":
        x = rng.integers(0 if d.kind == "u" else -5, 6, shape)
    elif d.kind == "c":
        x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    else:
        x = rng.standard_normal(shape)
    return np.asarray(x).astype(d)


def run(prim, *args, **params):
    """Bind eagerly; the impl's result must match abstract_eval exactly."""
    want = prim.abstract_eval(*[get_aval(a) for a in args], **params)
    raw = prim.impl(*args, **params)
    assert raw.shape == want.shape and raw.dtype == want.dtype, (prim, raw.shape, raw.dtype, want)
    out = prim.bind(*args, **params)
    assert out.shape == want.shape and out.dtype == want.dtype
    return np.asarray(out)


def gparams(dn, slice_sizes, mode="fill", fill_value=None):
    return {"dimension_numbers": dn, "slice_sizes": tuple(slice_sizes), "mode": mode,
            "fill_value": fill_value, "indices_are_sorted": False, "unique_indices": False}


def sparams(dn, mode="drop", unique=False):
    return {"dimension_numbers": dn, "mode": mode, "indices_are_sorted": False, "unique_indices": unique}


# --- loop-by-loop references of the XLA semantics ------------------------------------------

def _start(op_shape, vec, index_map, obd, ibd, batch_index, sizes, mode):
    start = [0] * len(op_shape)
    for k, d in enumerate(index_map):
        start[d] = int(vec[k])
    inb = all(0 <= start[d] <= op_shape[d] - sizes[d] for d in index_map)
    if mode == "clip" or mode == "promise_in_bounds":
        for d in index_map:
            start[d] = min(max(start[d], 0), op_shape[d] - sizes[d])
    for a, b in zip(obd, ibd):
        start[a] = batch_index[b]
    return start, inb


def ref_gather(op, idx, dn, slice_sizes, mode="fill", fill=0):
    nb = idx.ndim - 1
    wdims = [d for d in range(op.ndim) if d not in dn.collapsed_slice_dims + dn.operand_batching_dims]
    out_rank = nb + len(wdims)
    bs, ws = iter(idx.shape[:-1]), iter(slice_sizes[d] for d in wdims)
    out_shape = tuple(next(ws) if p in dn.offset_dims else next(bs) for p in range(out_rank))
    out = np.zeros(out_shape, op.dtype)
    for oi in np.ndindex(*out_shape):
        g = [oi[p] for p in range(out_rank) if p not in dn.offset_dims]
        w = [oi[p] for p in dn.offset_dims]
        start, inb = _start(op.shape, idx[tuple(g)], dn.start_index_map, dn.operand_batching_dims,
                            dn.start_indices_batching_dims, g, slice_sizes, mode)
        if mode == "fill" and not inb:
            out[oi] = fill
            continue
        pos = list(start)
        for j, d in enumerate(wdims):
            pos[d] += w[j]
        out[oi] = op[tuple(pos)]
    return out


def ref_scatter(kind, op, idx, upd, dn, mode="drop"):
    out = np.array(op, dtype=np.float32 if op.dtype in (F16, BF16) else op.dtype)
    nb = idx.ndim - 1
    wdims = [d for d in range(op.ndim) if d not in dn.inserted_window_dims + dn.operand_batching_dims]
    sdims = [p for p in range(upd.ndim) if p not in dn.update_window_dims]
    sizes = [1] * op.ndim
    for p, d in zip(dn.update_window_dims, wdims):
        sizes[d] = upd.shape[p]
    bshape = idx.shape[:-1]
    wshape = tuple(upd.shape[p] for p in dn.update_window_dims)
    # Row-major over (scatter dims, window dims): the documented order for duplicates.
    for bw in np.ndindex(*(tuple(bshape) + wshape)):
        g, w = bw[:nb], bw[nb:]
        ui = [0] * upd.ndim
        for p, v in zip(sdims, g):
            ui[p] = v
        for p, v in zip(dn.update_window_dims, w):
            ui[p] = v
        start, inb = _start(op.shape, idx[tuple(g)], dn.scatter_dims_to_operand_dims,
                            dn.operand_batching_dims, dn.scatter_indices_batching_dims, g, sizes,
                            "clip" if mode == "clip" else "drop")
        if mode != "clip" and not inb:
            continue
        pos = list(start)
        for j, d in enumerate(wdims):
            pos[d] += w[j]
        pos = tuple(pos)
        v = upd[tuple(ui)]
        if kind == "scatter":
            out[pos] = v
        elif kind == "scatter_add":
            out[pos] = out[pos] + v if out.dtype != np.bool_ else out[pos] | v
        elif kind == "scatter_mul":
            out[pos] = out[pos] * v if out.dtype != np.bool_ else out[pos] & v
        elif kind == "scatter_min":
            out[pos] = min(out[pos], v)
        else:
            out[pos] = max(out[pos], v)
    return out.astype(op.dtype)


# --- random valid dimension numbers --------------------------------------------------------

@st.composite
def gather_case(draw, max_rank=3):
    r = draw(st.integers(0, max_rank))
    op_shape = tuple(draw(st.integers(0, 4)) for _ in range(r))
    roles = []
    for n in op_shape:
        choices = ["window"] + (["collapsed", "batch"] if n >= 1 else [])
        roles.append(draw(st.sampled_from(choices)))
    obd = tuple(d for d in range(r) if roles[d] == "batch")
    collapsed = tuple(d for d in range(r) if roles[d] == "collapsed")
    wdims = [d for d in range(r) if roles[d] == "window"]
    # Every collapsed dim is indexed; window dims may be.
    mapped = list(collapsed) + [d for d in wdims if draw(st.booleans())]
    index_map = tuple(draw(st.permutations(mapped))) if mapped else ()
    n_extra = draw(st.integers(0, 2))
    nb = len(obd) + n_extra
    order = draw(st.permutations(list(range(nb)))) if nb else []
    ibd = tuple(order[:len(obd)])
    bshape = [0] * nb
    for a, b in zip(obd, ibd):
        bshape[b] = op_shape[a]
    for b in order[len(obd):]:
        bshape[b] = draw(st.integers(0, 3))
    slice_sizes = tuple(draw(st.integers(0, op_shape[d])) if roles[d] == "window" else 1 for d in range(r))
    out_rank = nb + len(wdims)
    offset = tuple(sorted(draw(st.permutations(list(range(out_rank))))[:len(wdims)])) if out_rank else ()
    dn = GDN(offset_dims=offset, collapsed_slice_dims=collapsed, start_index_map=index_map,
             operand_batching_dims=obd, start_indices_batching_dims=ibd)
    idx_dtype = draw(st.sampled_from(IDX_DTYPES))
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    cols = []
    for d in index_map:
        lo = 0 if np.dtype(idx_dtype).kind == "u" else -2
        cols.append(rng.integers(lo, op_shape[d] + 2, tuple(bshape)))
    idx = (np.stack(cols, -1) if cols else np.zeros(tuple(bshape) + (0,), np.int64)).astype(idx_dtype)
    return op_shape, idx, dn, slice_sizes, seed


def scatter_from_gather(case):
    """A scatter case with the same index structure as a gather case (updates have the
    gather's output shape)."""
    op_shape, idx, dn, slice_sizes, seed = case
    return op_shape, idx, I._scatter_dn_of(dn), slice_sizes, seed


def gather_out_shape(op_shape, idx, dn, slice_sizes):
    return I._gather_abstract(get_aval(np.zeros(op_shape)), get_aval(idx), **gparams(dn, slice_sizes)).shape


# --- gather values -------------------------------------------------------------------------

@SMALL
@given(case=gather_case(), mode=st.sampled_from(["fill", "clip"]), dtype=st.sampled_from(DTYPES))
def test_gather_vs_reference_hypothesis(case, mode, dtype):
    op_shape, idx, dn, slice_sizes, seed = case
    op = rand(np.random.default_rng(seed), op_shape, dtype)
    fill = None if dtype in (np.bool_, np.uint8) or not seed % 2 else 3
    got = run(I.gather_p, op, idx, **gparams(dn, slice_sizes, mode, fill))
    want = ref_gather(op, idx, dn, slice_sizes, mode, 0 if fill is None else fill)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_numpy_patterns(dtype):
    rng = np.random.default_rng(0)
    x = rand(rng, (5, 4, 3), dtype)
    # x[i] with i of shape (2, 3): take along axis 0.
    i = rng.integers(0, 5, (2, 3))
    dn = GDN(offset_dims=(2, 3), collapsed_slice_dims=(0,), start_index_map=(0,))
    np.testing.assert_array_equal(lax.gather(x, i[..., None], dn, (1, 4, 3)), x[i])
    np.testing.assert_array_equal(lax.gather(x, i[..., None], dn, (1, 4, 3), "clip"), np.take(x, i, 0))
    # x[:, j]: offset dims around the batch dims.
    j = rng.integers(0, 4, (6,))
    dn = GDN(offset_dims=(0, 2), collapsed_slice_dims=(1,), start_index_map=(1,))
    np.testing.assert_array_equal(lax.gather(x, j[:, None], dn, (5, 1, 3)), x[:, j])
    # x[a, b, c]: point gathers.
    pts = np.stack([rng.integers(0, n, 7) for n in x.shape], -1)
    dn = GDN(offset_dims=(), collapsed_slice_dims=(0, 1, 2), start_index_map=(0, 1, 2))
    np.testing.assert_array_equal(lax.gather(x, pts, dn, (1, 1, 1)), x[pts[:, 0], pts[:, 1], pts[:, 2]])
    # take_along_axis through batching dims.
    k = rng.integers(0, 4, (5, 2, 3))
    dn = GDN(offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,),
             operand_batching_dims=(0, 2), start_indices_batching_dims=(0, 2))
    np.testing.assert_array_equal(lax.gather(x, k[..., None], dn, (1, 1, 1)),
                                  np.take_along_axis(x, k, 1))


def test_gather_modes_out_of_bounds():
    x = np.arange(10.0).reshape(5, 2)
    dn = GDN(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0,))
    i = np.array([[-1], [0], [3], [4], [9]])
    assert lax.gather(x, i, dn, (2, 2)).tolist() == [[[0, 0], [0, 0]], [[0, 1], [2, 3]],
                                                     [[6, 7], [8, 9]], [[0, 0], [0, 0]],
                                                     [[0, 0], [0, 0]]]
    filled = np.asarray(lax.gather(x, i, dn, (2, 2), mode="fill", fill_value=np.nan))
    assert np.isnan(filled[[0, 3, 4]]).all() and not np.isnan(filled[[1, 2]]).any()
    np.testing.assert_array_equal(lax.gather(x, i, dn, (2, 2), mode="clip"),
                                  [x[0:2], x[0:2], x[3:5], x[3:5], x[3:5]])
    np.testing.assert_array_equal(lax.gather(x, i, dn, (2, 2), mode="promise_in_bounds"),
                                  lax.gather(x, i, dn, (2, 2), mode="clip"))
    assert lax.gather(x, i, dn, (2, 2), mode="drop").tolist() == lax.gather(x, i, dn, (2, 2)).tolist()
    with pytest.raises(ValueError, match="mode"):
        lax.gather(x, i, dn, (2, 2), mode="wrap")


def test_gather_empty_and_scalar():
    dn = GDN(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    assert run(I.gather_p, np.zeros(3), np.zeros((0, 1), np.int32), **gparams(dn, (1,))).shape == (0,)
    dn0 = GDN(offset_dims=(), collapsed_slice_dims=(), start_index_map=())
    np.testing.assert_array_equal(run(I.gather_p, np.float32(2.5), np.zeros((3, 0), np.int32),
                                      **gparams(dn0, ())), [2.5] * 3)
    dnw = GDN(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,))
    assert run(I.gather_p, np.zeros(0), np.zeros((2, 1), np.int32), **gparams(dnw, (0,))).shape == (2, 0)


def test_gather_errors():
    x = np.zeros((3, 4), np.float32)
    dn = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    i = np.zeros((2, 1), np.int32)
    with pytest.raises(IndexError, match=r"\(3, 4\)"):
        lax.gather(x, i, dn, (1, 5))
    with pytest.raises(TypeError, match="integer"):
        lax.gather(x, i.astype(np.float32), dn, (1, 4))
    with pytest.raises(TypeError, match="last dimension"):
        lax.gather(x, np.zeros((2, 2), np.int32), dn, (1, 4))
    with pytest.raises(TypeError, match="slice size 1"):
        lax.gather(x, i, dn, (2, 4))
    with pytest.raises(IndexError, match=r"\(3, 4\)"):
        lax.gather(x, i, GDN((1,), (0,), (2,)), (1, 4))
    with pytest.raises(TypeError, match="offset_dims"):
        lax.gather(x, i, GDN((), (0,), (0,)), (1, 4))
    with pytest.raises(TypeError, match="GatherDimensionNumbers"):
        lax.gather(x, i, ((1,), (0,), (0,)), (1, 4))
    with pytest.raises(TypeError, match="differ in size"):
        lax.gather(x, np.zeros((4, 1), np.int32), GDN((), (1,), (1,), (0,), (0,)), (1, 1))


# --- scatter values ------------------------------------------------------------------------

@SMALL
@given(case=gather_case(), kind=st.sampled_from(SCATTERS), mode=st.sampled_from(["drop", "clip"]),
       dtype=st.sampled_from(DTYPES))
def test_scatter_vs_reference_hypothesis(case, kind, mode, dtype):
    if np.dtype(dtype).kind == "c" and kind in ("scatter_min", "scatter_max"):
        dtype = np.float32
    op_shape, idx, dn, slice_sizes, seed = scatter_from_gather(case)
    rng = np.random.default_rng(seed)
    op = rand(rng, op_shape, dtype)
    upd = rand(rng, gather_out_shape(op_shape, idx, I._gather_dn_of(dn), slice_sizes), dtype)
    got = run(getattr(I, kind + "_p"), op, idx, upd, **sparams(dn, mode))
    want = ref_scatter(kind, op, idx, upd, dn, mode)
    if np.dtype(dtype) in (F16, BF16):
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-2, atol=2e-2)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, F16, BF16, np.float32, np.float64, np.complex64])
def test_scatter_add_duplicates_accumulate_like_add_at(dtype):
    rng = np.random.default_rng(1)
    x = rand(rng, (6, 3), dtype)
    i = np.array([1, 4, 1, 1, 0, 4])
    u = rand(rng, (6, 3), dtype)
    dn = SDN(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    want = x.astype(np.float32) if x.dtype in (F16, BF16) else x.copy()
    np.add.at(want, i, u.astype(want.dtype))
    got = lax.scatter_add(x, i[:, None], u, dn)
    np.testing.assert_array_equal(got, want.astype(dtype))
    want = x.copy()
    want[i] = u   # numpy: the last duplicate wins, as documented here
    np.testing.assert_array_equal(lax.scatter(x, i[:, None], u, dn), want)
    if np.dtype(dtype).kind != "c":
        for f, uf in ((lax.scatter_min, np.minimum), (lax.scatter_max, np.maximum)):
            want = x.copy()
            uf.at(want, i, u)
            np.testing.assert_array_equal(f(x, i[:, None], u, dn), want)


def test_scatter_modes_out_of_bounds():
    x = np.zeros(5)
    dn = SDN(update_window_dims=(1,), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,))
    i = np.array([[-1], [4], [3], [1]])
    u = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    assert lax.scatter_add(x, i, u, dn).tolist() == [0, 7, 8, 5, 6]
    assert lax.scatter_add(x, i, u, dn, "fill").tolist() == [0, 7, 8, 5, 6]
    assert lax.scatter_add(x, i, u, dn, mode="clip").tolist() == [1, 9, 8, 8, 10]
    assert lax.scatter(x, i, u, dn, mode="clip").tolist() == [1, 7, 8, 5, 6]
    assert lax.scatter(x, i, u, dn, mode="promise_in_bounds").tolist() == [0, 7, 8, 5, 6]


def test_scatter_errors():
    x = np.zeros((3, 4), np.float32)
    dn = SDN(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    i = np.zeros((2, 1), np.int32)
    with pytest.raises(IndexError, match=r"\(3, 4\)"):
        lax.scatter_add(x, i, np.zeros((2, 5), np.float32), dn)
    with pytest.raises(TypeError, match="dtype"):
        lax.scatter_add(x, i, np.zeros((2, 4), np.float64), dn)
    with pytest.raises(TypeError, match="scatter dims"):
        lax.scatter_add(x, i, np.zeros((3, 4), np.float32), dn)
    with pytest.raises(TypeError, match="complex"):
        lax.scatter_max(x.astype(np.complex64), i, np.zeros((2, 4), np.complex64), dn)
    with pytest.raises(IndexError, match=r"\(3, 4\)"):
        lax.scatter(x, i, np.zeros((2, 4), np.float32), SDN((1,), (0,), (3,)))
    with pytest.raises(TypeError, match="update_window_dims"):
        lax.scatter(x, i, np.zeros((2, 4), np.float32), SDN((), (0,), (0,)))


# --- staged graphs typecheck ---------------------------------------------------------------

def test_graphs_typecheck():
    rng = np.random.default_rng(2)
    x, u = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    i = np.array([[1], [4], [1], [7]], np.int32)
    gdn = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    sdn = I._scatter_dn_of(gdn)

    def f(x, u):
        y = lax.gather(x, i, gdn, (1, 3))
        outs = [y]
        for name in SCATTERS:
            outs.append(getattr(lax, name)(x, i, u * y, sdn))
        return outs
    typecheck(ember.make_graph(f)(x, u))
    typecheck(ember.make_graph(lambda x, u: ember.jvp(f, (x, u), (x, u)))(x, u))
    typecheck(ember.make_graph(lambda x, u: ember.vjp(lambda a, b: f(a, b)[:4], x, u)[1](f(x, u)[:4]))(x, u))
    typecheck(ember.make_graph(ember.vmap(f, in_axes=(1, None)))(np.stack([x, x], 1), u))


# --- derivatives ---------------------------------------------------------------------------

GDN_ROWS = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
SDN_ROWS = I._scatter_dn_of(GDN_ROWS)
DUP = np.array([[3], [0], [3], [7], [-1]], np.int32)   # a duplicate and out-of-bounds rows
UNIQ = np.array([[3], [0], [2]], np.int32)


@pytest.mark.parametrize("mode", ["fill", "clip"])
def test_gather_grads(mode):
    x = np.random.default_rng(3).standard_normal((4, 5))
    check_grads(lambda x: lax.gather(x, DUP, GDN_ROWS, (1, 5), mode, fill_value=2.0), (x,), order=2)
    dn = GDN(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(1,))
    check_grads(lambda x: lax.gather(x, np.array([[3], [0], [1]]), dn, (4, 3), mode), (x,), order=2)


@pytest.mark.parametrize("kind", SCATTERS)
@pytest.mark.parametrize("mode", ["drop", "clip"])
def test_scatter_grads(kind, mode):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 5))
    u = rng.standard_normal((5, 5))
    f = getattr(lax, kind)
    check_grads(lambda x, u: f(x, DUP, u, SDN_ROWS, mode), (x, u), order=2)
    check_grads(lambda x, u: f(x, UNIQ, u, SDN_ROWS, mode, unique_indices=True), (x, u[:3]), order=2)


def test_scatter_mul_grads_with_zero_updates():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(4)
    dn = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    i = np.array([[1], [1], [2], [2], [2], [3]])
    # exact to every order, also where several zero updates meet at one position
    for zeros_at in ([], [0], [2], [0, 5], [2, 3], [2, 3, 4], [0, 1, 2, 3, 4, 5]):
        u = rng.standard_normal(6)
        u[zeros_at] = 0.0
        check_grads(lambda x, u: lax.scatter_mul(x, i, u, dn), (x, u), order=3)


def _scatter_mul_by_hand(x, idx, u):
    """x * (product of the updates at each position), written out update by update."""
    out = [x[p] for p in range(x.shape[0])]
    for k, p in enumerate(idx):
        if 0 <= p < x.shape[0]:
            out[p] = out[p] * u[k]
    return ember.numpy.stack(out)


@pytest.mark.parametrize("mode", ["drop", "clip"])
def test_scatter_mul_higher_derivatives_match_the_written_out_product(mode):
    # three zero updates meet at position 0, two at 2; index 7 is out of bounds
    idx = np.array([0, 2, 0, 0, 2, 1, 7, 2])
    u = np.array([0.0, 0.0, 1.5, 0.0, 0.0, -2.0, 3.0, 0.5])
    x = np.array([2.0, 3.0, -5.0, 7.0])
    dn = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    eff = idx if mode == "drop" else np.clip(idx, 0, 3)

    def f(u):
        return lax.scatter_mul(x, idx[:, None], u, dn, mode)

    def g(u):
        return _scatter_mul_by_hand(x, eff, u)

    for d in (ember.jacfwd, lambda h: ember.jacfwd(ember.jacrev(h)),
              lambda h: ember.jacrev(ember.jacfwd(ember.jacrev(h)))):
        np.testing.assert_array_equal(np.asarray(d(f)(u)), np.asarray(d(g)(u)))
    np.testing.assert_array_equal(np.asarray(ember.jit(ember.hessian(lambda v: f(v).sum()))(u)),
                                  np.asarray(ember.hessian(lambda v: g(v).sum())(u)))


def test_scatter_mul_second_derivatives_with_windows_and_zeros():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 3))
    u = rng.standard_normal((5, 3))
    u[[0, 1, 3], 1] = 0.0  # rows 0, 1 and 3 all land on row 2
    i = np.array([[2], [2], [0], [2], [1]])
    dn = SDN(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    check_grads(lambda x, u: lax.scatter_mul(x, i, u, dn), (x, u), order=3)
    check_vmap(lambda u: lax.scatter_mul(x, i, u, dn), (np.stack([u, u[::-1]]),))
    check_vmap(ember.grad(lambda u: lax.scatter_mul(x, i, u, dn).sum()),
               (np.stack([u, u[::-1]]),))


def test_scatter_max_min_ties_average_the_tangents():
    dn = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    x = np.array([1.0, 5.0, 0.0])
    i = np.array([[0], [0], [1], [2]])
    u = np.array([1.0, 1.0, 2.0, -1.0])
    tx, tu = np.array([3.0, 5.0, 7.0]), np.array([6.0, 9.0, 11.0, 13.0])
    _, t = ember.jvp(lambda a, b: lax.scatter_max(a, i, b, dn), (x, u), (tx, tu))
    # position 0: operand and two updates tie at 1 -> mean(3, 6, 9); 1: operand wins; 2: operand wins
    np.testing.assert_allclose(t, [6.0, 5.0, 7.0])
    _, t = ember.jvp(lambda a, b: lax.scatter_min(a, i, b, dn), (x, u), (tx, tu))
    np.testing.assert_allclose(t, [6.0, 11.0, 13.0])


@pytest.mark.parametrize("name", SCATTERS)
def test_integer_scatter_and_gather_tangents_are_zero(name):
    x = np.arange(4, dtype=np.int32)
    dn = SDN((), (0,), (0,))
    f0 = np.zeros(4, ember.dtypes.float0)
    _, t = ember.jvp(lambda a: getattr(lax, name)(a, np.array([[1]]), np.array([2], np.int32), dn),
                     (x,), (f0,))
    assert np.asarray(t).dtype == ember.dtypes.float0
    _, t = ember.jvp(lambda a: lax.gather(a, np.array([[1]]), GDN_ROWS, (1, 1)), (x[:, None],),
                     (f0[:, None],))
    assert np.asarray(t).dtype == ember.dtypes.float0


# --- transposes: <ct, f(x)> == <f^T(ct), x> ------------------------------------------------

def dot_product_test(f, xs, seed=0):
    rng = np.random.default_rng(seed)
    y = np.asarray(f(*xs))
    ct = rng.standard_normal(y.shape)
    cts = ember.linear_transpose(f, *xs)(ct)
    lhs = float(np.sum(ct * y))
    rhs = sum(float(np.sum(np.asarray(c) * x)) for c, x in zip(cts, xs))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-10)


@SMALL
@given(case=gather_case(), mode=st.sampled_from(["fill", "clip"]))
def test_gather_and_scatter_add_transposes_hypothesis(case, mode):
    op_shape, idx, dn, slice_sizes, seed = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(op_shape)
    dot_product_test(lambda v: lax.gather(v, idx, dn, slice_sizes, mode), [x])
    sdn = I._scatter_dn_of(dn)
    u = rng.standard_normal(gather_out_shape(op_shape, idx, dn, slice_sizes))
    smode = "drop" if mode == "fill" else mode
    dot_product_test(lambda v, w: lax.scatter_add(v, idx, w, sdn, smode), [x, u])
    dot_product_test(lambda v, w: lax.scatter(v, idx, w, sdn, smode), [x, u])
    dot_product_test(lambda v: lax.scatter_mul(v, idx, u, sdn, smode), [x])


def test_transpose_rules_directly():
    rng = np.random.default_rng(6)
    ct = rng.standard_normal((5, 5))
    ux = UndefinedPrimal(get_aval(np.zeros((4, 5))))
    (got, none) = I.gather_p.transpose(ct, ux, DUP, **gparams(GDN_ROWS, (1, 5)))
    want = np.zeros((4, 5))
    np.add.at(want, DUP[:3, 0], ct[:3])   # rows 7 and -1 are out of bounds: dropped
    np.testing.assert_array_equal(got, want)
    assert none is None
    uu = UndefinedPrimal(get_aval(np.zeros((5, 5))))
    (cx, _, cu) = I.scatter_p.transpose(ct[:4], ux, DUP, uu, **sparams(SDN_ROWS))
    # row 3 is written twice: only the later update (row 2) receives its cotangent
    want_u = np.stack([np.zeros(5), ct[0], ct[3], np.zeros(5), np.zeros(5)])
    np.testing.assert_array_equal(cu, want_u)
    want_x = ct[:4].copy()
    want_x[[0, 3]] = 0
    np.testing.assert_array_equal(cx, want_x)


# --- vmap ----------------------------------------------------------------------------------

@SMALL
@given(case=gather_case(max_rank=2), data=st.data())
def test_gather_vmap_hypothesis(case, data):
    op_shape, idx, dn, slice_sizes, seed = case
    rng = np.random.default_rng(seed)
    B = 2
    which = data.draw(st.sampled_from(["operand", "indices", "both"]))
    x = rng.standard_normal(op_shape)
    args, axes = [x, idx], [None, None]
    if which in ("operand", "both"):
        ax = data.draw(st.integers(0, len(op_shape)))
        args[0] = np.stack([x, x * 2 + 1], ax)
        axes[0] = ax
    if which in ("indices", "both"):
        ax = data.draw(st.integers(0, idx.ndim))
        args[1] = np.stack([idx, (idx[::-1] if idx.ndim > 1 else idx)], ax)
        axes[1] = ax
    mode = data.draw(st.sampled_from(["fill", "clip"]))
    check_vmap(lambda v, i: lax.gather(v, i, dn, slice_sizes, mode), tuple(args), in_axes=tuple(axes))
    del B


@SMALL
@given(case=gather_case(max_rank=2), data=st.data())
def test_scatter_vmap_hypothesis(case, data):
    op_shape, idx, dn, slice_sizes, seed = scatter_from_gather(case)
    rng = np.random.default_rng(seed)
    kind = data.draw(st.sampled_from(SCATTERS))
    x = rng.standard_normal(op_shape)
    u = rng.standard_normal(gather_out_shape(op_shape, idx, I._gather_dn_of(dn), slice_sizes))
    batched = data.draw(st.lists(st.booleans(), min_size=3, max_size=3).filter(any))
    args, axes = [x, idx, u], [None, None, None]
    for k, b in enumerate(batched):
        if b:
            a = args[k]
            ax = data.draw(st.integers(0, a.ndim))
            other = a[::-1] if a.ndim else a
            args[k] = np.stack([a, other if k == 1 else other * 2 - 1], ax)
            axes[k] = ax
    mode = data.draw(st.sampled_from(["drop", "clip"]))
    check_vmap(lambda v, i, w: getattr(lax, kind)(v, i, w, dn, mode), tuple(args), in_axes=tuple(axes))


def test_grad_of_vmap_and_vmap_of_grad():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 4, 5))
    i = np.array([[[1], [3]], [[0], [0]], [[2], [9]]], np.int32)
    u = rng.standard_normal((3, 2, 5))

    def per_example(v, k, w):
        g = lax.gather(v, k, GDN_ROWS, (1, 5))
        return lax.scatter_add(v, k, w * g, SDN_ROWS)
    f = ember.vmap(per_example, in_axes=(0, 0, 0))
    check_grads(lambda v, w: f(v, i, w), (x, u), order=2)

    def loss(v, k, w):
        y = per_example(v, k, w)
        return lax.reduce_sum(y * y, (0, 1))
    check_vmap(ember.grad(loss), (x, i, u), in_axes=(0, 0, 0))
    check_vmap(ember.grad(loss), (x[0], i, u), in_axes=(None, 0, 0))
    check_vmap(ember.vmap(per_example, in_axes=(None, 0, None)), (x, i, u[0]), in_axes=(0, None, None))
