"""The NaN/Inf locator: eager, jit (re-run op by op), grad's backward pass, naming
this file's lines."""
import inspect
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.numpy as enp

HERE = os.path.abspath(__file__)


@pytest.fixture
def nans():
    ember.config.update("debug_nans", True)
    try:
        yield
    finally:
        ember.config.update("debug_nans", False)


def _next_line():
    return inspect.currentframe().f_back.f_lineno + 1


def _raises(fn, *args, prim, line, what="NaN"):
    with pytest.raises(FloatingPointError) as info:
        fn(*args)
    msg = str(info.value)
    assert msg.startswith(f"{prim} produced {what} from finite inputs"), msg
    assert f"{HERE}:{line}" in msg, msg
    return msg


def test_eager_log_of_negative(nans):
    def f(x):
        line[0] = _next_line()
        return enp.log(x)
    line = [0]
    with pytest.raises(FloatingPointError):
        f(enp.asarray([1.0, -1.0]))
    msg = _raises(f, enp.asarray([1.0, -1.0]), prim="log", line=line[0])
    assert "log(float32[2]) -> float32[2]" in msg


def test_eager_zero_over_zero(nans):
    line = _next_line()
    f = lambda x: x / x  # noqa: E731
    _raises(f, enp.asarray(0.0), prim="div", line=line)


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_jit_log_of_negative(nans, backend):
    line = _next_line()
    f = ember.jit(lambda v: enp.log(v).sum(), backend=backend)
    msg = _raises(f, enp.asarray([1.0, -1.0]), prim="log", line=line)
    assert "under jit" in msg


def test_jit_overflow_in_exp(nans):
    line = _next_line()
    f = ember.jit(lambda x: enp.exp(x) * 2.0 + 1.0)
    _raises(f, enp.asarray([1.0, 100.0]), prim="exp", line=line, what="Inf")
    np.testing.assert_allclose(np.asarray(f(enp.asarray([0.0]))), [3.0])   # finite calls are unaffected


def test_jit_inside_nested_jit(nans):
    line = _next_line()
    inner = ember.jit(lambda y: enp.exp(y))
    f = ember.jit(lambda x: inner(x) * 2.0)
    msg = _raises(f, enp.asarray([100.0]), prim="exp", line=line, what="Inf")
    assert "inside jit_call" in msg


@pytest.mark.parametrize("wrap", [lambda f: f, ember.jit])
def test_grad_of_sqrt_at_zero_names_the_forward_line(nans, wrap):
    line = _next_line()
    g = wrap(ember.grad(lambda x: enp.sqrt(x)))
    # sqrt'(0) = inf comes from the backward pass: the division by 2 sqrt(x)
    _raises(g, 0.0, prim="div", line=line, what="Inf")


def test_inputs_with_nan_do_not_raise(nans):
    out = enp.asarray([np.nan]) + 1.0
    assert np.isnan(np.asarray(out)).all()
    out = ember.jit(lambda x: x * 2.0)(enp.asarray([np.nan, 1.0]))
    assert np.isnan(np.asarray(out)[0])


def test_off_by_default_and_after_turning_off():
    assert not ember.config.debug_nans()
    assert np.isnan(float(ember.jit(lambda x: x / x)(enp.asarray(0.0))))
    ember.config.update("debug_nans", True)
    ember.config.update("debug_nans", False)
    assert np.isnan(float(enp.log(enp.asarray(-1.0))))


def test_env_var_turns_it_on():
    code = ("import ember, ember.numpy as enp\n"
            "try:\n    enp.log(enp.asarray(-1.0))\nexcept FloatingPointError as e:\n    print('raised', e)\n")
    env = dict(os.environ, EMBER_DEBUG_NANS="1", PYTHONPATH=os.getcwd())
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.stdout.startswith("raised log produced NaN from finite inputs"), out.stderr


def _body(c, t):
    return enp.log(c - t), c       # NaN at the iteration where t > c


_BODY_LINE = inspect.getsourcelines(_body)[1] + 1


@pytest.mark.parametrize("wrap", [lambda f: f, ember.jit])
def test_scan_body_line_is_named(nans, wrap):
    line = _next_line()
    f = wrap(lambda x: ember.lax.scan(_body, 1.0, x))
    msg = _raises(f, enp.arange(3.0), prim="log", line=_BODY_LINE)
    assert f"(inside scan at {HERE}:{line})" in msg


@pytest.mark.parametrize("wrap", [lambda f: f, ember.jit])
def test_while_and_cond_bodies(nans, wrap):
    def body(c):
        return c * 1e30            # overflows to inf on the second iteration
    body_line = inspect.getsourcelines(body)[1] + 1
    f = wrap(lambda x: ember.lax.while_loop(lambda c: c < 1e38, body, x))
    msg = _raises(f, enp.asarray(10.0), prim="mul", line=body_line, what="Inf")
    assert "inside while_loop" in msg

    def branch(v):
        return enp.sqrt(v - 2.0)   # NaN for v < 2
    branch_line = inspect.getsourcelines(branch)[1] + 1
    g = wrap(lambda x: ember.lax.cond(x > 0, branch, lambda v: v, x))
    _raises(g, enp.asarray(1.0), prim="sqrt", line=branch_line)
    assert float(g(enp.asarray(-1.0))) == -1.0     # the other branch is fine
