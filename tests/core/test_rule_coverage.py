"""Every primitive carries the rules its transforms need (or says why not)."""
import pytest

import ember
import ember.nn  # noqa: F401  (registers its primitives, if any)
import ember.random  # noqa: F401
from ember.fx.core import PRIMITIVES

# Primitives linear in at least one input: reverse mode needs their transpose.
LINEAR = {"add", "sub", "neg", "mul", "div", "convert_element_type", "reduce_sum", "broadcast_in_dim",
          "reshape", "transpose", "squeeze", "expand_dims", "rev", "pad", "concatenate", "slice",
          "dynamic_slice", "dynamic_update_slice", "gather", "scatter_add", "select_n", "cumsum",
          "dot_general", "conv_general_dilated", "reduce_window_sum", "real", "imag", "conj",
          "complex", "triangular_solve", "fft", "jit_call", "cond", "scan", "remat", "custom_lin"}


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_primitive_has_every_rule(name):
    p = PRIMITIVES[name]
    for rule in ("abstract_eval", "impl", "jvp", "batch"):
        assert getattr(p, rule) is not None or rule in p.not_applicable, f"{name} lacks a {rule} rule"
    assert p.transpose is not None or "transpose" in p.not_applicable, (
        f"{name} has no transpose rule: add one, or list 'transpose' in not_applicable if it is "
        f"not linear in any input")


def test_linear_primitives_transpose():
    missing = sorted(n for n in LINEAR if n in PRIMITIVES and PRIMITIVES[n].transpose is None)
    assert not missing, f"linear primitives without a transpose rule: {missing}"
    assert len(PRIMITIVES) >= 60
