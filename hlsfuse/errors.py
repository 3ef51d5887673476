"""The one exception type hlsfuse raises for bad user input.

Messages are one line and say what, where and what was expected, e.g.
``node 'c1' (conv2d): input 'w' must have 4 dims, not 3``.
The CLI prints them without a traceback and exits with code 2.
"""

__all__ = ["HlsfuseError", "OpError"]


class HlsfuseError(Exception):
    """A user error: malformed graph, bad attribute, unreadable file, missing tool."""


class OpError(HlsfuseError):
    """Raised by an op's rules; ``verify`` prefixes it with the node's name and op."""
