"""The simulated runtime's application log (plog), written as CANN writes it.

Line format (docs/reference/logs.md)::

    [LEVEL] MODULE(PID,PNAME):YYYY-MM-DD-HH:MM:SS.mmm.uuu [file:line]TID function: text

Files go to ``{base}/debug/plog/plog-{pid}_{YYYYmmddHHMMSSmmm}.log`` where
``{base}`` is ``ASCEND_PROCESS_LOG_PATH`` > ``ASCEND_WORK_PATH/log`` >
``$HOME/ascend/log`` (the newer layout). ``ASCEND_GLOBAL_LOG_LEVEL`` (0 DEBUG,
1 INFO, 2 WARNING, 3 ERROR = default, 4 NULL) filters lines and
``ASCEND_SLOG_PRINT_TO_STDOUT=1`` prints them to stdout instead of the file.
Like the real log, lines are buffered in memory and written when an ERROR line
arrives, when the buffer is full, at ``acl.finalize`` and at interpreter exit,
so the newest INFO/WARNING lines may appear only then.

The writer never raises into the job: a log directory that cannot be created
or written turns the file output off (one line on stderr says why).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from pathlib import Path

LEVEL_DEBUG = 0
LEVEL_INFO = 1
LEVEL_WARNING = 2
LEVEL_ERROR = 3
LEVEL_NULL = 4
LEVEL_NAMES = {LEVEL_DEBUG: "DEBUG", LEVEL_INFO: "INFO", LEVEL_WARNING: "WARNING", 3: "ERROR"}
DEFAULT_LEVEL = LEVEL_ERROR

#: lines kept in memory before they are written even without an ERROR.
BUFFER_LINES = 256

PATH_ENV = "ASCEND_PROCESS_LOG_PATH"
WORK_PATH_ENV = "ASCEND_WORK_PATH"
LEVEL_ENV = "ASCEND_GLOBAL_LOG_LEVEL"
STDOUT_ENV = "ASCEND_SLOG_PRINT_TO_STDOUT"


def _process_name() -> str:
    try:
        return Path("/proc/self/comm").read_text(encoding="utf-8").strip() or "python3"
    except OSError:
        return os.path.basename(sys.executable) or "python3"


def format_time(epoch_ns: int) -> str:
    """``YYYY-MM-DD-HH:MM:SS.mmm.uuu`` (local time), the plog time stamp."""
    seconds, rest_ns = divmod(epoch_ns, 1_000_000_000)
    micros = rest_ns // 1000
    stamp = time.strftime("%Y-%m-%d-%H:%M:%S", time.localtime(seconds))
    return f"{stamp}.{micros // 1000:03d}.{micros % 1000:03d}"


def log_base() -> Path:
    """``$ASCEND_PROCESS_LOG_PATH``, else ``$ASCEND_WORK_PATH/log`` (CANN keeps
    each component's files in its own directory under the work path), else
    ``$HOME/ascend/log``."""
    value = os.environ.get(PATH_ENV, "").strip()
    if value:
        return Path(value).expanduser()
    value = os.environ.get(WORK_PATH_ENV, "").strip()
    if value:
        return Path(value).expanduser() / "log"
    return Path.home() / "ascend" / "log"


def _level_from_env() -> int:
    raw = os.environ.get(LEVEL_ENV, "").strip()
    if raw.isdigit() and 0 <= int(raw) <= LEVEL_NULL:
        return int(raw)
    return DEFAULT_LEVEL


class PlogWriter:
    """One process's plog: buffered lines, one file created on the first write."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[str] = []
        self._path: Path | None = None
        self._broken = False
        self._base: Path | None = None
        self.pid = os.getpid()
        self.pname = _process_name()
        self.reconfigure()

    def reconfigure(self) -> None:
        """Read the environment again (acl.init does this, as CANN reads it at start)."""
        with self._lock:
            self._flush_locked()
            self.level = _level_from_env()
            self.to_stdout = os.environ.get(STDOUT_ENV, "").strip() == "1"
            base = log_base()
            if self.pid != os.getpid() or base != self._base:
                # a forked child writes its own file; a new directory gets a new file
                self.pid = os.getpid()
                self._base = base
                self._path = None
                self._broken = False

    @property
    def path(self) -> Path | None:
        """The file this process writes (None until the first line is written)."""
        return self._path

    def enabled(self, level: int) -> bool:
        return level >= self.level and self.level < LEVEL_NULL

    def write(
        self, level: int, module: str, source: str, function: str, text: str, *, flush: bool = False
    ) -> None:
        """Queue one entry; ERROR entries (and ``flush``) write everything queued."""
        if not self.enabled(level):
            return
        line = (
            f"[{LEVEL_NAMES[level]}] {module}({self.pid},{self.pname}):"
            f"{format_time(time.time_ns())} [{source}]{threading.get_native_id()} "
            f"{function}: {text}\n"
        )
        with self._lock:
            self._pending.append(line)
            if flush or level >= LEVEL_ERROR or len(self._pending) >= BUFFER_LINES:
                self._flush_locked()

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        if not self._pending:
            return
        text = "".join(self._pending)
        self._pending.clear()
        if self.to_stdout:
            try:
                sys.stdout.write(text)
                sys.stdout.flush()
            except (OSError, ValueError):
                pass
            return
        if self._broken:
            return
        try:
            if self._path is None:
                directory = (self._base or log_base()) / "debug" / "plog"
                directory.mkdir(parents=True, exist_ok=True)
                now = time.time()
                stamp = time.strftime("%Y%m%d%H%M%S", time.localtime(now))
                stamp += f"{int(now * 1000) % 1000:03d}"
                self._path = directory / f"plog-{self.pid}_{stamp}.log"
            # the tree may have been cleaned up under a running job: make it again
            self._path.parent.mkdir(parents=True, exist_ok=True)
            with open(self._path, "a", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            self._broken = True
            print(f"acl (sim): cannot write the plog: {exc}", file=sys.stderr)


WRITER = PlogWriter()
atexit.register(WRITER.flush)
