"""Reading a text file while its writer still appends to it.

A log or JSON-lines file is read in bounded chunks from where the last read
stopped; only whole lines are handed on, and the line the last chunk cut in two
waits for the next read. A file replaced (another inode) or cut shorter is read
again from its start.
"""

from __future__ import annotations

import os
from pathlib import Path


class GrowingFile:
    """Where a reader is in one followed file, and the line its last read cut in two."""

    __slots__ = ("inode", "limit", "offset", "partial", "path")

    def __init__(self, path: Path, limit: int, offset: int = 0, inode: int = -1) -> None:
        self.path = path
        #: the longest unfinished line kept (longer: the file has no lines to speak of)
        self.limit = limit
        self.offset = offset
        self.inode = inode
        self.partial = b""

    def restart_if_replaced(self, info: os.stat_result) -> None:
        """Read from the start again if the path now names another file or a shorter one."""
        if info.st_ino != self.inode or info.st_size < self.offset:
            self.inode = info.st_ino
            self.offset = 0
            self.partial = b""

    def resume_at(self, offset: int) -> int:
        """Go on from ``offset``, leaving what lies before it unread; returns the bytes skipped."""
        skipped = offset - self.offset
        self.offset = offset
        self.partial = b""
        return skipped

    def whole_lines(self, data: bytes) -> bytes:
        """The whole lines that ``data``, read at :attr:`offset`, completes."""
        self.offset += len(data)
        data = self.partial + data
        cut = data.rfind(b"\n") + 1
        self.partial = data[cut:]
        if len(self.partial) > self.limit:  # no newline for ages: not line text
            self.partial = b""
        return data[:cut]
