"""Run nested coroutines on an explicit stack: a generator yields a request for
a sub-computation, `spawn(request)` turns it into a generator, and the result
is sent back where the request was made — so walks over nested sub-graphs or
nested params (the IR parser, the ONNX converter) need no recursion.

Example:
    >>> def depth(n):
    ...     return 0 if n == 0 else 1 + (yield n - 1)
    >>> run(depth(5000), depth)
    5000
"""
from __future__ import annotations


def run(first, spawn):
    """The value `first` returns, its requests served by `spawn(request)`."""
    stack, send = [first], None
    while True:
        try:
            req = stack[-1].send(send)
        except StopIteration as stop:
            stack.pop()
            if not stack:
                return stop.value
            send = stop.value
            continue
        send = None
        stack.append(spawn(req))
