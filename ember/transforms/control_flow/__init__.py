"""Control-flow primitives: cond/switch, while_loop/fori_loop, scan/map."""
from .cond import cond, switch, cond_p  # noqa: F401
from .scan import scan, map, scan_p  # noqa: F401
from .loops import while_loop, fori_loop, while_p  # noqa: F401
from .associative import associative_scan  # noqa: F401
