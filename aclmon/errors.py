"""The package's own error type.

Every decoder (frames, recordings, dump headers, overflow records) raises only
:class:`AclmonError` subclasses on bad input, so callers can catch one type and
show one clear message.
"""

from __future__ import annotations


class AclmonError(Exception):
    """Base of every error aclmon raises on purpose."""


class DecodeError(AclmonError):
    """Hostile or damaged input: names the source and the byte offset."""

    def __init__(self, source: str, offset: int, reason: str) -> None:
        self.source = source
        self.offset = offset
        self.reason = reason
        super().__init__(f"{source}: at byte {offset}: {reason}")


class CommandRefused(AclmonError):
    """A command that is not sent: the viewer or its credentials are read-only,
    the agent is not connected, the kind is not a command, or the source has no
    agent behind it. (A command that was sent and got no reply is a
    :class:`~aclmon.bus.CommandTimeout`.)"""


def no_such_file(path: object) -> str:
    """The one wording every command uses for a path that does not exist."""
    return f"{path}: no such file or directory"
