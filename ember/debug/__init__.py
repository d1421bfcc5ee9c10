"""Seeing inside programs: host callbacks and printing with concrete values
(`print`, `callback`, `print_grad`).

Example:
    >>> import ember
    >>> ember.debug.print("{} + {} = {}", 1, 2, 3)
    1 + 2 = 3
"""
from .callbacks import callback, print, print_grad  # noqa: F401,A004

__all__ = ["callback", "print", "print_grad"]
