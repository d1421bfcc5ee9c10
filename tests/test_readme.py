"""The README's 30-second tour runs, and its printed IR is what ember prints."""
import contextlib
import io
import pathlib
import re

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def test_readme_tour_runs_and_shows_the_real_ir():
    text = README.read_text()
    code = re.search(r"## A 30-second tour\n\n```python\n(.*?)```", text, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {})
    shown = "\n".join(line[2:] for line in code.splitlines() if line.startswith("# ") or line == "#")
    assert out.getvalue().strip() == shown.strip()
