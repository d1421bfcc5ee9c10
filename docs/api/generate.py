"""Generate the API reference (docs/api/*.md) from the docstrings.

Run `python docs/api/generate.py` after adding or renaming a public name;
`tests/docs/test_api_reference.py` fails when the pages are stale or when a
public function or class has no docstring.

A module's public names are its `__all__` when it has one, else every name
not starting with an underscore that is not a submodule and is not imported
from outside ember (numpy's dtypes re-exported by `ember.numpy` count: they
are part of the namespace users type).
"""
from __future__ import annotations

import importlib
import inspect
import pathlib
import sys
import types

HERE = pathlib.Path(__file__).resolve().parent

# (module, one-line description shown in the index); the order is the index's.
MODULES = [
    ("ember", "transforms, control flow, devices, save/load: the top-level API"),
    ("ember.numpy", "the NumPy / array-API namespace over ember arrays"),
    ("ember.numpy.linalg", "linear algebra (numpy.linalg names)"),
    ("ember.numpy.fft", "discrete Fourier transforms (numpy.fft names)"),
    ("ember.lax", "the primitive-level API (jax.lax names)"),
    ("ember.random", "counter-based random numbers from explicit keys (jax.random names)"),
    ("ember.tree", "pytree utilities over optree (jax.tree names)"),
    ("ember.tree_util", "the same under jax.tree_util names, with Partial"),
    ("ember.nn", "PyTorch-style modules, layers and the compiled train step"),
    ("ember.nn.functional", "the functional forms of the layers and losses (torch.nn.functional names)"),
    ("ember.nn.init", "parameter initialisers (torch.nn.init names)"),
    ("ember.optim", "optimisers: PyTorch-style classes and optax-style gradient transformations"),
    ("ember.optim.lr_scheduler", "learning-rate schedulers (torch.optim.lr_scheduler names)"),
    ("ember.data", "Dataset, DataLoader, samplers and worker processes (torch.utils.data names)"),
    ("ember.autograd", "torch.autograd.Function-style custom derivatives"),
    ("ember.testing", "gradient and batching checks against finite differences and loops"),
    ("ember.config", "global options (ember.config.update) and EMBER_* environment variables"),
    ("ember.dtypes", "dtype objects, promotion and the default float"),
    ("ember.fx", "the traced primitive IR: graphs, equations, printing"),
]
# Optional modules: documented when they import.
OPTIONAL = [
    ("ember.scipy.special", "special functions (scipy.special names)"),
    ("ember.scipy.stats", "probability distributions (scipy.stats names)"),
    ("ember.scipy.linalg", "scipy.linalg names"),
    ("ember.scipy.sparse.linalg", "iterative solvers (scipy.sparse.linalg names)"),
    ("ember.scipy.optimize", "minimisation (scipy.optimize names)"),
    ("ember.flatten_util", "ravel_pytree"),
    ("ember.taylor", "Taylor-mode derivatives"),
    ("ember.export", "versioned, source-free artifacts of jitted functions"),
    ("ember.onnx", "ONNX export (needs the onnx extra)"),
    ("ember.amp", "mixed precision"),
    ("ember.distributed", "data-parallel training across processes"),
    ("ember.debug", "printing and callbacks from compiled code"),
    ("ember.profiler", "traces of jitted calls and kernels"),
]


def _is_ember(obj) -> bool:
    mod = getattr(obj, "__module__", None) or ""
    return mod == "ember" or mod.startswith("ember.")


def public_names(module: types.ModuleType) -> list[str]:
    """The names a user of `module` may type, sorted."""
    if hasattr(module, "__all__"):
        return sorted(set(module.__all__))
    names = []
    for name, obj in vars(module).items():
        if name.startswith("_") or isinstance(obj, types.ModuleType):
            continue
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and not _is_ember(obj):
            # an import from outside ember (typing helpers, numpy functions used internally)
            if not (inspect.isclass(obj) and module.__name__ == "ember.numpy"):
                continue
        if name in {"annotations"}:
            continue
        names.append(name)
    return sorted(names)


