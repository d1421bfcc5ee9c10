"""Execute every fenced ```python block of the user guide (docs/*.md).

Blocks of one file run in order in one shared namespace, so later blocks may use
names defined earlier. A block preceded by the line `<!-- skip -->` is not run
(kept for deliberately illustrative code). docs/CONVENTIONS_FOR_HELPERS.md is
internal and not part of the guide.
"""
from __future__ import annotations

import contextlib
import io
import os
import pathlib
import re
import sys
import types

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"
EXCLUDED = {"CONVENTIONS_FOR_HELPERS.md"}
FENCE = re.compile(r"^```(\w*)[ \t]*$")


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, source) of each ```python block not marked <!-- skip -->."""
    blocks, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i + 1
        j = start
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        if j == len(lines):
            raise ValueError(f"unclosed code fence opened on line {i + 1}")
        prev = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        if lang == "python" and prev != "<!-- skip -->":
            blocks.append((start + 1, "\n".join(lines[start:j]) + "\n"))
        i = j + 1
    return blocks


GUIDE = sorted(p for p in DOCS.glob("*.md") if p.name not in EXCLUDED)


def test_guide_has_chapters():
    names = {p.name for p in GUIDE}
    for chapter in ("index.md", "arrays-and-dtypes.md", "transforms.md", "ir.md", "jit.md",
                    "control-flow.md", "custom-derivatives.md", "optim-and-data.md",
                    "backends.md", "sharp-bits.md"):
        assert chapter in names
    for p in GUIDE:
        assert python_blocks(p.read_text()), f"{p.name} has no runnable python block"


def test_block_extraction():
    text = "a\n```python\nx = 1\n```\n<!-- skip -->\n\n```python\nraise\n```\n```text\nno\n```\n"
    assert python_blocks(text) == [(3, "x = 1\n")]


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """Scratch working directory; environment and ember.config restored afterwards."""
    import ember.config
    monkeypatch.chdir(tmp_path)
    env = dict(os.environ)
    overrides = dict(ember.config._overrides)
    yield
    os.environ.clear()
    os.environ.update(env)
    ember.config._overrides.clear()
    ember.config._overrides.update(overrides)


@pytest.mark.parametrize("path", GUIDE, ids=lambda p: p.name)
def test_doc_code_runs(path, isolated, monkeypatch):
    # a real module, so that classes defined in the blocks (dataclasses) can find it
    module = types.ModuleType(f"ember_docs_{path.stem.replace('-', '_')}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    for line, source in python_blocks(path.read_text()):
        # pad so that tracebacks show the line numbers of the Markdown file
        code = compile("\n" * (line - 1) + source, str(path), "exec")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                exec(code, namespace)
            except Exception as e:
                raise AssertionError(f"{path.name}: the block starting on line {line} raised "
                                     f"{type(e).__name__}: {e}") from e
