"""Every `Example:` block in ember's docstrings runs: a documented feature must exist."""
import doctest
import importlib
import pkgutil

import pytest

import ember

MODULES = sorted(m.name for m in pkgutil.walk_packages(ember.__path__, "ember.")
                 if ".cuda" not in m.name)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name):
        if test.examples:
            runner.run(test, out=lambda s: None)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}; run " \
                               f"`python -m pytest --doctest-modules {module.__file__}` to see them"
