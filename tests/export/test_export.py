"""ember.export: the Exported object, the file format and its refusals, composition
with jit/vmap/grad, and symbolic dimensions."""
import hashlib
import json
import pickle
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember.export import ExportError, ShapeDtypeStruct, deserialize, export
from ember.export import _serialize
from ember.testing import check_grads, check_vmap


def _f(x, params):
    h = enp.tanh(x @ params["w"] + params["b"])
    return {"out": h, "norm": enp.sum(h * h)}


P = {"w": enp.asarray(np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)),
     "b": enp.asarray(np.linspace(-1, 1, 4).astype(np.float32))}
X = enp.asarray(np.random.default_rng(1).normal(size=(2, 3)).astype(np.float32))


def _close(a, b, **kw):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), **kw)


def test_exported_attributes_and_call():
    e = export(ember.jit(_f))(X, P)
    assert e.fun_name == "_f"
    assert e.in_tree == ember.tree.structure(([X, P], {}))
    assert e.out_tree == ember.tree.structure({"out": 0, "norm": 0})
    assert [a.shape for a in e.in_avals] == [(2, 3), (4,), (3, 4)]
    assert [(a.shape, a.dtype) for a in e.out_avals] == [((), np.float32), ((2, 4), np.float32)]
    assert not e.consts and e.graph.equations
    got, ref = e.call(X, P), _f(X, P)
    _close(got["out"], ref["out"], rtol=1e-6)
    _close(got["norm"], ref["norm"], rtol=1e-6)


def test_closed_over_values_become_consts():
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    e = export(lambda x: x @ w)(enp.ones((1, 2)))
    assert len(e.consts) == 1 and np.array_equal(e.consts[0], w)
    back = deserialize(e.serialize())
    _close(back.call(enp.ones((1, 2))), np.ones((1, 2)) @ w)


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_roundtrip_runs_on_backend(backend):
    back = deserialize(export(ember.jit(_f))(X, P).serialize()).on(backend)
    ref = _f(X, P)
    _close(back.call(X, P)["out"], ref["out"], rtol=1e-5, atol=1e-6)


def test_on_refuses_unlisted_platform():
    e = export(ember.jit(_f), platforms=["reference"])(X, P)
    assert e.backend == "reference"
    with pytest.raises(ExportError, match="exported for \\['reference'\\]"):
        e.on("cpu")
    from ember.backends.base import available_backends
    if "cuda" not in available_backends():
        with pytest.raises(ExportError, match="'cuda' backend is not available here"):
            export(_f)(X, P).on("cuda")
    with pytest.raises(ExportError, match="unknown platform"):
        export(_f, platforms=["tpu"])


def test_composes_with_jit_vmap_grad():
    back = deserialize(export(ember.jit(lambda x, w: enp.sum(enp.sin(x * w))))(X, 0.5).serialize())

    def orig(x, w):
        return enp.sum(enp.sin(x * w))
    _close(ember.jit(back.call)(X, 0.5), orig(X, 0.5), rtol=1e-6)
    _close(ember.grad(back.call)(X, 0.5), ember.grad(orig)(X, 0.5), rtol=1e-6)
    _close(ember.grad(back.call, argnums=1)(X, 0.5), ember.grad(orig, argnums=1)(X, 0.5), rtol=1e-5)
    check_vmap(lambda x: back.call(x, 0.5), (enp.stack([X, X * 2.0]),))
    x64 = export(lambda x: enp.sum(enp.sin(x) * x))(np.ones(3))
    check_grads(x64.call, (np.linspace(0.1, 1.0, 3),), order=2, modes=("fwd", "rev"))


def test_python_scalars_and_kwargs():
    e = export(lambda x, *, scale: x * scale)(enp.ones(2), scale=3.0)
    assert e.call(enp.ones(2), scale=2.0).tolist() == [2.0, 2.0]
    with pytest.raises(TypeError, match="structure"):
        e.call(enp.ones(2), 2.0)


def test_call_errors_name_argument_and_shapes():
    e = export(ember.jit(_f))(X, P)
    with pytest.raises(TypeError, match=r"argument `x` is float32\[2,4\] but the exported function takes float32\[2,3\]"):
        e.call(enp.ones((2, 4)), P)
    with pytest.raises(TypeError, match=r"argument `params\['b'\]` is float64\[4\]"):
        e.call(X, {"w": P["w"], "b": np.ones(4)})
    with pytest.raises(TypeError, match="structure"):
        e.call(X)


