"""numpy's own functions applied to ember arrays (numpy dispatches through the array's
methods with its keyword protocol: out=, keepdims=, initial=, where=, ...), compared
with the same functions on numpy arrays."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import ember.numpy as enp

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# name -> call taking (numpy module, array, axis)
CALLS = {
    "sum": lambda m, v, ax: m.sum(v, axis=ax),
    "sum_keepdims": lambda m, v, ax: m.sum(v, axis=ax, keepdims=True),
    "sum_initial": lambda m, v, ax: m.sum(v, axis=ax, initial=2.0),
    "sum_dtype": lambda m, v, ax: m.sum(v, axis=ax, dtype=np.float64),
    "prod": lambda m, v, ax: m.prod(v, axis=ax),
    "mean": lambda m, v, ax: m.mean(v, axis=ax),
    "mean_keepdims": lambda m, v, ax: m.mean(v, axis=ax, keepdims=True),
    "std": lambda m, v, ax: m.std(v, axis=ax),
    "std_ddof": lambda m, v, ax: m.std(v, axis=ax, ddof=1),
    "var": lambda m, v, ax: m.var(v, axis=ax),
    "var_correction": lambda m, v, ax: m.var(v, axis=ax, correction=1),
    "max": lambda m, v, ax: m.max(v, axis=ax),
    "min": lambda m, v, ax: m.min(v, axis=ax),
    "amax": lambda m, v, ax: m.amax(v, axis=ax, keepdims=True),
    "amin": lambda m, v, ax: m.amin(v, axis=ax),
    "max_initial": lambda m, v, ax: m.max(v, axis=ax, initial=0.5),
    "all": lambda m, v, ax: m.all(v > 0, axis=ax),
    "any": lambda m, v, ax: m.any(v > 0, axis=ax, keepdims=True),
    "argmax": lambda m, v, ax: m.argmax(v, axis=ax),
    "argmin": lambda m, v, ax: m.argmin(v, axis=ax),
    "cumsum": lambda m, v, ax: m.cumsum(v, axis=ax),
    "cumprod": lambda m, v, ax: m.cumprod(v, axis=ax),
    "ptp": lambda m, v, ax: m.ptp(v, axis=ax),
    "round": lambda m, v, ax: m.round(v, 1),
    "clip": lambda m, v, ax: m.clip(v, -0.5, 0.5),
    "take": lambda m, v, ax: m.take(v, [0], axis=ax),
    # stable: ties have one right answer (numpy's default quicksort picks any)
    "argsort": lambda m, v, ax: m.argsort(v, axis=ax if ax is not None else -1, kind="stable"),
    "squeeze": lambda m, v, ax: m.squeeze(v),
    "transpose": lambda m, v, ax: m.transpose(v),
    "ravel": lambda m, v, ax: m.ravel(v),
}
NEEDS_AXIS = {"cumsum", "cumprod", "take", "argsort"}
NONEMPTY = {"max", "min", "amax", "amin", "argmax", "argmin", "ptp", "take"}


@st.composite
def array_and_axis(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    a = draw(hnp.arrays(np.float64, shape, elements=st.floats(-4, 4, width=32)))
    ax = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    return a.astype(np.float32), ax


@pytest.mark.parametrize("name", sorted(CALLS))
@settings(max_examples=15, deadline=None)
@given(data=array_and_axis())
def test_numpy_function_on_ember_array(name, data):
    a, ax = data
    if name in NEEDS_AXIS and ax is None:
        ax = 0
    call = CALLS[name]
    want = call(np, a, ax)
    got = call(np, enp.asarray(a), ax)
    got = np.asarray(got)
    assert got.shape == np.shape(want)
    if np.asarray(want).dtype.kind == "f":
        np.testing.assert_allclose(got.astype(np.float64), np.asarray(want, np.float64),
                                   rtol=2e-5, atol=2e-5)
    else:
        np.testing.assert_array_equal(got, want)


def test_numpy_where_and_nonzero_on_ember_array():
    a = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, -1.0]], np.float32)
    x = enp.asarray(a)
    w = np.array([True, False, True])
    np.testing.assert_allclose(np.asarray(np.sum(x, where=w)), np.sum(a, where=w))
    np.testing.assert_allclose(np.asarray(np.mean(x, where=w)), np.mean(a, where=w))
    np.testing.assert_allclose(np.asarray(np.max(x, where=w, initial=-9)),
                               np.max(a, where=w, initial=-9))
    for g, want in zip(np.nonzero(x), np.nonzero(a)):
        np.testing.assert_array_equal(np.asarray(g), want)


def test_numpy_out_argument_is_refused_clearly():
    x = enp.arange(3.0)
    buf = np.zeros(())
    for f in (np.sum, np.mean, np.max, np.prod, np.std, np.var, np.all, np.any, np.min):
        with pytest.raises(TypeError, match="out= is not supported because ember arrays are "
                                            "immutable"):
            f(x, out=buf)
