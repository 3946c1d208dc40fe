"""The sources behind a replay: a recording (the engine folds it into the
store; ``poll`` has nothing) and a dump directory (its files announced as the
agent would have announced them, computed off the UI thread)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from aclmon import events as ev
from aclmon.sources.base import CONNECTED, ENDED, Source
from aclmon.sources.replay_inputs import (
    Cancelled,
    ReplayInputs,
    dump_events,
    log_events,
    resolve_dump_path,
)
from aclmon.store.replay import ReplayEngine

PLAYING = "playing"
PAUSED = "paused"


class LateIndex:
    """A recording's index that starts indexing only when asked.

    :class:`~aclmon.bus.RecordingReader` indexes on its own thread from the
    moment it is made, and that pass holds the GIL for much of a second per
    million frames: made after the first screen, it no longer delays it. The
    header is checked at once all the same, so a bad file is still one error
    before any screen. Until :meth:`open`, it is an empty index still being
    built (the engine and the timeline read it as such).
    """

    def __init__(self, path: Path) -> None:
        from aclmon.bus.recording import read_header
        from aclmon.errors import DecodeError

        self.path = path
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            raise DecodeError(str(path), 0, f"cannot open: {exc.strerror}") from None
        try:
            self.header = read_header(fd, str(path), os.fstat(fd).st_size)
        finally:
            os.close(fd)
        self.reader: Any = None

    def open(self) -> None:
        """Start indexing (idempotent)."""
        from aclmon.bus.recording import RecordingReader

        if self.reader is None:
            self.reader = RecordingReader(self.path)

    def __len__(self) -> int:
        return len(self.reader) if self.reader is not None else 0

    @property
    def offsets(self) -> np.ndarray:
        return self.reader.offsets if self.reader is not None else _NO_FRAMES

    @property
    def timestamps(self) -> np.ndarray:
        return self.reader.timestamps if self.reader is not None else _NO_FRAMES

    @property
    def indexed(self) -> bool:
        return bool(self.reader is not None and self.reader.indexed)

    def seek_time(self, ts_ns: int) -> int:
        return int(self.reader.seek_time(ts_ns)) if self.reader is not None else 0

    @property
    def cut(self) -> Any:
        return getattr(self.reader, "cut", None)

    @property
    def error(self) -> str | None:
        return getattr(self.reader, "error", None)

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()


_NO_FRAMES = np.empty(0, dtype=np.int64)


class RecordingSource(Source):
    """The app's source while a recording replays: the engine feeds the store
    directly (seeking backwards replaces the state), so ``poll`` has nothing."""

    readonly = True

    def __init__(
        self,
        engine: ReplayEngine,
        description: str,
        reader: Any = None,
        inputs: ReplayInputs | None = None,
    ) -> None:
        self.engine = engine
        self.description = description
        self.playing = False
        self._reader = reader  # the RecordingReader behind the engine's index: closed with us
        self._inputs = inputs

    def resolve_path(self, path: str) -> str:
        # The recording names files where the job wrote them; the directory
        # may have moved since: look for the same name under PATH.
        return resolve_dump_path(path, self._inputs) if self._inputs is not None else path

    @property
    def state(self) -> str:
        if self.engine.position >= len(self.engine) and self.engine.index.indexed:
            return ENDED
        return PLAYING if self.playing else PAUSED

    def poll(self, max_events: int) -> list[ev.Event]:
        return []

    def decoder_counts(self) -> tuple[int, int]:
        # The engine counts skipped frames inside the fold itself (they are
        # part of the state at a position), so report exactly that.
        c = self.engine.store.state.counters
        return (c.malformed, c.unknown)

    def close(self) -> None:
        self.engine.close()
        if self._reader is not None:
            self._reader.close()
            self._reader = None


class DumpDirectorySource(Source):
    """Dump files found under PATH, summarised on a background thread and
    delivered like the agent's ``DumpFileSeen`` events."""

    readonly = True

    def __init__(self, inputs: ReplayInputs) -> None:
        self.inputs = inputs
        self.description = f"dump directory {inputs.root}"
        if inputs.log_files and not inputs.dump_files:
            self.description = f"CANN logs {inputs.root}"
        self._events: list[ev.Event] = []
        self._next = 0
        self._done = threading.Event()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self.error = ""

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._load, name="aclmon-replay-dumps", daemon=True
            )
            self._thread.start()

    def _load(self) -> None:
        try:
            events: list[ev.Event] = list(dump_events(self.inputs.dump_files, self._closing.is_set))
            logs, problems = log_events(self.inputs.log_files, first_seq=len(events) + 1)
            self.inputs.problems.extend(problems)
            self._events = events + logs
        except Cancelled:
            pass
        except Exception as exc:  # shown in the header, never raised on a thread
            self.error = str(exc)
        finally:
            self._done.set()

    @property
    def state(self) -> str:
        if not self._done.is_set():
            return "reading dump files"
        if self.error:
            return f"failed: {self.error}"
        return ENDED if self._next >= len(self._events) else CONNECTED

    def poll(self, max_events: int) -> list[ev.Event]:
        if not self._done.is_set():
            return []
        start = self._next
        self._next = min(len(self._events), start + max_events)
        return self._events[start : self._next]

    def wait_loaded(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def close(self) -> None:
        # Quitting must not wait for a big directory: the reader stops at the next file.
        self._closing.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


def recording_warnings(engine: ReplayEngine) -> list[str]:
    """What is wrong with the file, once the index knows (a cut, an index error)."""
    reader: Any = engine.index
    out = []
    schema_warning = getattr(reader, "schema_warning", None)
    if schema_warning:
        out.append(schema_warning)
    cut = getattr(reader, "cut", None)
    if cut is not None:
        what = "damaged" if cut.damaged else "truncated"
        out.append(f"{what} {cut}; every complete event before it is shown")
    error = getattr(reader, "error", None)
    if error:
        out.append(str(error))
    if engine.builder_error:
        out.append(engine.builder_error)
    return out
