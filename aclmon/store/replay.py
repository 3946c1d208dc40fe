"""The replay engine: a cursor over a recording whose state is always a fold.

``state at position p`` is the :class:`~aclmon.store.Store` fold of the events
in frames ``0..p-1`` (a *position* counts frames, so a malformed frame is
skipped but still has its place, and a time maps to a position through the
recording's index: everything strictly before ``T``). That is exactly what a
live viewer showed once it had received those events, because the live viewer
feeds the same store the same events in the same order.

Seeking is fast in both directions: a builder thread folds the whole recording
once in the background, keeping a store snapshot every ``snapshot_every``
frames and noting where the exceptions and overflow dumps are. A seek restores
the nearest snapshot at or before the target (or carries on from the current
position, when that is closer) and folds at most ``snapshot_every`` frames;
on the way it keeps a snapshot just before its target, so going back a little
from there folds at most ``NEAR_EVERY`` frames.

This module imports neither Textual nor the bus: it needs only a frame index
(:class:`FrameIndex`, which :class:`aclmon.bus.RecordingReader` satisfies) and
the file to read the frames from, so it is testable on its own.
"""

from __future__ import annotations

import bisect
import os
import threading
from array import array
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from aclmon import events as ev
from aclmon.errors import AclmonError
from aclmon.events.wire import HEADER, HEADER_SIZE, BatchDecoder, peek_kinds
from aclmon.store.fold import Store
from aclmon.store.snapshots import (
    DEFAULT_MAX_SNAPSHOTS,
    DEFAULT_SNAPSHOT_EVERY,
    NearSnapshot,
    NearSnapshots,
    SharedParts,
    Snapshot,
    Snapshots,
)
from aclmon.store.state import StoreState

#: frames decoded and folded at once while folding long ranges: bounds the decoded
#: events alive at once (20,000 left ~8 MiB more in the replay's peak RSS, and
#: the builder thread and a seek may fold at the same time; no slower).
FOLD_BATCH = 5_000
#: bytes read from the file at once, at most (plus one frame)
READ_BYTES = 8 * 1024 * 1024
#: a restore costs about as much as folding this many frames (copying the state).
RESTORE_COST = 2_000

_KIND_EXCEPTION = ev.kind_of(ev.AclException)
_KIND_DUMP_FILE = ev.kind_of(ev.DumpFileSeen)
OVERFLOW = "overflow"
EXCEPTION = "exception"


class SeekSuperseded(Exception):
    """A fold for :meth:`ReplayEngine.state_at` given up: a newer seek wants another state."""


def _int64(value: int) -> int:
    """Times compared with the int64 index must fit in it."""
    return max(-(1 << 63), min(int(value), (1 << 63) - 1))


class Column(Protocol):
    """One column of an index (frame offsets, times): a numpy array, or the bus's
    ``FrameColumn`` (blocks of differences read as one)."""

    def __len__(self) -> int: ...

    def __getitem__(self, key: Any) -> Any: ...

    def max(self) -> Any: ...


class FrameIndex(Protocol):
    """What the engine needs of a recording's index (``RecordingReader`` has it)."""

    def __len__(self) -> int: ...

    @property
    def offsets(self) -> Column: ...

    @property
    def timestamps(self) -> Column: ...

    @property
    def indexed(self) -> bool: ...

    def seek_time(self, ts_ns: int) -> int: ...


