"""The API reference, the name-mapping tables and the configuration page stay true:
pages regenerate to what is checked in, every public function/class has a docstring,
every ember name the tables mention exists, every EMBER_* variable is documented."""
from __future__ import annotations

import importlib
import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _generator():
    spec = importlib.util.spec_from_file_location("ember_api_generate", DOCS / "api" / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_public_function_and_class_has_a_docstring():
    missing = _generator().missing_docstrings()
    assert not missing, "public names without a docstring:\n  " + "\n  ".join(missing)


def test_api_pages_are_up_to_date():
    gen = _generator()
    pages = gen.pages()
    stale = [name for name, text in pages.items()
             if not (DOCS / "api" / name).is_file() or (DOCS / "api" / name).read_text() != text]
    extra = sorted(p.name for p in (DOCS / "api").glob("*.md") if p.name not in pages)
    # nothing machine-specific (the pages are compared on every checkout)
    leaky = [n for n, t in pages.items() if str(ROOT) in t or " at 0x" in t]
    assert not leaky, f"pages with a path or an object address: {leaky}"
    assert not stale and not extra, (
        f"docs/api is stale (changed: {stale}, no longer generated: {extra}); "
        "run `python docs/api/generate.py`")


def test_public_names_rule():
    gen = _generator()
    import ember
    names = gen.public_names(ember)
    assert "grad" in names and "jit" in names
    assert "api_device" not in names and "annotations" not in names   # modules, __future__
    import ember.numpy as enp
    assert {"float32", "pi", "sum"} <= set(gen.public_names(enp))
    assert gen.summary(ember.grad).startswith("Gradient")


_DOTTED = re.compile(r"`(ember(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`")


def _resolve(dotted: str):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(dotted)


@pytest.mark.parametrize("page", ["for-pytorch-users.md", "for-jax-users.md"])
def test_mapping_tables_name_real_things(page):
    text = (DOCS / page).read_text()
    names = sorted(set(_DOTTED.findall(text)))
    assert len(names) > 20
    missing = []
    for dotted in names:
        try:
            _resolve(dotted)
        except (ImportError, AttributeError):
            missing.append(dotted)
    assert not missing, f"{page} names what ember does not have: {missing}"


_ENV_READ = re.compile(r"""(?:environ(?:\.get)?\s*[\(\[]\s*|getenv\s*\(\s*)["'](EMBER_[A-Z0-9_]+)["']""")


def test_every_environment_variable_and_option_is_documented():
    page = (DOCS / "configuration.md").read_text()
    read = set()
    for path in (ROOT / "ember").rglob("*.py"):
        read |= set(_ENV_READ.findall(path.read_text()))
    from ember import config
    read |= {env for env, _ in config._ENV.values()}
    assert {"EMBER_CPU", "EMBER_LOG_COMPILES", "EMBER_NUM_THREADS"} <= read
    undocumented = sorted(v for v in read if f"`{v}`" not in page)
    assert not undocumented, f"docs/configuration.md lacks {undocumented}"
    options = sorted(o for o in config._ENV if f"`{o}`" not in page)
    assert not options, f"docs/configuration.md lacks the options {options}"
