"""graph.pretty(source=True): each equation with the user's file:line, parseable."""
import inspect
import os
import re

import ember
import ember.numpy as enp
from ember.fx import parse

HERE = os.path.relpath(os.path.abspath(__file__))


def _f(x):
    y = enp.sin(x)
    return enp.sqrt(y) * 2.0


_SIN = inspect.getsourcelines(_f)[1] + 1
_SQRT = _SIN + 1


def _sources(text):
    """(primitive, file, line) of each equation line of the text."""
    return [(m.group(1), m.group(2), int(m.group(3)))
            for m in re.finditer(r"= ([a-z_0-9]+)\b.*  # (\S+):(\d+)$", text, re.M)]


def test_str_is_unchanged_and_source_is_a_separate_path():
    g = ember.make_graph(_f)(1.0)
    assert g.pretty() == str(g)
    assert "#" not in str(g)
    text = g.pretty(source=True)
    assert text.count("#") == len(g.equations)
    # the same text, less the comments
    assert re.sub(r"  # \S+", "", text) == str(g)


def test_forward_equations_name_their_lines():
    text = ember.make_graph(_f)(1.0).pretty(source=True)
    got = [(p, f, n) for p, f, n in _sources(text)]
    assert got == [("sin", HERE, _SIN), ("sqrt", HERE, _SQRT), ("mul", HERE, _SQRT)]


def test_backward_equations_keep_the_forward_line():
    text = ember.make_graph(ember.grad(_f))(1.0).pretty(source=True)
    # (grad's own equation: the gradient of the Python-float input made weak like it)
    lines = {(p, n) for p, f, n in _sources(text) if p != "convert_element_type"}
    assert all(f == HERE for _, f, _ in _sources(text))
    assert ("cos", _SIN) in lines            # sin's derivative, made by its jvp rule
    assert ("div", _SQRT) in lines           # sqrt's derivative, made in the backward pass
    assert {n for _, n in lines} == {_SIN, _SQRT}


def test_vmap_equations_keep_the_line():
    text = ember.make_graph(ember.vmap(_f))(enp.ones(3)).pretty(source=True)
    assert {n for _, _, n in _sources(text)} == {_SIN, _SQRT}


def test_parse_skips_the_comments():
    for g in (ember.make_graph(ember.grad(_f))(1.0),
              ember.make_graph(lambda x: ember.lax.scan(lambda c, t: (c * t, c), x, enp.arange(3.0)))(1.0)):
        back = parse.parse(g.pretty(source=True))
        assert parse.structurally_equal(back, g)
        assert str(back) == str(g)


def test_transforms_of_jit_keep_the_lines_of_the_inner_function():
    for g in (ember.make_graph(ember.grad(ember.jit(_f)))(1.0),
              ember.make_graph(ember.vmap(ember.jit(_f)))(enp.ones(2))):
        inner = [(p, f, n) for p, f, n in _sources(g.pretty(source=True))
                 if p not in ("jit_call", "convert_element_type")]
        assert inner and {n for _, _, n in inner} == {_SIN, _SQRT}
