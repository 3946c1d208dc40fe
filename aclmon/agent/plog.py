"""Following the job's own CANN log (plog) and publishing its warnings and errors.

Runs on the agent's control thread (never on a job thread), a bounded amount
per poll: it finds this process's log files (``plog-{pid}_*.log`` and
``device-{pid}_*.log`` under ``$ASCEND_PROCESS_LOG_PATH``,
``$ASCEND_WORK_PATH/log`` or ``$HOME/ascend/log``, old and new layouts;
:mod:`aclmon.dump.plog`), reads what was appended since the last poll, parses it into entries (multi-line
entries whole) and publishes each entry of level WARNING or above as a
:class:`~aclmon.events.LogLine`. At most ``RATE`` lines a second go out (a
burst of ``BURST``); the rest are counted and reported as
:class:`~aclmon.events.Drops` (``where = "plog tail"``).

Its work is bounded whatever the job logs, so that a CPU-bound job never
notices it (the control thread shares the job's GIL): at most ``PARSE_RATE``
bytes a second are read and parsed over all files. A burst that leaves more
than ``MAX_BACKLOG`` unread is skipped to its newest part (the newest lines are
the ones a person needs first), and the bytes skipped are counted and reported
as ``Drops`` (``where = "plog tail (bytes skipped)"``).

A file is opened non-blocking and followed only while it is a regular file: one
replaced by a FIFO (or a symlink to one, or a device) would otherwise block the
agent in ``open()`` for ever; it is said once and left alone.

Files that exist when the tail is made (as the agent starts) are followed
from where they ended then (the lines are older than the agent); files that
appear later from their start, even those that appear before the first poll. The
runtime buffers its log and flushes on errors and at exit, so lines arrive in
bursts. With ``ASCEND_SLOG_PRINT_TO_STDOUT=1`` the runtime writes no files:
the tail says so once and does nothing.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from aclmon.dump.plog import (
    PlogEntry,
    PlogParser,
    at_least,
    find_log_files,
    log_root,
    logs_go_to_stdout,
)
from aclmon.events import Drops, LogLine, optypes
from aclmon.growing_file import GrowingFile

if TYPE_CHECKING:
    from aclmon.agent.context import AgentContext

#: lines published per second at most, and the burst allowed above that
RATE = 50.0
BURST = 200.0
#: bytes read per file and per poll, at most; files followed at most
READ_PER_FILE = 256 * 1024
#: bytes read and parsed per second at most, over every file (parsing costs the
#: control thread, and so the job's GIL, about 50 ns a byte)
PARSE_RATE = 64 * 1024
#: an unread part larger than this (a burst) is skipped to its newest PARSE_RATE bytes
MAX_BACKLOG = 4 * PARSE_RATE
MAX_FILES = 16
#: look for new log files this often
DISCOVER_INTERVAL_S = 2.0
#: the lowest level published
THRESHOLD = "warning"


class _Followed(GrowingFile):
    __slots__ = ("not_regular", "parser")

    def __init__(self, path: Path, offset: int, inode: int) -> None:
        super().__init__(path, READ_PER_FILE, offset, inode)
        self.parser = PlogParser()
        #: said once: it is not a regular file (a FIFO, a device), so it is not read
        self.not_regular = False


class PlogTail:
    """See the module docstring. :meth:`poll` is called by the control thread."""

    def __init__(
        self,
        ctx: AgentContext,
        pid: int | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.ctx = ctx
        self.pid = os.getpid() if pid is None else pid
        env = dict(os.environ if environ is None else environ)
        self.root = log_root(env)
        self.to_stdout = logs_go_to_stdout(env)
        self.files: dict[Path, _Followed] = {}
        self.published = 0
        self.dropped = 0
        #: told of every entry read, whatever its level (the live triage)
        self.on_entry: Callable[[PlogEntry], None] | None = None
        self._reported_drops = 0
        #: bytes of log skipped after bursts (counted, reported as Drops)
        self.skipped_bytes = 0
        self._reported_skips = 0
        self._byte_tokens = float(PARSE_RATE)
        self._tokens = BURST
        self._refilled = time.monotonic()
        self._discovered = 0.0
        self._byte_refilled = time.monotonic()
        self._started = False
        #: the files there when the tail was made (before the agent's own first
        #: calls): their lines are older than the agent, the rest is news
        self._older: dict[Path, int] = {}
        if not self.to_stdout:
            for path in find_log_files(self.root, self.pid)[:MAX_FILES]:
                with contextlib.suppress(OSError):
                    self._older[path] = os.stat(path).st_size

    def poll(self, final: bool = False) -> int:
        """One pass: new files, new lines; returns the lines published. ``final``
        (the job is ending): look for new files now, not at the next interval."""
        if not self._started:
            self._started = True
            if self.to_stdout:
                self.ctx.log_line(
                    "info",
                    "CANN logs go to stdout (ASCEND_SLOG_PRINT_TO_STDOUT=1): no plog files to"
                    " follow",
                )
                return 0
            self._discover()
        if self.to_stdout:
            return 0
        now = time.monotonic()
        if final or now - self._discovered >= DISCOVER_INTERVAL_S:
            self._discover()
        self._byte_tokens = min(
            float(PARSE_RATE), self._byte_tokens + (now - self._byte_refilled) * PARSE_RATE
        )
        self._byte_refilled = now
        published = 0
        for followed in list(self.files.values()):
            published += self._read(followed)
        if self.skipped_bytes != self._reported_skips:
            self._reported_skips = self.skipped_bytes
            self.ctx.emit(
                Drops,
                self.skipped_bytes,
                "plog tail (bytes skipped)",
                f"a burst of more than {MAX_BACKLOG // 1024} KiB of log: the older part was"
                f" skipped and the newest read first (at most {PARSE_RATE // 1024} KiB/s are"
                " parsed)",
            )
        if self.dropped != self._reported_drops:
            self._reported_drops = self.dropped
            self.ctx.emit(
                Drops,
                self.dropped,
                "plog tail",
                f"more than {RATE:g} log lines a second",
            )
        return published

    def _discover(self) -> None:
        self._discovered = time.monotonic()
        for path in find_log_files(self.root, self.pid):
            if path in self.files or len(self.files) >= MAX_FILES:
                continue
            try:
                info = os.stat(path)
            except OSError:
                continue
            # There before the tail: follow from where it was then; new: from the start
            # (a file the agent's own first calls made, before the first poll, is news).
            self.files[path] = _Followed(path, self._older.pop(path, 0), info.st_ino)

    def _read(self, followed: _Followed) -> int:
        try:
            # Never blocks: a FIFO put in the file's place opens at once, and is
            # then seen for what it is.
            fd = os.open(followed.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return 0
        with os.fdopen(fd, "rb") as handle:
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    if followed.not_regular:
                        return 0
                    followed.not_regular = True
                    self.ctx.log_line(
                        "warning",
                        f"plog tail: {followed.path} is not a regular file any more"
                        " (a FIFO or a device?): not read",
                    )
                    last = followed.parser.flush()  # the file's last entry is complete
                    return self._publish(last, followed.path) if last is not None else 0
                followed.not_regular = False
                followed.restart_if_replaced(info)
                if info.st_size - followed.offset > MAX_BACKLOG:
                    self._skip_to_newest(followed, handle, info.st_size)
                budget = min(READ_PER_FILE, int(self._byte_tokens))
                if budget <= 0 and info.st_size > followed.offset:
                    return 0  # this second's share is spent: the rest waits, unparsed
                handle.seek(followed.offset)
                data = handle.read(budget)
            except OSError:
                return 0
        self._byte_tokens -= len(data)
        entries: list[PlogEntry] = []
        if data:
            lines = followed.whole_lines(data).decode("utf-8", "replace").splitlines()
            entries = followed.parser.feed(lines)
        else:
            # The writer is quiet: the open entry is as complete as it gets.
            last = followed.parser.flush()
            if last is not None:
                entries = [last]
        if self.on_entry is not None:
            for entry in entries:
                self.on_entry(entry)
        return sum(self._publish(entry, followed.path) for entry in entries)

    def _skip_to_newest(self, followed: _Followed, handle: BinaryIO, size: int) -> None:
        """Leave a burst's older part unread: go on from the first whole line of
        its newest PARSE_RATE bytes, counting what is skipped."""
        start = size - PARSE_RATE
        handle.seek(start)
        head = handle.read(min(PARSE_RATE, 64 * 1024))
        newline = head.find(b"\n")
        resume = start + newline + 1 if newline >= 0 else size
        self.skipped_bytes += followed.resume_at(resume)
        followed.parser = PlogParser()  # an entry cut in two is not half published

    def _publish(self, entry: PlogEntry, path: Path) -> int:
        if not at_least(entry.level, THRESHOLD):
            return 0
        # GE names the type of an operator that raised an AI Core exception here:
        # the next exception of that operator carries it (viewers fill in this one).
        named = optypes.from_log_text(entry.text)
        if named is not None:
            self.ctx.state.learn_op_type(*named)
        now = time.monotonic()
        self._tokens = min(BURST, self._tokens + (now - self._refilled) * RATE)
        self._refilled = now
        if self._tokens < 1.0:
            self.dropped += 1
            return 0
        self._tokens -= 1.0
        self.published += 1
        self.ctx.emit(LogLine, *entry.log_line_fields(path))
        return 1
