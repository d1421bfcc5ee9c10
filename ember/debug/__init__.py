"""Seeing inside programs: host callbacks and printing with concrete values
(`print`, `callback`, `print_grad`) and the NaN/Inf locator (`nans`,
`config.update("debug_nans", True)`).

Example:
    >>> import ember
    >>> ember.debug.print("{} + {} = {}", 1, 2, 3)
    1 + 2 = 3
"""
from .callbacks import callback, print, print_grad  # noqa: F401,A004
from . import nans  # noqa: F401  (EMBER_DEBUG_NANS=1 turns the locator on at import)

__all__ = ["callback", "print", "print_grad"]
