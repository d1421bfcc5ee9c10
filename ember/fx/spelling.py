"""How values are spelled in user-facing error messages.

The IR printer writes types as ``f32[3,4]``; a user typed ``float32``, so
every error message a user can see formats abstract values with ``user_str``
(which leaves anything that is not an abstract value as ``str`` has it).

Example:
    >>> from ember.fx.core import AbstractArray
    >>> user_str(AbstractArray((3, 4), "bfloat16"))
    'bfloat16[3,4]'
    >>> user_str((2, 3))
    '(2, 3)'
"""

from __future__ import annotations

__all__ = ["user_str"]


def user_str(v) -> str:
    """``v.str_user()`` for an abstract value (or anything with an ``aval``
    that is not itself printable as an array), ``str(v)`` otherwise.

    Example:
        >>> from ember.fx.core import AbstractArray
        >>> f"got {user_str(AbstractArray((), 'int32'))}"
        'got int32[]'
    """
    from .core import AbstractArray
    if isinstance(v, AbstractArray):
        return v.str_user()
    return str(v)