class FrameFile:
    """Reads and decodes runs of frames, given their offsets (thread-safe: pread only)."""

    def __init__(self, path: str | Path, index: FrameIndex) -> None:
        self.path = str(path)
        self.index = index
        try:
            self._fd = os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise AclmonError(f"{self.path}: cannot open: {exc.strerror}") from None

    def span(self, start: int, stop: int) -> tuple[int, bytes, np.ndarray]:
        """(file offset, bytes, frame offsets) of frames ``start..stop-1``."""
        offsets = self.index.offsets[start:stop]
        last = int(offsets[-1])
        begin = int(offsets[0])
        try:
            head = os.pread(self._fd, HEADER_SIZE, last)
            if len(head) == HEADER_SIZE:
                end = last + HEADER_SIZE + HEADER.unpack(head)[0]
                data = os.pread(self._fd, end - begin, begin)
                if len(data) == end - begin:
                    return begin, data, offsets
        except OSError as exc:
            raise AclmonError(f"{self.path}: at byte {begin}: {exc.strerror or exc}") from None
        # The index says these frames exist; the file no longer holds them.
        raise AclmonError(f"{self.path}: frames at byte {begin} are no longer readable")

    def pieces(self, start: int, stop: int) -> Iterator[tuple[int, int]]:
        """``start..stop`` cut into runs of frames of about ``READ_BYTES`` at
        most (at least one frame each), so no read holds more than that plus
        one frame, whatever the frames' sizes."""
        offsets = self.index.offsets
        a = start
        while a < stop:
            limit = int(offsets[a]) + READ_BYTES
            b = a + int(np.searchsorted(offsets[a:stop], limit, side="left"))
            b = max(a + 1, b)
            yield a, b
            a = b

    def decode(self, start: int, stop: int, decoder: ev.EventDecoder) -> list[ev.Event]:
        """The events of frames ``start..stop-1``; bad frames are skipped and
        counted by ``decoder``."""
        events: list[ev.Event] = []
        for a, b in self.pieces(start, stop):
            events.extend(self._decode_piece(a, b, decoder))
        return events

    def _decode_piece(self, start: int, stop: int, decoder: ev.EventDecoder) -> list[ev.Event]:
        begin, data, offsets = self.span(start, stop)
        # A fresh batch decoder per piece: several threads read the same file.
        batch = BatchDecoder(decoder, max_buffer=len(data) + 1)
        return batch.decode(data, (offsets - begin).tolist(), len(data))

    def kinds(self, start: int, stop: int) -> np.ndarray:
        """The wire kind of each frame from its second payload byte (-1 when the
        payload does not start like an event); a hint only, the frame may be junk."""
        parts = [self._kinds_piece(a, b) for a, b in self.pieces(start, stop)]
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def _kinds_piece(self, start: int, stop: int) -> np.ndarray:
        begin, data, offsets = self.span(start, stop)
        starts = offsets - begin
        ends = np.empty_like(starts)
        ends[:-1] = starts[1:]
        ends[-1:] = len(data)
        return peek_kinds(np.frombuffer(data, dtype=np.uint8), starts + HEADER_SIZE, ends)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class ReplayEngine:
    """A cursor over a recording; ``store`` always holds the fold up to ``position``.

    Call :meth:`start_background` to build the snapshots and marker lists on a
    daemon thread (seeks work without it, just slower for far targets), and
    :meth:`close` at the end. All cursor methods belong to one thread (the UI);
    :meth:`state_at` may be called from any thread.
    """

    def __init__(
        self,
        index: FrameIndex,
        path: str | Path,
        *,
        snapshot_every: int = DEFAULT_SNAPSHOT_EVERY,
        max_snapshots: int = DEFAULT_MAX_SNAPSHOTS,
        store_factory: Callable[[], Store] = Store,
        side_events: Sequence[ev.Event] = (),
    ) -> None:
        """``side_events``: events from beside the recording (the job's CANN log
        lines read from its files), folded in at their times: each goes just
        before the first frame at or after its ``ts_ns`` (after the last frame
        if none is), so the state at a position holds the ones up to its time."""
        if snapshot_every < 1:
            raise ValueError(f"snapshot_every must be at least 1, not {snapshot_every}")
        if max_snapshots < 2:
            raise ValueError(f"max_snapshots must be at least 2, not {max_snapshots}")
        self.index = index
        self.frames = FrameFile(path, index)
        self.snapshot_every = snapshot_every
        self.max_snapshots = max_snapshots
        self._store_factory = store_factory
        self.store = store_factory()
        self.position = 0
        # Guards the snapshots and the markers (the builder adds, any thread reads).
        self._lock = threading.Lock()
        self.snapshots = Snapshots(self.store.state, snapshot_every, max_snapshots)
        self.near = NearSnapshots()
        # Frame numbers as int64 arrays: 8 bytes each instead of a list slot plus an int object.
        self._markers: dict[str, array[int]] = {EXCEPTION: array("q"), OVERFLOW: array("q")}
        self._scanned = 0  # frames the builder has folded (snapshots and markers cover them)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.builder_error: str | None = None
        self._side = sorted(side_events, key=lambda e: e.ts_ns)
        self._side_at: tuple[int, bool, list[int]] | None = None  # (frames, final, positions)

    # ------------------------------------------------------------ facts
    def __len__(self) -> int:
        return len(self.index)

    @property
    def scanned(self) -> int:
        """Frames the background builder has covered so far."""
        return self._scanned

    @property
    def ready(self) -> bool:
        """Snapshots and markers cover the whole (fully indexed) recording."""
        return self.index.indexed and self._scanned >= len(self.index)

    def time_at(self, position: int) -> int | None:
        """The time of the state at ``position``: that of the newest applied frame."""
        if position <= 0 or len(self.index) == 0:
            return None
        return int(self.index.timestamps[min(position, len(self.index)) - 1])

    @property
    def side_events(self) -> list[ev.Event]:
        """The events from beside the recording, in time order (see ``__init__``)."""
        return list(self._side)

    @property
    def first_ts(self) -> int | None:
        return int(self.index.timestamps[0]) if len(self.index) else None

    @property
    def last_ts(self) -> int | None:
        timestamps = self.index.timestamps  # the running maximum at the end, for the index
        return int(timestamps.max()) if len(timestamps) else None

    # ------------------------------------------------------------ folding
    def _fold(
        self, store: Store, start: int, stop: int, abandoned: Callable[[], bool] | None = None
    ) -> None:
        """Apply frames ``start..stop-1`` (and the side events among them) to
        ``store`` and count what was skipped. ``abandoned`` is asked before each
        batch: when it says so, :class:`SeekSuperseded` is raised."""
        decoder = ev.EventDecoder()
        for first, last, side in self._pieces(start, stop):
            for a in range(first, last, FOLD_BATCH):
                if abandoned is not None and abandoned():
                    raise SeekSuperseded
                b = min(last, a + FOLD_BATCH)
                before = (decoder.malformed, decoder.unknown)
                store.apply_many(self.frames.decode(a, b, decoder))
                bad = decoder.malformed - before[0], decoder.unknown - before[1]
                if bad != (0, 0):
                    c = store.state.counters
                    store.note_decoder_counts(c.malformed + bad[0], c.unknown + bad[1])
            store.apply_many(side)

    def _pieces(self, start: int, stop: int) -> Iterator[tuple[int, int, list[ev.Event]]]:
        """Frames ``start..stop-1`` cut where side events go: (first, last, the side
        events to apply after frames ``first..last-1``)."""
        if not self._side:
            yield start, stop, []
            return
        positions = self._side_positions()
        i = bisect.bisect_left(positions, start)
        j = bisect.bisect_left(positions, stop)
        first = start
        while i < j:
            at = positions[i]
            k = bisect.bisect_right(positions, at, i, j)
            yield first, at, self._side[i:k]
            first, i = at, k
        yield first, stop, []

    def _side_positions(self) -> list[int]:
        """For each side event, the frame it goes before (sorted, as the events
        are): the first frame whose time (the running maximum) is at or after the
        event's. An event later than every frame goes before the last frame once
        the index is complete, so the state at the end holds it; while the index
        still grows it waits at ``n``, past every fold."""
        n = len(self.index)
        indexed = self.index.indexed
        cached = self._side_at
        if cached is not None and (cached[1] or cached[0] == n):
            return cached[2]
        positions = [self.index.seek_time(_int64(e.ts_ns)) for e in self._side]
        if indexed and n:
            positions = [min(at, n - 1) for at in positions]
        self._side_at = (n, indexed, positions)
        return positions

    def _nearest_snapshot(self, position: int) -> tuple[int, Snapshot | NearSnapshot]:
        """The builder's or a seek's snapshot nearest before ``position``."""
        with self._lock:
            at, snapshot = self.snapshots.nearest(position)
            near = self.near.nearest(position)
        return near if near is not None and near[0] > at else (at, snapshot)

    def _fold_from(
        self,
        store: Store,
        at: int,
        snapshot: Snapshot | NearSnapshot,
        position: int,
        abandoned: Callable[[], bool] | None = None,
    ) -> None:
        """Restore ``snapshot`` (taken at ``at``) into ``store`` and fold on to ``position``."""
        if isinstance(snapshot, NearSnapshot):
            snapshot.restore(store)
        else:
            self.snapshots.restore(store, snapshot)
        self._fold_leaving_near(store, at, position, abandoned)

    def _fold_leaving_near(
        self,
        store: Store,
        start: int,
        stop: int,
        abandoned: Callable[[], bool] | None = None,
    ) -> None:
        """:meth:`_fold`, keeping a near snapshot on the way when it passes the
        place for one (see :class:`NearSnapshots`)."""
        # Only once the index is whole: until then a side event later than every
        # frame waits past the end, and a state kept now would miss it for good.
        near = self.near.where(start, stop) if self.index.indexed else None
        if near is not None:
            self._fold(store, start, near, abandoned)
            kept = NearSnapshot.take(store.state)
            with self._lock:
                self.near.add(near, kept)
            start = near
        self._fold(store, start, stop, abandoned)

    def state_at(self, position: int, abandoned: Callable[[], bool] | None = None) -> StoreState:
        """The fold of frames ``0..position-1`` as a new state (any thread).
        ``abandoned`` is asked now and then: when it says so, the fold stops
        with :class:`SeekSuperseded`."""
        position = self._clamp(position)
        at, snapshot = self._nearest_snapshot(position)
        store = self._store_factory()
        self._fold_from(store, at, snapshot, position, abandoned)
        return store.state

    def cost(self, position: int) -> int:
        """About how many frames a seek to ``position`` folds (to decide on a thread)."""
        position = self._clamp(position)
        at, _ = self._nearest_snapshot(position)
        from_snapshot = position - at + RESTORE_COST
        if self.position <= position:
            return min(position - self.position, from_snapshot)
        return from_snapshot

    def _clamp(self, position: int) -> int:
        return max(0, min(int(position), len(self.index)))

    # ------------------------------------------------------------ cursor
    def seek(self, position: int) -> int:
        """Make ``store`` the fold of frames before ``position``; returns it."""
        position = self._clamp(position)
        at, snapshot = self._nearest_snapshot(position)
        forward = position - self.position
        if 0 <= forward <= position - at + RESTORE_COST:
            self._fold_leaving_near(self.store, self.position, position)
        else:
            self._fold_from(self.store, at, snapshot, position)
        self.position = position
        return position

    def install(self, position: int, state: StoreState) -> None:
        """Adopt a state computed by :meth:`state_at` on another thread."""
        self.store.replace(state)
        self.position = self._clamp(position)

    def seek_time(self, ts_ns: int) -> int:
        """State at time ``ts_ns``: the fold of every event before it."""
        return self.seek(self.position_of_time(ts_ns))

    def position_of_time(self, ts_ns: int) -> int:
        return self._clamp(self.index.seek_time(_int64(ts_ns)))

    def step(self, count: int = 1) -> int:
        """Apply the next ``count`` events (skipping bad frames); returns how many."""
        applied = 0
        n = len(self.index)
        while applied < count and self.position < n:
            before = self.store.state.counters.events
            self._fold(self.store, self.position, self.position + 1)
            self.position += 1
            applied += self.store.state.counters.events - before
        return applied

    def step_back(self, count: int = 1) -> int:
        """Go back ``count`` frames (one event each in a sound recording)."""
        return self.seek(self.position - count)

    def play_to(self, ts_ns: int, max_frames: int) -> bool:
        """Fold forward through events before ``ts_ns``, at most ``max_frames``.
        Returns True when it stopped at the limit (more is due)."""
        target = self.position_of_time(ts_ns)
        if target <= self.position:
            return False
        limited = target - self.position > max_frames
        stop = self.position + max_frames if limited else target
        self._fold(self.store, self.position, stop)
        self.position = stop
        return limited

    # ------------------------------------------------------------ markers
    def markers(self, kind: str) -> list[int]:
        """Frame numbers of the exceptions or overflow dumps found so far."""
        with self._lock:
            return list(self._markers[kind])

    def next_marker(self, kinds: tuple[str, ...], after: int) -> int | None:
        """The first marker frame at or after ``after``; scans ahead of the
        builder when it has not got that far."""
        best: int | None = None
        with self._lock:
            for kind in kinds:
                found = self._markers[kind]
                i = bisect.bisect_left(found, after)
                if i < len(found) and (best is None or found[i] < best):
                    best = found[i]
            scanned = self._scanned
        if best is not None:
            return best
        n = len(self.index)
        for a in range(max(after, scanned), n, FOLD_BATCH):
            found_here = self._scan_markers(a, min(n, a + FOLD_BATCH))
            hits = [i for kind in kinds for i in found_here[kind]]
            if hits:
                return min(hits)
        return None

    def previous_marker(self, kinds: tuple[str, ...], before: int) -> int | None:
        """The last marker frame before ``before``; scans the frames the
        builder has not covered yet (nearest first) before trusting its lists."""
        best: int | None = None
        with self._lock:
            scanned = self._scanned
            for kind in kinds:
                found = self._markers[kind]
                i = bisect.bisect_left(found, before) - 1
                if i >= 0 and (best is None or found[i] > best):
                    best = found[i]
        for stop in range(min(before, len(self.index)), scanned, -FOLD_BATCH):
            found_here = self._scan_markers(max(scanned, stop - FOLD_BATCH), stop)
            hits = [i for kind in kinds for i in found_here[kind]]
            if hits:
                return max(hits)
        return best

    def _scan_markers(self, start: int, stop: int) -> dict[str, list[int]]:
        """Exception and overflow-dump frames among ``start..stop-1``."""
        if start >= stop:
            return {EXCEPTION: [], OVERFLOW: []}
        kinds = self.frames.kinds(start, stop)
        exceptions: list[int] = []
        overflows: list[int] = []
        decoder = ev.EventDecoder()
        # The kind byte only nominates frames: each is decoded to be sure (a
        # malformed frame may carry any byte there), which is cheap since few
        # frames are exceptions or dump files.
        candidates = np.flatnonzero((kinds == _KIND_EXCEPTION) | (kinds == _KIND_DUMP_FILE))
        for i in (candidates + start).tolist():
            events = self.frames.decode(i, i + 1, decoder)
            if not events:
                continue
            if type(events[0]) is ev.AclException:
                exceptions.append(i)
            elif type(events[0]) is ev.DumpFileSeen and events[0].kind == OVERFLOW:
                overflows.append(i)
        return {EXCEPTION: exceptions, OVERFLOW: overflows}

    # ------------------------------------------------------------ builder
    def start_background(self) -> None:
        """Build snapshots and markers on a daemon thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._build, name="aclmon-replay-snapshots", daemon=True
            )
            self._thread.start()

    def build(self) -> None:
        """Build snapshots and markers on this thread, up to the end of the index."""
        self._build()

    def wait_ready(self, timeout: float | None = None) -> bool:
        if self._thread is not None:
            self._thread.join(timeout)
        return self.ready

    def _build(self) -> None:
        try:
            store = self._store_factory()
            decoder = ev.EventDecoder()
            parts = SharedParts()
            snapshots = self.snapshots
            while not self._stop.is_set():
                indexed = self.index.indexed  # read before len: no frames missed at the end
                n = len(self.index)
                pos = self._scanned
                if pos >= n:
                    if indexed:
                        return
                    self._stop.wait(0.05)
                    continue
                if indexed:
                    with self._lock:
                        snapshots.spread_over(n)
                next_snapshot = snapshots.next_position()
                stop = min(n, next_snapshot, pos + FOLD_BATCH)
                found = self._scan_markers(pos, stop)
                before = (decoder.malformed, decoder.unknown)
                for first, last, side in self._pieces(pos, stop):
                    store.apply_many(parts.share(self.frames.decode(first, last, decoder)))
                    store.apply_many(side)
                bad = decoder.malformed - before[0], decoder.unknown - before[1]
                if bad != (0, 0):
                    c = store.state.counters
                    store.note_decoder_counts(c.malformed + bad[0], c.unknown + bad[1])
                snapshot = None
                if stop == next_snapshot or (indexed and stop == n):
                    snapshot = snapshots.take(store.state)
                with self._lock:
                    for kind, frames in found.items():
                        self._markers[kind].extend(frames)
                    if snapshot is not None:
                        snapshots.add(stop, snapshot)
                    self._scanned = stop
        except Exception as exc:  # reported in the timeline, never raised on a thread
            self.builder_error = f"snapshot builder stopped: {exc}"

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.frames.close()


def iter_recording_events(engine: ReplayEngine, start: int = 0) -> Iterator[ev.Event]:
    """Every decodable event from frame ``start`` on, in batches (for summaries)."""
    decoder = ev.EventDecoder()
    n = len(engine.index)
    for a in range(start, n, FOLD_BATCH):
        yield from engine.frames.decode(a, min(n, a + FOLD_BATCH), decoder)
