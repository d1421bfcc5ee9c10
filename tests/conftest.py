"""Suite-wide settings: every graph any test stages is typechecked as it is built, and a hung test fails fast."""
import os

os.environ.setdefault("EMBER_TYPECHECK", "1")

import faulthandler

import pytest

# A test that hangs must fail CI with a stack trace, not run out CI's clock
# (a deadlocked DataLoader once did): past this many seconds the test process
# dumps every thread's stack to the real stderr and exits 1. The slowest test
# takes ~30 s on 2 cores; `-m slow` tests get ten times as long.
_HANG_S = float(os.environ.get("EMBER_TEST_HANG_S", "300"))
_stderr_fd = None


def pytest_configure(config):
    global _stderr_fd
    # Output capture is suspended here; during a test, fd 2 points at pytest's capture file.
    _stderr_fd = os.dup(2)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if _HANG_S > 0 and _stderr_fd is not None:
        limit = _HANG_S * (10 if item.get_closest_marker("slow") else 1)
        faulthandler.dump_traceback_later(limit, exit=True, file=_stderr_fd)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
