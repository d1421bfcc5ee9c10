"""The layer families of `ember.nn` (re-exported from `ember.nn`)."""
from .activation import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .embedding import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .recurrent import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
