"""Collectives over named vmap axes: values vs closed forms (eager, under jit, jit
inside vmap, nested named axes), derivatives of the mapped function vs finite
differences, and the errors for unbound names and bad arguments."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.testing import check_grads

RNG = np.random.default_rng(0)
X = RNG.normal(size=(4, 3))


def vm(f, name="i", **kw):
    return ember.vmap(f, axis_name=name, **kw)


@pytest.mark.parametrize("wrap", ["eager", "jit_outside", "jit_inside"])
def test_reductions_match_closed_forms(wrap):
    cases = {
        "psum": (lambda v: lax.psum(v, "i"), np.broadcast_to(X.sum(0), X.shape)),
        "pmean": (lambda v: lax.pmean(v, "i"), np.broadcast_to(X.mean(0), X.shape)),
        "pmax": (lambda v: lax.pmax(v, "i"), np.broadcast_to(X.max(0), X.shape)),
        "pmin": (lambda v: lax.pmin(v, "i"), np.broadcast_to(X.min(0), X.shape)),
        "normalise": (lambda v: v / lax.psum(v, "i"), X / X.sum(0)),
        "axis_index": (lambda v: v * lax.axis_index("i"), X * np.arange(4)[:, None]),
    }
    for name, (f, want) in cases.items():
        if wrap == "eager":
            g = vm(f)
        elif wrap == "jit_outside":
            g = ember.jit(vm(f))
        else:
            g = vm(ember.jit(f))
        np.testing.assert_allclose(np.asarray(g(enp.asarray(X))), want, rtol=1e-12, err_msg=name)


def test_unbatched_operand_and_tuple_of_names():
    # a value every lane shares still sums over the lanes
    out = vm(lambda v: lax.psum(enp.asarray(2.0, dtype="float64"), "i"))(enp.asarray(X))
    np.testing.assert_allclose(np.asarray(out), np.full(4, 8.0))
    # nested named axes: the inner vmap passes the outer axis's collective through
    f = vm(vm(lambda v: lax.psum(v, "i"), "j"), "i")
    np.testing.assert_allclose(np.asarray(f(enp.asarray(X))), np.broadcast_to(X.sum(0), X.shape))
    g = vm(vm(lambda v: lax.psum(v, ("i", "j")), "j"), "i")
    np.testing.assert_allclose(np.asarray(g(enp.asarray(X))), np.full(X.shape, X.sum()))
    h = vm(vm(lambda v: lax.axis_index("i") * 10 + lax.axis_index("j"), "j"), "i")
    np.testing.assert_array_equal(np.asarray(h(enp.asarray(X))),
                                  np.arange(4)[:, None] * 10 + np.arange(3)[None, :])
    assert lax.axis_size is not None
    assert int(vm(lambda v: lax.axis_size("i") + 0 * lax.axis_index("i"))(enp.asarray(X))[0]) == 4


def test_all_gather_and_tiled():
    out = vm(lambda v: lax.all_gather(v, "i"))(enp.asarray(X))
    np.testing.assert_allclose(np.asarray(out), np.broadcast_to(X, (4,) + X.shape))
    out = vm(lambda v: lax.all_gather(v, "i", axis=1))(enp.asarray(X))
    np.testing.assert_allclose(np.asarray(out)[2], X.T)
    out = vm(lambda v: lax.all_gather(v, "i", tiled=True))(enp.asarray(X))
    np.testing.assert_allclose(np.asarray(out)[1], X.reshape(-1))
    # inside an inner vmap over another axis
    out = vm(vm(lambda v: lax.all_gather(v, "i"), "j"), "i")(enp.asarray(X))
    np.testing.assert_allclose(np.asarray(out)[1, 2], X[:, 2])


def test_all_to_all_is_a_transpose_of_lanes():
    a = RNG.normal(size=(4, 4, 5))                       # lane i holds a[i]; split axis 0
    out = np.asarray(vm(lambda v: lax.all_to_all(v, "i", 0, 0))(enp.asarray(a)))
    want = np.stack([np.stack([a[j, i] for j in range(4)]) for i in range(4)])
    np.testing.assert_allclose(out, want)
    out = np.asarray(vm(lambda v: lax.all_to_all(v, "i", 0, 1))(enp.asarray(a)))
    np.testing.assert_allclose(out, np.moveaxis(want, 1, 2))
    t = RNG.normal(size=(4, 8, 3))                       # tiled: chunks of 2 rows
    out = np.asarray(vm(lambda v: lax.all_to_all(v, "i", 0, 0, tiled=True))(enp.asarray(t)))
    want = np.stack([np.concatenate([t[j, 2 * i:2 * i + 2] for j in range(4)]) for i in range(4)])
    np.testing.assert_allclose(out, want)


def test_ppermute_ring_and_missing_sources():
    ring = [(k, (k + 1) % 4) for k in range(4)]
    out = np.asarray(vm(lambda v: lax.ppermute(v, "i", ring))(enp.asarray(X)))
    np.testing.assert_allclose(out, np.roll(X, 1, axis=0))
    out = np.asarray(vm(lambda v: lax.ppermute(v, "i", [(0, 3)]))(enp.asarray(X)))
    np.testing.assert_allclose(out, np.stack([0 * X[0], 0 * X[0], 0 * X[0], X[0]]))


@pytest.mark.parametrize("name,f", [
    ("psum", lambda v: enp.sin(lax.psum(v * v, "i"))),
    ("pmean", lambda v: v * lax.pmean(enp.exp(v), "i")),
    ("pmax", lambda v: v * lax.pmax(v, "i")),
    ("pmin", lambda v: enp.tanh(lax.pmin(v * 2.0, "i"))),
    ("all_gather", lambda v: enp.sum(lax.all_gather(v, "i") ** 2, axis=0) * v),
    ("ppermute", lambda v: v * lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 3), (3, 0)])),
    ("all_to_all", lambda v: enp.sin(lax.all_to_all(v.reshape(4, -1), "i", 0, 1))),
])
def test_derivatives_of_the_mapped_function(name, f):
    x = RNG.normal(size=(4, 4)) if name == "all_to_all" else X
    F = vm(f)
    check_grads(F, (enp.asarray(x),), order=2, modes=("fwd", "rev"))


def test_grad_of_psum_is_a_broadcast_and_jit_grad_agree():
    xs = enp.asarray(X[:, 0])
    g = ember.grad(lambda v: vm(lambda a: lax.psum(a, "i"))(v)[0])(xs)
    np.testing.assert_allclose(np.asarray(g), np.ones(4))
    f = lambda v: enp.sum(vm(lambda a: a * lax.pmean(a, "i"))(v))
    np.testing.assert_allclose(np.asarray(ember.jit(ember.grad(f))(xs)), np.asarray(ember.grad(f)(xs)))
    # per-example gradients of a loss normalised across the batch
    per = vm(ember.grad(lambda a: lax.psum(a * a, "i")))(xs)
    np.testing.assert_allclose(np.asarray(per), 4 * 2 * X[:, 0])    # d(sum_j psum)/dx_i, classic


def test_errors_are_clear():
    with pytest.raises(NameError, match=r"unbound axis name 'i'.*vmap\(\.\.\., axis_name='i'\)"):
        lax.psum(enp.ones(3), "i")
    with pytest.raises(NameError, match="axes in scope are 'j'"):
        vm(lambda v: lax.psum(v, "i"), "j")(enp.ones(3))
    with pytest.raises(NameError, match="unbound"):
        ember.jit(lambda v: lax.pmean(v, "k"))(enp.ones(3))
    with pytest.raises(TypeError, match="split axis 0 .* must have the axis 'i''s size 4"):
        vm(lambda v: lax.all_to_all(v, "i", 0, 0))(enp.ones((4, 3)))
    with pytest.raises(ValueError, match="ppermute: perm"):
        vm(lambda v: lax.ppermute(v, "i", [(0, 1), (2, 1)]))(enp.ones(4))
