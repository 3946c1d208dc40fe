"""CANN application logs (plog): finding a process's log files and parsing their entries.

The format (docs/reference/logs.md): one entry starts with a header line ::

    [LEVEL] MODULE(PID,PNAME):YYYY-MM-DD-hh:mm:ss.mmm.uuu [file.cc:123]text

``LEVEL`` is ``ERROR``, ``WARNING``, ``INFO``, ``DEBUG`` or (newer releases)
``EVENT``; the time has milliseconds and, in most releases, microseconds
(``.mmm`` alone in some); the ``[file:line]`` part may be missing. An entry
may continue over further lines until the next header. Lines before the first
header, and header-like lines that do not parse, are garbage: counted, never
raised.

Where the files are: under ``$ASCEND_PROCESS_LOG_PATH`` if set, else
``$ASCEND_WORK_PATH/log``, else ``$HOME/ascend/log``; host logs are ``plog-{pid}_{timestamp}.log`` and logs the
device sent back for the process ``device-{pid}_{timestamp}.log``, in ``plog/``
and ``device-{id}/`` (older releases) or under ``debug/`` and ``run/`` (newer
ones): :func:`find_log_files` searches the whole tree for the pid, bounded.

Plain Python, no numpy: the agent imports this inside the job.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aclmon.dump.walk import walk_files

#: levels in order of severity (EVENT is a separate category: below WARNING here)
LEVELS = ("debug", "info", "event", "warning", "error")
LEVEL_RANK = {name: rank for rank, name in enumerate(LEVELS)}
#: an entry keeps at most this many continuation lines and characters (the rest is cut,
#: counted in ``PlogParser.truncated``)
MAX_ENTRY_LINES = 200
MAX_ENTRY_CHARS = 16_384
#: directories searched below the log root, and entries looked at, at most
MAX_DEPTH = 5
MAX_SCAN_ENTRIES = 20_000

_HEADER = re.compile(
    r"\[(ERROR|WARNING|INFO|DEBUG|EVENT)\] "
    r"([A-Za-z0-9_.\-]+)\((\d{1,10}),([^)]*)\):"
    r"(\d{4})-(\d{2})-(\d{2})-(\d{2}):(\d{2}):(\d{2})\.(\d{3})(?:\.(\d{3}))?"
    r" ?(?:\[([^\[\]]*):(\d{1,9})\])?"
    r"(.*)"
)
#: what makes a line look like it wants to be a header
_HEADER_START = re.compile(r"\[(ERROR|WARNING|INFO|DEBUG|EVENT)\] ")
#: control characters other than tab: a line holding one is not log text
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_LOG_NAME = re.compile(r"(plog|device)-(\d+)_\d+\.log\Z")


@dataclass(frozen=True)
class PlogEntry:
    """One parsed log entry (a header line and its continuation lines)."""

    level: str  # lower case: "error", "warning", "info", "debug", "event"
    module: str
    pid: int
    process: str
    logged_ns: int  # the header's time read in the local time zone, 0 if invalid
    location: str  # "file.cc:123", "" when the header has none
    text: str  # the message; continuation lines joined with "\n"
    line: int  # 1-based line number of the header in its file (or feed)

    def log_line_fields(self, path: str | os.PathLike[str]) -> tuple[Any, ...]:
        """The fields of :class:`aclmon.events.LogLine` after ``seq`` and ``ts_ns``,
        for this entry read from ``path``."""
        return (
            self.level,
            self.text,
            self.module,
            self.pid,
            self.process,
            self.logged_ns,
            self.location,
            str(path),
        )


def logged_ns(fields: tuple[str | None, ...]) -> int:
    """A header's time as ns since the epoch, read in the local time zone (0: impossible)."""
    year, month, day, hour, minute, second, millis, micros = (int(f or 0) for f in fields)
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second <= 60):
        return 0
    try:
        seconds = int(time.mktime((year, month, day, hour, minute, second, 0, 0, -1)))
    except (OverflowError, ValueError):
        return 0
    return seconds * 1_000_000_000 + millis * 1_000_000 + micros * 1_000


