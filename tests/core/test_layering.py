"""The arrows point one way: `ember.fx` (the IR and the tracing core) imports
nothing from the layers above it, from any backend, or from an optional
dependency, at module level or inside a function (checked on the source's AST,
relative imports resolved)."""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FX = ROOT / "ember" / "fx"

FORBIDDEN = ("ember.array", "ember.numpy", "ember.backends", "ember.nn", "ember.optim",
             "ember.data", "ember.ops_mixin", "ember.lax", "ember._host", "ember.api_device",
             "ember.transforms", "ember.autograd", "ember.random", "ember.serialization", "cupy", "mpi4py", "onnx", "onnxruntime",
             "torch", "jax", "jaxlib", "llvmlite")


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(path: pathlib.Path, package: str | None = None) -> list[tuple[int, str]]:
    """Every module an import statement in `path` names, anywhere in the file
    (`from a import b` names both `a` and `a.b`, since b may be a submodule);
    relative imports are resolved against `package` (default: the file's own)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    if package is None:
        package = _module_name(path)
        if path.name != "__init__.py":
            package = package.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            out.append((node.lineno, module))
            out.extend((node.lineno, f"{module}.{a.name}") for a in node.names)
    return out


def _forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


def test_resolution_of_relative_imports(tmp_path):
    # the walker itself, on a file as if it sat in ember/fx/prims/
    names = {n for _, n in imported_names(FX / "prims" / "rules.py")}
    assert "ember.fx.core" in names
    probe = tmp_path / "probe.py"
    probe.write_text("import numpy as np\n"
                     "def f():\n    from ...array import Array\n    import torch.nn\n"
                     "    if True:\n        from ... import numpy as enp\n"
                     "from .. import ir\n")
    found = {n for _, n in imported_names(probe, package="ember.fx.prims")}
    assert {"numpy", "ember.array", "ember.array.Array", "torch.nn", "ember.numpy",
            "ember.fx", "ember.fx.ir"} <= found
    assert sorted(n for n in found if _forbidden(n)) == [
        "ember.array", "ember.array.Array", "ember.numpy", "torch.nn"]


FX_FILES = sorted(FX.rglob("*.py"))


@pytest.mark.parametrize("path", FX_FILES, ids=[str(p.relative_to(FX)) for p in FX_FILES])
def test_fx_imports_nothing_from_above_or_optional(path):
    bad = [f"line {line}: {name}" for line, name in imported_names(path) if _forbidden(name)]
    assert not bad, f"ember/fx/{path.relative_to(FX)} imports " + ", ".join(bad)


def test_every_fx_file_is_checked():
    assert len(FX_FILES) > 20 and FX / "core.py" in FX_FILES


# Host conversion lives with Array, so what converts user data below the numpy
# layer (device_put, jit's operands, the transforms' argument checks) needs no numpy layer.
HOST_USERS = ["ember/_host.py", "ember/array.py", "ember/api_device.py",
              "ember/transforms/jit.py", "ember/transforms/util.py", "ember/backends/base.py"]


@pytest.mark.parametrize("rel", HOST_USERS)
def test_host_conversion_needs_no_numpy_layer(rel):
    names = [(line, n) for line, n in imported_names(ROOT / rel)
             if n == "ember.numpy" or n.startswith("ember.numpy.")]
    assert not names, f"{rel} imports {names}"
