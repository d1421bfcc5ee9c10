"""Control-flow type errors: dtypes spelled as users type them, branches named as written."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember.fx.core import AbstractArray

_DTYPES = ["float32", "float64", "int32", "int8", "uint8", "bool", "float16", "bfloat16", "complex64"]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(_DTYPES), st.lists(st.integers(0, 4), max_size=3))
def test_str_user_spells_numpy_names(dtype, shape):
    assert AbstractArray(tuple(shape), dtype).str_user() == f"{dtype}[{','.join(map(str, shape))}]"


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(["float64", "int32", "int8", "bool"]))
def test_scan_carry_mismatch_names_leaf_and_dtype(dtype):
    init = (np.float32(1.0), np.ones(2, np.float32))
    with pytest.raises(TypeError) as e:
        ember.scan(lambda c, x: ((c[0], c[1].astype(dtype)), x), init, np.ones(3, np.float32))
    msg = str(e.value)
    assert f"carry[1] is float32[2] in init and {dtype}[2]" in msg
    assert "f32" not in msg and "test_control_flow_errors.py" in msg


def test_cond_names_true_fun_and_false_fun():
    with pytest.raises(TypeError) as e:
        ember.cond(True, lambda x: x, lambda x: x.astype("int32"), np.ones(3, np.float32))
    msg = str(e.value)
    assert "true_fun and false_fun" in msg
    assert "float32[3] in true_fun" in msg and "int32[3] in false_fun" in msg
    assert "test_control_flow_errors.py" in msg and "i32" not in msg


def test_switch_names_branches_by_index():
    with pytest.raises(TypeError, match=r"branches\[0\] and branches\[2\].*output\['y'\] is "
                                        r"float32\[3\] in branches\[0\].*bool\[3\] in branches\[2\]"):
        ember.lax.switch(2, [lambda x: {"y": x}, lambda x: {"y": x}, lambda x: {"y": x > 0}],
                         np.ones(3, np.float32))


def test_while_loop_body_mismatch_names_init_val_leaf():
    with pytest.raises(TypeError, match=r"init_val\['a'\] is float32\[\] in init_val and int32\[\]"):
        ember.lax.while_loop(lambda c: c["a"] < 3, lambda c: {"a": c["a"].astype("int32")},
                             {"a": np.float32(0)})


def test_while_loop_non_scalar_predicate_names_cond_fun_and_line():
    def keep_going(c):
        return c < 3
    with pytest.raises(TypeError) as e:
        ember.lax.while_loop(keep_going, lambda c: c + 1, np.zeros(2, np.float32))
    msg = str(e.value)
    assert "cond_fun must return a boolean scalar" in msg and "returned an array bool[2]" in msg
    assert "keep_going (" in msg and "test_control_flow_errors.py" in msg


def test_scan_body_not_a_pair():
    with pytest.raises(TypeError, match=r"must return a pair \(new_carry, y\), but lambda .* "
                                        r"returned an array float32\[\]"):
        ember.scan(lambda c, x: c, np.float32(1.0), np.ones(3, np.float32))


@pytest.mark.parametrize("post", ["square", "sin", "mul", "identity"])
def test_grad_through_while_loop_names_the_while_loop(post):
    # reverse mode through a while_loop whose body closes over x: the loop's primal
    # reached the ops after it as if linear, and the error named them ("mul is not
    # linear when both operands are linear inputs") instead of the while_loop
    import ember.numpy as enp
    x = np.array([0.3, -0.7, 1.2])
    after = {"square": lambda c: c ** 2, "sin": enp.sin, "mul": lambda c: c * c, "identity": lambda c: c}[post]

    def f(x):
        def body(s):
            i, c = s
            return i + 1, enp.sin(c) * 1.1 + x * c
        return enp.sum(after(ember.while_loop(lambda s: s[0] < 3, body, (0, x))[1]))

    with pytest.raises(TypeError, match="cannot transpose 'while_loop'.*trip count is dynamic"):
        ember.grad(f)(x)
    ember.jacfwd(f)(x)   # forward mode works
