"""One helper makes the IR's rank-0 constants (`fx.core.const` / `const_like`);
no other module outside the backends defines its own copy."""
import ast
import pathlib

import numpy as np
from hypothesis import given, settings, strategies as st

import ember.numpy as enp
from ember.fx.core import const, const_like

ROOT = pathlib.Path(__file__).resolve().parents[2] / "ember"
DTYPES = ["bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64", "complex64"]


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from(DTYPES), value=st.integers(0, 1))
def test_const_is_numpys_rank0_scalar(dtype, value):
    c = const(dtype, value)
    want = np.array(value, dtype=dtype)[()]
    assert type(c) is type(want) and c.dtype == np.dtype(dtype) and np.ndim(c) == 0 and c == want
    like = const_like(enp.zeros(2, dtype), value)
    assert like.dtype == np.dtype(dtype) and like == want


def _is_rank0_constant_helper(fn: ast.FunctionDef) -> bool:
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return False
    r = body[0].value   # return np.array(v, dtype=...)[()] / np.zeros((), d)[()]
    return (isinstance(r, ast.Subscript) and isinstance(r.slice, ast.Tuple) and not r.slice.elts
            and isinstance(r.value, ast.Call) and isinstance(r.value.func, ast.Attribute)
            and r.value.func.attr in ("array", "asarray", "zeros"))


def test_no_other_rank0_constant_helper():
    found = []
    for path in ROOT.rglob("*.py"):
        if "backends" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and _is_rank0_constant_helper(node):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert sorted(f.split(":")[0] + " " + f.split(" ")[1] for f in found) == [
        "fx/core.py const", "fx/core.py const_like"], found
