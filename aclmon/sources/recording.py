"""The source behind a replayed recording: the engine folds it into the
store, so ``poll`` has nothing; the index starts late so the first screen is fast."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from aclmon import events as ev
from aclmon.bus.states import ENDED
from aclmon.sources.base import Source
from aclmon.sources.replay_inputs import ReplayInputs, resolve_dump_path, why_gone
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

    def why_gone(self, path: str) -> str:
        return why_gone(path)

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