def test_with_vjp_checks_differentiability():
    e = export(ember.jit(lambda x: enp.sum(x ** 2)), with_vjp=True)(enp.ones(3))
    assert e.with_vjp and deserialize(e.serialize()).with_vjp

    @ember.custom_vjp
    def f(x):
        return x * 2.0
    f.defvjp(lambda x: (x * 2.0, None), lambda r, g: (g * 2.0,))
    # a custom_vjp function has no forward-mode rule, but reverse mode works: accepted
    export(lambda x: enp.sum(f(x)), with_vjp=True)(enp.ones(3))
    with pytest.raises(ExportError, match="cannot be differentiated"):
        export(lambda x: ember.lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x),
               with_vjp=True)(1.0)


# --- the file format ----------------------------------------------------------------

def _blob():
    return export(ember.jit(_f))(X, P).serialize()


def _rewrap(body_parts, version=(1, 0)):
    body = _serialize.MAGIC + struct.pack("<HH", *version)
    for b in body_parts:
        body += struct.pack("<Q", len(b)) + b
    return body + hashlib.sha256(body).digest()


def _sections(blob):
    pos, out = 12, []
    for _ in range(3):
        (n,) = struct.unpack_from("<Q", blob, pos)
        out.append(blob[pos + 8:pos + 8 + n])
        pos += 8 + n
    return out


def test_format_layout_and_header_schema():
    blob = _blob()
    assert blob[:8] == b"EMBEREXP" and struct.unpack_from("<HH", blob, 8) == (1, 0)
    header, text, consts = _sections(blob)
    h = json.loads(header)
    assert h["format"] == "ember.export" and h["fun_name"] == "_f"
    (args, kwargs) = h["in_tree"]["tuple"]
    assert kwargs == {"dict": []} and args["list"][0] == "*"
    assert sorted(args["list"][1]["dict"]) == [["b", "*"], ["w", "*"]]
    assert h["in_shapes"][0] == [[2, 3], "float32", False]
    assert text.decode().startswith("{ lambda ; a:f32[2,3]")
    assert b"pickle" not in blob and hashlib.sha256(blob[:-32]).digest() == blob[-32:]


def test_newer_major_version_is_refused():
    blob = _blob()
    newer = _rewrap(_sections(blob), version=(2, 0))
    with pytest.raises(ExportError, match="version 2.0, newer than this ember reads"):
        deserialize(newer)
    minor = _rewrap(_sections(blob), version=(1, 7))
    assert deserialize(minor).call(X, P)["out"].shape == (2, 4)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_truncated_or_tampered_files_are_refused(data):
    blob = _blob()
    if data.draw(st.booleans()):
        bad = blob[:data.draw(st.integers(0, len(blob) - 1))]
    else:
        i = data.draw(st.integers(0, len(blob) - 1))
        bad = blob[:i] + bytes([blob[i] ^ data.draw(st.integers(1, 255))]) + blob[i + 1:]
    with pytest.raises(ExportError, match="cannot deserialize"):
        deserialize(bad)


def test_consistent_but_malformed_sections_are_refused():
    header, text, consts = _sections(_blob())
    with pytest.raises(ExportError, match="not a graph|cannot read the IR text|not valid"):
        deserialize(_rewrap([header, text.replace(b"tanh", b"evil_op"), consts]))
    with pytest.raises(ExportError, match="not valid JSON"):
        deserialize(_rewrap([b"{nope", text, consts]))
    with pytest.raises(ExportError, match="malformed"):
        h = json.loads(header)
        h["in_tree"] = {"set": []}
        deserialize(_rewrap([json.dumps(h).encode(), text, consts]))


class _Boom:
    def __reduce__(self):
        return (pytest.fail, ("a pickle from an export file was executed",))


def test_a_file_embedding_a_pickle_is_refused_and_never_unpickled(monkeypatch):
    payload = pickle.dumps(_Boom(), protocol=4)
    header, text, consts = _sections(_blob())

    def no_unpickling(*a, **k):
        raise AssertionError("deserialize must never unpickle")
    monkeypatch.setattr(pickle, "loads", no_unpickling)
    monkeypatch.setattr(pickle, "load", no_unpickling)
    monkeypatch.setattr(pickle, "Unpickler", no_unpickling)
    for bad in (payload, _rewrap([payload, text, consts]), _rewrap([header, text, payload]),
                _rewrap([header, payload, consts])):
        with pytest.raises(ExportError, match="pickle"):
            deserialize(bad)
    with pytest.raises(TypeError, match="expected bytes"):
        deserialize("EMBEREXP")


