"""What every example shares: progress bars, an output folder, and saving figures.

The examples' extra (`pip install -e ".[examples]"`) brings tqdm and matplotlib;
without them the examples still run, print plain progress lines, and say which
figure they skipped and how to get it.

Example:
    >>> import argparse
    >>> ap = argparse.ArgumentParser(); add_output_args(ap, "runs/demo")
    >>> ap.parse_args([]).out_dir
    'runs/demo'
"""
from __future__ import annotations

import argparse
import os

try:
    from tqdm import tqdm as _tqdm
except ImportError:  # pragma: no cover - depends on the environment
    _tqdm = None

INSTALL_HINT = 'pip install -e ".[examples]"'


def add_output_args(ap: argparse.ArgumentParser, default_dir: str) -> None:
    """`--out-dir` (where figures and checkpoints go) and `--no-plot`."""
    ap.add_argument("--out-dir", default=default_dir,
                    help=f"folder for the figures (default: {default_dir})")
    ap.add_argument("--no-plot", action="store_true", help="write no figure")


class Progress:
    """A tqdm bar over `iterable` when tqdm is installed, else the bare iterable;
    `write` prints above the bar without breaking it."""

    def __init__(self, iterable, desc: str, **kw):
        self._bar = _tqdm(iterable, desc=desc, mininterval=1.0, **kw) if _tqdm else None
        self._it = iterable

    def __iter__(self):
        return iter(self._bar if self._bar is not None else self._it)

    def write(self, msg: str) -> None:
        if self._bar is not None:
            self._bar.write(msg)
        else:
            print(msg, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def pyplot(what: str):
    """matplotlib.pyplot on the file-only Agg backend, or None (with a message
    naming the skipped figure) when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed: skipping the {what} ({INSTALL_HINT} installs it)")
        return None
    return plt


def save_figure(fig, path: str) -> str:
    """Write `fig` as a PNG at `path` (creating its folder), close it, say where."""
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt
    plt.close(fig)
    print(f"wrote {path}")
    return path
