"""Forwarding the job's own stdout and stderr as log lines (``aclmon run --capture-output``).

File descriptors 1 and 2 of the process are replaced by the write ends of two
pipes. One reader thread per pipe (never a job thread) writes everything it
reads to the original descriptor at once and unchanged, so the terminal or
file still gets every byte, then publishes each complete line as a
:class:`~aclmon.events.LogLine` whose ``module`` says where it came from
(``"stdout"`` or ``"stderr"``), level ``info``. Colour sequences are removed
from the published text (not from what is written through), a carriage
return keeps only what was drawn last (progress bars), and a line longer than
``MAX_LINE`` characters is cut. At most ``RATE`` lines a second go out (a
burst of ``BURST``, both streams together); the rest are still written
through, counted and reported as :class:`~aclmon.events.Drops` (``where =
"job output"``).

It is opt-in because the job sees the difference: its stdout and stderr are
pipes, not a terminal, so ``isatty()`` is False and Python and C libraries
buffer by block instead of by line. Under ``aclmon demo`` the job writes to a
log file anyway, so nothing changes for it there. Child processes inherit the
pipes: one that outlives the job and writes afterwards finds no reader (EPIPE,
or SIGPIPE if it does not ignore it), where it would have written to the
terminal.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import time
from typing import TYPE_CHECKING

from aclmon.events import Drops, LogLine

if TYPE_CHECKING:
    from aclmon.agent.context import AgentContext

#: lines published per second at most, and the burst allowed above that
RATE = 200.0
BURST = 1000.0
#: characters of one line published at most
MAX_LINE = 2000
#: the descriptors captured, and the tag their lines get
STREAMS = ((1, "stdout"), (2, "stderr"))
_READ = 64 * 1024
_COLOUR = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def line_text(raw: bytes) -> str:
    """What a viewer is shown of one line the job wrote."""
    text = raw.decode("utf-8", "replace").rstrip("\r")
    text = text.rsplit("\r", 1)[-1]  # a redrawn line: what is left on the screen
    text = _COLOUR.sub("", text)
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 1] + "…"


class _Pipe:
    __slots__ = ("fd", "name", "reader", "saved", "thread")

    def __init__(self, fd: int, name: str, reader: int, saved: int) -> None:
        self.fd = fd
        self.name = name
        self.reader = reader
        self.saved = saved
        self.thread: threading.Thread | None = None


class OutputCapture:
    """See the module docstring: :meth:`start` once, :meth:`stop` when the job is done."""

    def __init__(self, ctx: AgentContext, streams: tuple[tuple[int, str], ...] = STREAMS) -> None:
        self.ctx = ctx
        self.streams = streams
        self.pipes: list[_Pipe] = []
        self.published = 0
        self.dropped = 0
        self._reported = 0
        self._tokens = BURST
        self._refilled = time.monotonic()
        self._lock = threading.Lock()

    def start(self) -> None:
        for fd, name in self.streams:
            _flush()
            saved = os.dup(fd)
            reader, writer = os.pipe()
            os.dup2(writer, fd)
            os.close(writer)
            pipe = _Pipe(fd, name, reader, saved)
            pipe.thread = threading.Thread(
                target=self._pump, args=(pipe,), name=f"aclmon-{name}", daemon=True
            )
            pipe.thread.start()
            self.pipes.append(pipe)

    def stop(self, timeout: float = 1.0) -> None:
        """Put the original descriptors back and publish what is left. A child
        process that still holds a pipe keeps its reader going (a daemon thread)."""
        _flush()
        for pipe in self.pipes:
            with contextlib.suppress(OSError):
                os.dup2(pipe.saved, pipe.fd)  # closes the pipe's last write end
        for pipe in self.pipes:
            if pipe.thread is not None:
                pipe.thread.join(timeout)
        self.pipes = []
        self._report_drops()

    def _pump(self, pipe: _Pipe) -> None:
        partial = b""
        write_through = True
        try:
            while True:
                try:
                    data = os.read(pipe.reader, _READ)
                except InterruptedError:
                    continue
                except OSError:
                    break
                if not data:
                    break
                if write_through:
                    write_through = _write_all(pipe.saved, data)
                *lines, partial = (partial + data).split(b"\n")
                if len(partial) > MAX_LINE * 4:  # no newline for ages: publish what there is
                    lines.append(partial)
                    partial = b""
                for line in lines:
                    self._publish(pipe.name, line)
            if partial:
                self._publish(pipe.name, partial)
        except Exception as exc:  # the job's output must keep flowing whatever happens here
            self.ctx.fail(f"{pipe.name} capture", exc)
        finally:
            with contextlib.suppress(OSError):
                os.close(pipe.reader)
            with contextlib.suppress(OSError):
                os.close(pipe.saved)

    def _publish(self, name: str, raw: bytes) -> None:
        with self._lock:
            now = time.monotonic()
            self._tokens = min(BURST, self._tokens + (now - self._refilled) * RATE)
            self._refilled = now
            if self._tokens < 1.0:
                self.dropped += 1
                return
            self._tokens -= 1.0
            self.published += 1
        self.ctx.emit(LogLine, "info", line_text(raw), name, self.ctx.pid, "", 0, "", "")
        if self.dropped != self._reported:
            self._report_drops()

    def _report_drops(self) -> None:
        with self._lock:
            if self.dropped == self._reported:
                return
            self._reported = self.dropped
        self.ctx.emit(Drops, self.dropped, "job output", f"more than {RATE:g} lines a second")


def _write_all(fd: int, data: bytes) -> bool:
    """Write everything to ``fd``; False when it cannot take more (closed)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except InterruptedError:
            continue
        except OSError:
            return False
    return True


def _flush() -> None:
    """What Python has buffered goes out through the descriptor it was meant for."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