class PlogParser:
    """Turns log lines into :class:`PlogEntry` objects, incrementally.

    :meth:`feed` takes lines as they come (a file read in pieces) and returns the
    entries that are complete, i.e. followed by the next header; :meth:`flush`
    returns the one still open (at the end of a file, or when its writer has
    gone quiet). ``garbage`` counts lines that belong to no entry, ``truncated``
    the continuation lines cut from long entries. Never raises on any text.
    """

    def __init__(self) -> None:
        self.garbage = 0
        self.truncated = 0
        self.lines = 0
        self._open: tuple[PlogEntry, list[str], int] | None = None

    def feed(self, lines: Iterable[str]) -> list[PlogEntry]:
        done: list[PlogEntry] = []
        for raw in lines:
            self.lines += 1
            line = raw.rstrip("\r\n")
            match = _HEADER.match(line) if line.startswith("[") else None
            if match is not None and not _CONTROL.search(line):
                finished = self.flush()
                if finished is not None:
                    done.append(finished)
                level, module, pid, process = match.group(1, 2, 3, 4)
                file, number, text = match.group(13, 14, 15)
                entry = PlogEntry(
                    level.lower(),
                    module,
                    int(pid),
                    process,
                    logged_ns(match.group(5, 6, 7, 8, 9, 10, 11, 12)),
                    f"{file}:{number}" if file is not None else "",
                    text.strip(),
                    self.lines,
                )
                self._open = (entry, [], len(entry.text))
                continue
            if self._open is None or _HEADER_START.match(line) or _CONTROL.search(line):
                # Before any entry, a header that does not parse, or binary junk: it
                # belongs to no entry. A broken header also ends the open entry.
                self.garbage += 1
                if self._open is not None and not _CONTROL.search(line):
                    finished = self.flush()
                    if finished is not None:
                        done.append(finished)
                continue
            entry, more, chars = self._open
            if len(more) >= MAX_ENTRY_LINES or chars + len(line) > MAX_ENTRY_CHARS:
                self.truncated += 1
                continue
            more.append(line)
            self._open = (entry, more, chars + len(line) + 1)
        return done

    def flush(self) -> PlogEntry | None:
        """The entry still open (complete as far as anyone knows), if any."""
        if self._open is None:
            return None
        entry, more, _ = self._open
        self._open = None
        if not more:
            return entry
        while more and not more[-1].strip():
            more.pop()  # blank lines between entries are not part of the message
        text = "\n".join([entry.text, *more]) if more else entry.text
        return PlogEntry(
            entry.level,
            entry.module,
            entry.pid,
            entry.process,
            entry.logged_ns,
            entry.location,
            text,
            entry.line,
        )

    @property
    def pending(self) -> bool:
        return self._open is not None


def parse_text(text: str) -> tuple[list[PlogEntry], PlogParser]:
    """Every entry of ``text`` (a whole file's contents), and the parser with its counts."""
    parser = PlogParser()
    entries = parser.feed(text.splitlines())
    last = parser.flush()
    if last is not None:
        entries.append(last)
    return entries, parser


def parse_file(
    path: str | os.PathLike[str], max_bytes: int = 64 * 1024 * 1024
) -> tuple[list[PlogEntry], PlogParser]:
    """Every entry of one log file (at most its first ``max_bytes``). Undecodable
    bytes become U+FFFD; a line holding control characters counts as garbage.
    Raises ``OSError`` if the file cannot be read."""
    with open(path, "rb") as handle:
        data = handle.read(max_bytes)
    return parse_text(data.decode("utf-8", "replace"))


def log_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where the process's CANN logs go: ``$ASCEND_PROCESS_LOG_PATH``, else
    ``$ASCEND_WORK_PATH/log`` (the work path holds one directory per kind of
    file), else ``$HOME/ascend/log``."""
    env = os.environ if environ is None else environ
    configured = env.get("ASCEND_PROCESS_LOG_PATH", "").strip()
    if configured:
        return Path(configured).expanduser()
    work = env.get("ASCEND_WORK_PATH", "").strip()
    if work:
        return Path(work).expanduser() / "log"
    return Path(env.get("HOME") or os.path.expanduser("~")) / "ascend" / "log"


def logs_go_to_stdout(environ: Mapping[str, str] | None = None) -> bool:
    """``ASCEND_SLOG_PRINT_TO_STDOUT=1``: the runtime prints its log instead of writing files."""
    env = os.environ if environ is None else environ
    return env.get("ASCEND_SLOG_PRINT_TO_STDOUT", "").strip() == "1"


def log_file_pid(name: str) -> int | None:
    """The pid in a ``plog-{pid}_{ts}.log`` / ``device-{pid}_{ts}.log`` name, else None."""
    match = _LOG_NAME.match(name)
    return int(match.group(2)) if match is not None else None


def find_log_files(root: str | os.PathLike[str], pid: int | None = None) -> list[Path]:
    """The plog/device log files under ``root`` (of process ``pid`` only, if given),
    in name order. Bounded in depth and in entries looked at; unreadable
    directories are skipped."""
    found: list[Path] = []
    for entry in walk_files(root, MAX_DEPTH, MAX_SCAN_ENTRIES, ordered=True):
        file_pid = log_file_pid(entry.name)
        if file_pid is not None and (pid is None or file_pid == pid):
            found.append(Path(entry.path))
    return sorted(found, key=lambda p: (p.name, str(p)))


def at_least(level: str, threshold: str) -> bool:
    """``level`` is ``threshold`` or more severe (unknown levels never are)."""
    return LEVEL_RANK.get(level, -1) >= LEVEL_RANK.get(threshold, len(LEVELS))
