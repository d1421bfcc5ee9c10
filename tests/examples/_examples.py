"""Loading an example script as a module, and checking the figures it writes."""
from __future__ import annotations

import importlib.util
import pathlib
import sys

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def load(name: str):
    """Import examples/<name>.py as `ember_example_<name>`, as `python examples/<name>.py`
    would see it (its folder first on sys.path, for `_common`)."""
    path = EXAMPLES / (name if name.endswith(".py") else f"{name}.py")
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    modname = "ember_example_" + path.stem
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod  # dataclasses/pickling inside the module can find it
    spec.loader.exec_module(mod)
    return mod


def assert_png(path) -> tuple[int, int]:
    """The file exists, is a PNG, and decodes to a non-empty RGB(A) image; returns (h, w)."""
    path = pathlib.Path(path)
    assert path.is_file(), f"no figure at {path}"
    assert path.read_bytes()[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    import matplotlib.image
    img = matplotlib.image.imread(str(path))
    assert img.ndim == 3 and img.shape[2] in (3, 4) and img.shape[0] > 50 and img.shape[1] > 50, img.shape
    return img.shape[:2]


def matplotlib_missing() -> bool:
    return importlib.util.find_spec("matplotlib") is None


def check_figure(figure, expected) -> None:
    """An example's returned figure path: the PNG at `expected`, or None when
    matplotlib is not installed (the examples then skip their figures)."""
    if matplotlib_missing():
        assert figure is None
        return
    assert pathlib.Path(figure) == pathlib.Path(expected)
    assert_png(expected)
