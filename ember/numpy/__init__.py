"""`ember.numpy`: the Python array API standard namespace, composed from primitives."""
from ._core import asarray, array, broadcast_shapes, broadcast_to  # noqa: F401
from ._elementwise import *  # noqa: F401,F403
from . import linalg, fft  # noqa: E402,F401
