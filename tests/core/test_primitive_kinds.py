"""Every primitive ember defines says what a scheduler needs: its kind and cost
(fx.core.Primitive), set by the factories or beside the definition."""
import importlib
import pkgutil

import pytest

import ember
from ember.fx import core
from ember.fx.core import PRIMITIVES, Primitive

# the values documented in Primitive's docstring
KINDS = {"elementwise", "identity", "movement", "indexing", "reduction", "contraction", "scatter",
         "library", "control", "collective"}
COSTS = {"cheap", "expensive"}


def _ember_primitives():
    """Primitives bound to a module-level name anywhere in the ember package."""
    found = {}
    for info in pkgutil.walk_packages(ember.__path__, "ember."):
        mod = importlib.import_module(info.name)
        for v in vars(mod).values():
            if isinstance(v, Primitive):
                found[v.name] = v
    return found


DEFINED = _ember_primitives()


def test_every_registered_primitive_is_found_by_the_walk():
    # a primitive registered by ember but bound to no module name would escape the
    # kind check below (test files may register their own: they are not ember's)
    assert len(DEFINED) >= 120
    for name, p in DEFINED.items():
        assert PRIMITIVES.get(name) is p


@pytest.mark.parametrize("name", sorted(DEFINED))
def test_primitive_has_kind_and_cost(name):
    p = DEFINED[name]
    assert p.kind is not None, (f"{name} has no kind: set it in the factory that defines it or beside "
                                f"its definition (values: {sorted(KINDS)})")
    assert p.kind in KINDS, f"{name}: unknown kind {p.kind!r} (document new ones in Primitive's docstring)"
    assert p.cost in COSTS, f"{name}: unknown cost {p.cost!r}"
    for k in KINDS:
        assert f'"{k}"' in core.Primitive.__doc__, f"kind {k!r} is not documented in Primitive's docstring"


def test_kinds_of_known_primitives():
    # spot checks against what each primitive computes
    expect = {"exp": ("elementwise", "expensive"), "add": ("elementwise", "cheap"),
              "div": ("elementwise", "expensive"), "lgamma": ("elementwise", "expensive"),
              "select_n": ("elementwise", "cheap"), "convert_element_type": ("elementwise", "cheap"),
              "stop_gradient": ("identity", "cheap"), "checkpoint_name": ("identity", "cheap"),
              "reshape": ("movement", "cheap"), "iota": ("movement", "cheap"),
              "gather": ("indexing", "cheap"), "reduce_sum": ("reduction", "cheap"),
              "cumsum": ("reduction", "cheap"), "dot_general": ("contraction", "cheap"),
              "scatter_add": ("scatter", "cheap"), "sort": ("library", "cheap"),
              "cholesky": ("library", "cheap"), "scan": ("control", "cheap"), "jit_call": ("control", "cheap")}
    got = {n: (DEFINED[n].kind, DEFINED[n].cost) for n in expect}
    assert got == expect


def test_factories_set_the_kind():
    from ember.fx.prims.rules import defbroadcasting, defvectorized
    a = defvectorized(Primitive("_kind_probe_unary"))
    b = defbroadcasting(Primitive("_kind_probe_binary"))
    try:
        assert (a.kind, b.kind) == ("elementwise", "elementwise")
    finally:
        PRIMITIVES.pop(a.name)
        PRIMITIVES.pop(b.name)