def test_unsupported_pytree_nodes_are_refused():
    import collections
    Pt = collections.namedtuple("Pt", "x y")
    with pytest.raises(ExportError, match="namedtuple|Pt node"):
        export(lambda p: p.x + p.y)(Pt(enp.ones(2), enp.ones(2)))


def test_parse_is_checked_at_export_time():
    def policy(eq):
        return False
    f = ember.checkpoint(lambda x: enp.sin(x), policy=policy)
    with pytest.raises(ExportError, match="cannot carry"):
        export(f)(enp.ones(2))


# --- symbolic dimensions -------------------------------------------------------------

def _mlp(x, w1, w2):
    h = enp.maximum(x @ w1, 0.0)
    return enp.mean(h @ w2, axis=0), (h @ w2).reshape(-1)


W1 = enp.asarray(np.random.default_rng(2).normal(size=(6, 5)).astype(np.float32))
W2 = enp.asarray(np.random.default_rng(3).normal(size=(5, 3)).astype(np.float32))


@pytest.mark.parametrize("b", [1, 4, 9])
def test_symbolic_batch(b):
    e = deserialize(export(ember.jit(_mlp))(ShapeDtypeStruct(("b", 6), "float32"), W1, W2).serialize())
    assert e.in_avals[0].shape == ("b", 6)
    assert e.out_avals[0].shape == (3,) and e.out_avals[1].shape == ("3*b",)
    x = enp.asarray(np.random.default_rng(b).normal(size=(b, 6)).astype(np.float32))
    got, ref = e.call(x, W1, W2), _mlp(x, W1, W2)
    _close(got[0], ref[0], rtol=1e-5, atol=1e-6)
    _close(got[1], ref[1], rtol=1e-5, atol=1e-6)
    _close(ember.grad(lambda w: e.call(x, w, W2)[0].sum())(W1),
           ember.grad(lambda w: _mlp(x, w, W2)[0].sum())(W1), rtol=1e-4, atol=1e-6)


def test_symbolic_call_under_jit_and_vmap():
    e = deserialize(export(lambda x: enp.tanh(x) * x.shape[0])(ShapeDtypeStruct(("b", 2), "float32")).serialize())
    x = _f32_rows(4)
    _close(ember.jit(e.call)(x), np.tanh(np.asarray(x)) * 4, rtol=1e-6)
    check_vmap(e.call, (enp.stack([x, x * 0.5, -x]),))


def _f32_rows(b):
    return enp.asarray(np.random.default_rng(b).normal(size=(b, 2)).astype(np.float32))


def test_symbolic_sizes_are_checked_at_call():
    e = export(lambda x, y: x + y)(ShapeDtypeStruct(("b", 2), "float32"), ShapeDtypeStruct(("b", 2), "float32"))
    assert e.call(enp.ones((3, 2)), enp.ones((3, 2))).shape == (3, 2)
    with pytest.raises(TypeError, match=r"argument `y` is float32\[4,2\], so b = 4, but `x` gave b = 3"):
        e.call(enp.ones((3, 2)), enp.ones((4, 2)))
    with pytest.raises(TypeError, match=r"takes float32\[b,2\] \(axis 1 must be 2\)"):
        e.call(enp.ones((3, 3)), enp.ones((3, 3)))


def test_two_symbolic_dims():
    e = export(lambda x: enp.sum(x, axis=1) / x.shape[1])(ShapeDtypeStruct(("b", "t"), "float32"))
    x = np.random.default_rng(0).normal(size=(3, 7)).astype(np.float32)
    _close(deserialize(e.serialize()).call(x), x.mean(axis=1), rtol=1e-5)


def test_non_affine_symbolic_dims_are_refused():
    with pytest.raises(ExportError, match="symbolic"):
        export(lambda x: enp.zeros(x.shape[0] ** 2))(ShapeDtypeStruct(("b",), "float32"))
    with pytest.raises(ExportError, match="symbolic"):
        export(lambda x: x[:1] if x.shape[0] % 2 else x)(ShapeDtypeStruct(("b",), "float32"))
    with pytest.raises(ExportError, match="symbolic dimension is a name"):
        export(lambda x: x)(ShapeDtypeStruct(("2b",), "float32"))
