"""Test configuration for the LLVM toolkit: every test session gets its own
object-code cache directory so tests never read or write ~/.cache/ember."""

import os
import sys

import pytest

# the helper module next to this file (mathlib_cases) must be importable
# however pytest was asked to import the tests
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    old = os.environ.get("EMBER_CACHE_DIR")
    os.environ["EMBER_CACHE_DIR"] = str(tmp_path_factory.mktemp("ember-cache"))
    yield
    if old is None:
        os.environ.pop("EMBER_CACHE_DIR", None)
    else:
        os.environ["EMBER_CACHE_DIR"] = old
