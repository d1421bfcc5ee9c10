"""The primitive families.  Importing this package registers every primitive."""
from . import rules  # noqa: F401
from . import elementwise, convert, shape, reduce  # noqa: F401
from . import cumulative, sort  # noqa: F401
from . import contraction, conv, window  # noqa: F401
from . import linalg, linalg_hessenberg, linalg_qr_pivots, linalg_sqrtm, fft  # noqa: F401
from . import indexing  # noqa: F401
from . import collective  # noqa: F401
from . import callback  # noqa: F401  (ember.debug)
from . import taylor  # noqa: F401  (Taylor rules, after every family)
