"""ember.onnx.export: models checked with onnx.checker and run in onnxruntime, outputs
equal to ember's; unmapped primitives give errors naming the primitive and the line."""
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ember  # noqa: E402
import ember.numpy as enp  # noqa: E402
import ember.onnx as eo  # noqa: E402
from ember import lax, nn  # noqa: E402

RNG = np.random.default_rng(0)



def _load_example(name):
    """An examples/ script as a module, through the examples tests' loader."""
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
    from _examples import load
    return load(name)

def _f32(*shape):
    return enp.asarray(RNG.normal(size=shape).astype(np.float32))


def _run(fn, args, path=None, rtol=1e-4, atol=1e-5, **kw):
    model = eo.export(fn, args, path, **kw)
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString())
    feeds = {i.name: np.asarray(a) for i, a in zip(sess.get_inputs(), ember.tree.leaves(args))}
    got = sess.run(None, feeds)
    ref = ember.tree.leaves(fn(*args))
    assert len(got) == len(ref) > 0
    for g, r in zip(got, ref):
        assert g.shape == np.asarray(r).shape and g.dtype == np.asarray(r).dtype
        np.testing.assert_allclose(g, np.asarray(r), rtol=rtol, atol=atol)
    return model


def test_mlp_writes_file_and_names(tmp_path):
    mlp = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 3)).eval()
    p = tmp_path / "mlp.onnx"
    m = _run(mlp, (_f32(5, 4),), p, input_names=["pixels"], output_names=["logits"])
    assert p.exists() and onnx.load(str(p)).graph.input[0].name == "pixels"
    assert [o.name for o in m.graph.output] == ["logits"]
    assert {n.op_type for n in m.graph.node} >= {"MatMul"}
    assert len(m.graph.initializer) >= 4        # the parameters


def test_cnn_with_pooling():
    cnn = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(4, 4, 3, stride=1), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(4, 3)).eval()
    m = _run(cnn, (_f32(2, 2, 8, 8),))
    ops = {n.op_type for n in m.graph.node}
    assert {"Conv", "MaxPool", "AveragePool"} <= ops


def test_nhwc_conv_and_pool_transpose():
    x, w = _f32(1, 6, 6, 2), _f32(3, 3, 2, 4)
    _run(lambda x, w: lax.reduce_window_max(
        lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
        (1, 2, 2, 1), (1, 2, 2, 1), "VALID"), (x, w))


def _char_transformer():
    mod = _load_example("char_transformer")
    return mod.CharTransformer(24, 8, d_model=16, n_layer=2, n_head=2).eval()


def test_char_transformer_forward():
    model = _char_transformer()
    ids = enp.asarray(RNG.integers(0, 24, (2, 8)).astype(np.int32))
    m = _run(model, (ids,))
    assert {"Gather", "GatherND"} & {n.op_type for n in m.graph.node}


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_rnn(reverse):
    w, u = _f32(3, 3), _f32(2, 3)

    def rnn(xs, h0):
        def step(h, x):
            h = enp.tanh(h @ w + x @ u)
            return h, h * 2.0
        return ember.scan(step, h0, xs, reverse=reverse)
    m = _run(rnn, (_f32(5, 2), _f32(3)))
    assert any(n.op_type == "Scan" for n in m.graph.node)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond(sign):
    def f(x, y):
        return ember.cond(x.sum() > 0, lambda u, v: (u * 2.0 + v.sum(), v), lambda u, v: (-u, v * 3.0), x, y)
    m = _run(f, (sign * enp.ones(3), _f32(2)))
    assert any(n.op_type == "If" for n in m.graph.node)


@pytest.mark.parametrize("start", [1.0, 50.0])
def test_while_loop(start):
    w = _f32(2)

    def f(x, v):
        def body(c):
            return c[0] * 2.0, c[1] + w
        return lax.while_loop(lambda c: c[0] < 10.0 + w[0] * 0.0, body, (x, v))
    m = _run(f, (np.float32(start), _f32(2)))
    assert any(n.op_type == "Loop" for n in m.graph.node)


