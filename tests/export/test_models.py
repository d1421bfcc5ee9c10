"""Export/deserialize round trips of whole models: outputs equal the original on the
reference and LLVM backends, and grad through the deserialized function equals grad
of the original."""
import pathlib

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn
from ember.export import deserialize, export

RNG = np.random.default_rng(0)
BACKENDS = ["cpu", "reference"]



def _load_example(name):
    """An examples/ script as a module, through the examples tests' loader."""
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
    from _examples import load
    return load(name)

def _f32(*shape):
    return enp.asarray(RNG.normal(size=shape).astype(np.float32))


def _close(a, b, rtol=1e-5, atol=1e-6):
    for x, y in zip(ember.tree.leaves(a), ember.tree.leaves(b)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


def _roundtrip(fn, args, loss_argnum=0):
    """deserialize(export(fn).serialize()) on each backend vs fn; grad of a scalar loss."""
    blob = export(ember.jit(fn))(*args).serialize()
    back = deserialize(blob)
    ref = fn(*args)
    for b in BACKENDS:
        _close(back.on(b).call(*args), ref)

    def loss(f):
        return lambda *a: sum(enp.sum(enp.asarray(o, dtype=np.float32) ** 2)
                              for o in ember.tree.leaves(f(*a)) if ember.dtypes.is_inexact(o.dtype))
    g_ref = ember.grad(loss(fn), argnums=loss_argnum)(*args)
    for b in BACKENDS:
        g = ember.grad(loss(back.on(b).call), argnums=loss_argnum)(*args)
        _close(g, g_ref, rtol=1e-4, atol=1e-5)
    return back


def _functional(model):
    def apply(params, x):
        return nn.functional_call(model, params, x)[0]
    return apply


def test_mlp():
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    params = dict(model.parameters())
    _roundtrip(_functional(model), (params, _f32(3, 6)))


def test_module_with_baked_parameters_needs_no_source():
    model = nn.Sequential(nn.Linear(6, 4), nn.Tanh()).eval()
    x = _f32(2, 6)
    back = deserialize(export(model)(x).serialize())
    assert len(back.consts) == 2
    _close(back.call(x), model(x))
    _close(ember.grad(lambda v: enp.sum(back.call(v)))(x), ember.grad(lambda v: enp.sum(model(v)))(x))


def test_cnn():
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(4, 4, 3), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(4, 3)).eval()
    _roundtrip(_functional(model), (dict(model.parameters()), _f32(2, 1, 8, 8)))


def test_char_transformer_forward():
    mod = _load_example("char_transformer")
    model = mod.CharTransformer(24, 8, d_model=16, n_layer=2, n_head=2).eval()
    ids = enp.asarray(RNG.integers(0, 24, (2, 8)).astype(np.int32))
    _roundtrip(_functional(model), (dict(model.parameters()), ids))


def test_scan_rnn():
    def rnn(w, xs):
        def step(h, x):
            h = enp.tanh(h @ w + x)
            return h, enp.sum(h)
        return ember.scan(step, enp.zeros(3), xs)
    _roundtrip(rnn, (_f32(3, 3) * 0.5, _f32(5, 3)))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond(sign):
    def f(x):
        return ember.cond(enp.sum(x) > 0, lambda u: enp.sin(u) * 2.0, lambda u: u ** 3, x)
    _roundtrip(f, (sign * enp.abs(_f32(4)),))


@ember.custom_vjp
def clipped_sq(x):
    return x ** 2


clipped_sq.defvjp(lambda x: (x ** 2, x), lambda x, g: (enp.clip(2.0 * x * g, -1.0, 1.0),))


def test_custom_vjp_rule_survives_serialization():
    x = enp.asarray(np.array([0.1, 2.0, -3.0], np.float32))
    back = _roundtrip(lambda v: clipped_sq(v) * 1.5, (x,))
    # the custom rule (not the derivative of x**2) is what the deserialized function uses
    g = ember.grad(lambda v: enp.sum(back.call(v)))(x)
    np.testing.assert_allclose(np.asarray(g), [0.3, 1.0, -1.0], rtol=1e-6)
    assert "custom_vjp_call" in back._text and "TracedRule" in back._text


@ember.custom_jvp
def soft_abs(x):
    return enp.abs(x)


soft_abs.defjvps(lambda t, ans, x: t * enp.tanh(10.0 * x))


def test_custom_jvp_rule_survives_serialization():
    x = enp.asarray(np.array([0.05, 1.0, -2.0], np.float32))
    back = _roundtrip(lambda v: soft_abs(v) * 2.0, (x,))
    want = 2.0 * np.tanh(10.0 * np.asarray(x))
    _, t = ember.jvp(back.call, (x,), (enp.ones(3),))
    np.testing.assert_allclose(np.asarray(t), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ember.grad(lambda v: enp.sum(back.call(v)))(x)), want, rtol=1e-5)
