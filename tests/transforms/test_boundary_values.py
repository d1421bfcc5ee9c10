"""A non-array argument or return value is named at the transform's boundary."""
import numpy as np
import pytest

import ember

_OUTPUTS = {
    "jit": (lambda f: ember.jit(f)(1.0), "jit(f)"),
    "grad": (lambda f: ember.grad(f)(1.0), "grad"),
    "value_and_grad": (lambda f: ember.value_and_grad(f)(1.0), "value_and_grad"),
    "vmap": (lambda f: ember.vmap(f)(np.ones(2)), "vmap"),
    "make_graph": (lambda f: ember.make_graph(f)(1.0), "make_graph(f)"),
    "jvp": (lambda f: ember.jvp(f, (1.0,), (1.0,)), "jvp"),
    "vjp": (lambda f: ember.vjp(f, 1.0), "vjp"),
    "jacfwd": (lambda f: ember.jacfwd(f)(1.0), "jacfwd"),
    "jacrev": (lambda f: ember.jacrev(f)(1.0), "jacrev"),
    "checkpoint": (lambda f: ember.checkpoint(f)(1.0), "checkpoint"),
}


@pytest.mark.parametrize("api", list(_OUTPUTS))
def test_non_array_output_is_named(api):
    def f(x):
        return {"loss": x * x, "tag": "hello"}
    call, desc = _OUTPUTS[api]
    with pytest.raises(TypeError) as e:
        call(f)
    msg = str(e.value)
    assert msg.startswith(f"{desc}: output['tag'] of f (")
    assert "is a str, which is not a valid ember value" in msg and "test_boundary_values.py" in msg


def test_jit_returning_a_string():
    with pytest.raises(TypeError, match=r"jit\(<lambda>\): the output of lambda \(.*\) is a str"):
        ember.jit(lambda x: "hello")(1.0)


@pytest.mark.parametrize("call,desc", [
    (lambda: ember.jit(lambda x, cfg: x)(1.0, "a string"), r"jit\(<lambda>\): argument `cfg`"),
    (lambda: ember.jit(lambda p: p["w"])({"w": 1.0, "n": object()}), r"argument `p\['n'\]` .* an object"),
    (lambda: ember.jit(lambda x, *, k: x)(1.0, k="s"), r"argument `k`"),
    (lambda: ember.vmap(lambda x, y: x)(np.ones(2), "s"), r"vmap: argument `y`"),
    (lambda: ember.grad(lambda a, b: a, argnums=1)(1.0, "s"), r"grad: argument `b`"),
    (lambda: ember.make_graph(lambda x, y: x)(1.0, "s"), r"make_graph\(<lambda>\): argument `y`"),
    (lambda: ember.jacrev(lambda x: x)(["s"]), r"jacrev: argument `x\[0\]`"),
    (lambda: ember.scan(lambda c, x: (c, x), (1.0, "s"), np.ones(2)), r"scan: argument `init\[1\]`"),
])
def test_non_array_argument_is_named(call, desc):
    with pytest.raises(TypeError, match=desc) as e:
        call()
    assert "which is not a valid ember value" in str(e.value)
    assert "test_boundary_values.py" in str(e.value)


def test_jit_argument_hint_suggests_static():
    with pytest.raises(TypeError, match="static_argnums / static_argnames"):
        ember.jit(lambda x, cfg: x)(1.0, "a string")


def test_control_flow_outputs_are_named():
    with pytest.raises(TypeError, match=r"scan: y\[1\] of lambda .* is a str"):
        ember.scan(lambda c, x: (c, (x, "s")), 1.0, np.ones(2))
    with pytest.raises(TypeError, match=r"cond: the output of lambda .* is a str"):
        ember.cond(True, lambda: "s", lambda: "s")


def test_unmapped_vmap_outputs_may_be_python_values():
    out = ember.vmap(lambda x: (x * 2.0, "tag"), out_axes=(0, None))(np.ones(2))
    assert out[1] == "tag" and out[0].tolist() == [2.0, 2.0]