def _kind(obj) -> str:
    if isinstance(obj, types.ModuleType):
        return "module"
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "data"


def needs_docstring(obj) -> bool:
    """Functions and classes defined in ember must say what they do."""
    if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismethod(obj):
        return _is_ember(obj)
    return callable(obj) and _is_ember(type(obj)) and not isinstance(obj, type)


def _own_doc(obj) -> str | None:
    doc = inspect.getdoc(obj)
    if doc is None:
        return None
    if not (inspect.isclass(obj) or inspect.isroutine(obj)) and doc == inspect.getdoc(type(obj)):
        return doc  # an instance documented by its class (e.g. a configured callable)
    return doc


def summary(obj) -> str:
    """The first sentence (line) of the docstring, or a description of a value."""
    if _kind(obj) == "module":
        doc = inspect.getdoc(obj) or ""
        return f"`{obj.__name__}`" + (": " + doc.strip().split("\n\n")[0].replace("\n", " ").replace("|", "\\|")
                                      if doc else "")
    if _kind(obj) == "data":
        text = repr(obj)
        return f"`{text if len(text) <= 60 else text[:57] + '...'}`"
    doc = _own_doc(obj)
    if not doc:
        return ""
    line = doc.strip().split("\n\n")[0].replace("\n", " ").strip()
    return line.replace("|", "\\|")


def missing_docstrings(modules=None) -> list[str]:
    """`module.name` for every public function/class without a docstring."""
    out = []
    for modname, _ in modules or available_modules():
        mod = importlib.import_module(modname)
        for name in public_names(mod):
            obj = getattr(mod, name)
            if needs_docstring(obj) and not _own_doc(obj):
                out.append(f"{modname}.{name}")
    return out


def available_modules() -> list[tuple[str, str]]:
    """The documented modules: those that import and have public names."""
    mods = []
    for modname, desc in MODULES + OPTIONAL:
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            if (modname, desc) in MODULES:
                raise   # ember itself must import: never regenerate (and delete) every page
            continue
        if public_names(mod):
            mods.append((modname, desc))
    return mods


def render_module(modname: str, desc: str) -> str:
    mod = importlib.import_module(modname)
    lines = [f"# `{modname}`", "", f"{desc[0].upper()}{desc[1:]}.", ""]
    head = inspect.getdoc(mod)
    if head:
        lines += [head.strip().split("\n\n")[0], ""]
    lines += ["| name | kind | summary |", "|---|---|---|"]
    for name in public_names(mod):
        obj = getattr(mod, name)
        lines.append(f"| `{name}` | {_kind(obj)} | {summary(obj)} |")
    lines.append("")
    return "\n".join(lines)


def render_index(mods) -> str:
    lines = ["# API reference", "",
             "Generated from the docstrings by `python docs/api/generate.py`; one page per public",
             "module, every public name with the first line of its docstring. See also",
             "[for PyTorch users](../for-pytorch-users.md) and [for JAX users](../for-jax-users.md).", "",
             "| module | names | what it is |", "|---|---|---|"]
    for modname, desc in mods:
        n = len(public_names(importlib.import_module(modname)))
        lines.append(f"| [`{modname}`]({modname}.md) | {n} | {desc} |")
    lines.append("")
    return "\n".join(lines)


def pages() -> dict[str, str]:
    """file name -> content of every page of the reference."""
    mods = available_modules()
    out = {"index.md": render_index(mods)}
    for modname, desc in mods:
        out[f"{modname}.md"] = render_module(modname, desc)
    return out


def main() -> int:
    missing = missing_docstrings()
    for name, text in pages().items():
        (HERE / name).write_text(text)
    for stale in HERE.glob("ember*.md"):
        if stale.name not in pages():
            stale.unlink()
    if missing:
        print("public names without a docstring:\n  " + "\n  ".join(missing), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
