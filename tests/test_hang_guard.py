"""The suite's hang guard (tests/conftest.py): a hung test fails fast with its stack."""
import pathlib
import subprocess
import sys


def test_a_hung_test_fails_with_its_stack_instead_of_hanging(tmp_path):
    here = pathlib.Path(__file__).resolve().parent
    (tmp_path / "conftest.py").write_text((here / "conftest.py").read_text())
    (tmp_path / "test_sleeper.py").write_text("import time\n\ndef test_sleeps_too_long():\n    time.sleep(60)\n")
    env = {**__import__("os").environ, "EMBER_TEST_HANG_S": "1"}
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=50)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Timeout (0:00:01)!" in res.stderr
    assert "test_sleeper.py\", line 4 in test_sleeps_too_long" in res.stderr
