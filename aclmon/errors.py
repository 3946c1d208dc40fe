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


def no_such_file(path: object) -> str:
    """The one wording every command uses for a path that does not exist."""
    return f"{path}: no such file or directory"