@pytest.mark.parametrize("opset", [17, 18])
def test_gather_scatter_and_shapes(opset):
    x = _f32(5, 5)
    idx = enp.asarray(np.array([3, 0, 4], np.int32))

    def f(x, idx):
        return (x[idx], x[:, idx], x.at[idx].add(1.0), x.at[idx].set(0.0), enp.take_along_axis(
            x, enp.argsort(x, axis=1), axis=1), enp.cumsum(x, axis=0), enp.pad(x, ((1, 0), (0, 2))),
            enp.concatenate([x, x[::-1]], axis=0), x.T.reshape(1, 25), enp.argmax(x, axis=1),
            enp.max(x, axis=0), enp.where(x > 0, x, 0.0), x.astype(np.int32), lax.top_k(x, 2)[0],
            lax.dynamic_slice(x, (idx[0], 1), (2, 2)), enp.all(x > -10, axis=1), enp.prod(x, axis=0))
    _run(f, (x, idx), opset=opset)


@pytest.mark.parametrize("opset", [17, 18])
def test_out_of_range_indices_fill_and_drop_as_in_ember(opset):
    # ONNX's GatherND/ScatterND clamp nothing and drop nothing: the export sends
    # out-of-range index vectors to a padded spare slot (fill value / sliced off);
    # a drop scatter that clamped instead would write the last row
    x = enp.asarray(np.arange(20, dtype=np.float32).reshape(5, 4))
    idx = enp.asarray(np.array([3, 7, -1, 0, -9], np.int32))

    def f(x, i):
        return (enp.take(x, i, axis=0), enp.take(x, i, axis=1), x.at[i].get(mode="fill", fill_value=-5.0),
                x.at[i].set(-1.0, mode="drop"), x.at[i].add(100.0, mode="drop"),
                x.at[i].multiply(2.0, mode="drop"), x.at[i].max(50.0, mode="drop"),
                lax.gather(x, i[:, None], lax.GatherDimensionNumbers((1,), (0,), (0,)), (1, 4), mode="fill"))
    model = eo.export(f, (x, idx), opset=opset)
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString())
    got = sess.run(None, {i.name: np.asarray(a) for i, a in zip(sess.get_inputs(), (x, idx))})
    want = [np.asarray(r) for r in ember.jit(f)(x, idx)]   # traced indices: fill / drop
    assert np.isnan(want[0][1]).all() and (want[3][4] == -1).all() and (want[3][3] == -1).all()
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@settings(max_examples=10, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3),
       st.sampled_from(["exp", "tanh", "logistic", "sqrt_abs", "square", "rsqrt_abs", "log1p_abs", "erf"]))
def test_elementwise_shapes(shape, op):
    f = {"exp": enp.exp, "tanh": enp.tanh, "logistic": lambda x: 1 / (1 + enp.exp(-x)),
         "sqrt_abs": lambda x: enp.sqrt(enp.abs(x)), "square": lambda x: x ** 2,
         "rsqrt_abs": lambda x: lax.rsqrt(enp.abs(x) + 1.0), "log1p_abs": lambda x: enp.log1p(enp.abs(x)),
         "erf": lax.erf}[op]
    _run(lambda x: f(x) + enp.sum(x, axis=-1, keepdims=True), (_f32(*shape),))


def test_unmapped_primitive_names_it_and_the_line():
    def f(x):
        return lax.cumprod(x, 0)   # the line the error must point at
    with pytest.raises(eo.OnnxExportError, match=r"primitive `cumprod`[\s\S]*test_onnx.py:\d+"):
        eo.export(f, (_f32(3),))
    with pytest.raises(eo.OnnxExportError, match="not a pooling"):
        eo.export(lambda x: lax.reduce_window_max(x, (2, 2), (1, 1), "VALID"), (_f32(4, 4),))
    with pytest.raises(eo.OnnxExportError, match="switch with 3 branches"):
        eo.export(lambda i, x: lax.switch(i, [lambda u: u, lambda u: -u, lambda u: u * 2.0], x), (1, _f32(2)))
    with pytest.raises(eo.OnnxExportError, match="input_names must be 1 distinct names"):
        eo.export(lambda x: x, (_f32(2),), input_names=["a", "b"])
