"""The primitive families.  Importing this package registers every primitive."""
from . import rules  # noqa: F401
from . import elementwise, convert, shape, reduce  # noqa: F401
