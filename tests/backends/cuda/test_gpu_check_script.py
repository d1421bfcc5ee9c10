"""benchmarks/gpu/check.sh, the prepared GPU-machine check: valid bash, and
every test file it runs exists (it runs only what the CUDA backend has)."""
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "benchmarks" / "gpu" / "check.sh"


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_check_script_is_valid_bash():
    out = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_check_script_runs_existing_tests_and_writes_under_out():
    text = SCRIPT.read_text()
    paths = re.findall(r"tests/[\w/]+\.py", text)
    assert "tests/backends/cuda/test_nvrtc_compile.py" in paths
    assert [p for p in paths if not (ROOT / p).exists()] == []
    assert "-m gpu tests/backends" in text and "--no-deps" in text and '${1:-${OUT:-' in text
