"""The lanes of one source: which process and track each stream, thread and model
gets, made once each, and where a slice goes so that its lane keeps nesting.

Process ids follow msprof's layout, ``pid = (group << 10) | (layer << 5) |
device`` with device 31 for the host, so ``pid & 31`` is the device and
``(pid >> 5) & 31`` the layer (msprof's sort index) as its readers expect;
``group`` is the source's place in a fleet (1 for a single source). Tracks (tids)
are stream ids on a device and small thread numbers on the host; anything else
gets a number from 2^20 up.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

from aclmon.store.slices import (
    HOST,
    HOST_SLOT,
    LANE_LIMIT,
    SORT_CANN,
    SORT_HARDWARE,
    SORT_MSPROFTX,
    UNKNOWN_DEVICE,
    Lane,
    NestingGuard,
    Process,
    SourceLabel,
)

#: the first track number of lanes that are not a stream or a thread
EXTRA_TRACKS = 1 << 20

_Make = Callable[[], tuple[Process, int | None, str, int]]


def _npu(device: int) -> str:
    return "NPU ?" if device == UNKNOWN_DEVICE else f"NPU {device}"


class LaneBook:
    """Every process and lane of one source (see the module docstring)."""

    def __init__(self, source: SourceLabel) -> None:
        self.source = source
        self._processes: dict[tuple[str, int], Process] = {}
        self._lanes: dict[tuple[Any, ...], Lane] = {}
        self._overlapping: dict[Lane, Lane] = {}
        self._extra_tracks: dict[Process, Iterator[int]] = {}
        #: thread ident -> its number (its lanes are "Thread N")
        self.threads: dict[int, int] = {}

    @property
    def lanes(self) -> list[Lane]:
        """Every lane made so far, in display order."""
        return sorted(
            self._lanes.values(),
            key=lambda lane: (lane.process.group, lane.process.sort, lane.process.device,
                              lane.order, lane.track),
        )  # fmt: skip

    def find_stream(self, device: int, stream_id: int) -> Lane | None:
        return self._lanes.get(("stream", device, stream_id))

    def place(self, lane: Lane, start: int, end: int) -> Lane:
        """``lane`` if a slice from ``start`` to ``end`` nests there (it is then
        remembered), else the lane's async companion, ``… (overlapping)``."""
        guard = lane.guard
        if guard is None or guard.admit(start, end):
            return lane
        return self.overlapping(lane)

    # ------------------------------------------------------------ processes
    def process(self, name: str, device: int, sort: int) -> Process:
        key = (name, device)
        process = self._processes.get(key)
        if process is None:
            group = self.source.group
            if device == HOST:
                base, slot = "CPU", HOST_SLOT
            elif 0 <= device < HOST_SLOT:
                base, slot = f"NPU {device}", device
            else:
                base, slot = _npu(device), -1
            if slot >= 0:
                pid = (group << 10) | (sort << 5) | slot
            else:  # outside msprof's 5 bits: a number of its own, above any of those
                pid = 1 << 30 | group << 16 | len(self._processes)
            label = self.source.label(base)
            process = Process(group, name, device, label, sort, pid, self.source.rank)
            self._processes[key] = process
        return process

    def hardware(self, device: int) -> Process:
        return self.process("Ascend Hardware", device, SORT_HARDWARE)

    # ------------------------------------------------------------ lanes
    def _lane(
        self,
        key: tuple[Any, ...],
        make: _Make,
        *,
        stream: tuple[int, int] | None = None,
        thread: int | None = None,
        nested: bool = True,
    ) -> Lane:
        lane = self._lanes.get(key)
        if lane is None:
            if len(self._lanes) >= LANE_LIMIT:
                return self._shared_lane()
            process, track, title, order = make()
            if track is None or not 0 <= track < EXTRA_TRACKS:
                track = self._extra_track(process)
            guard = NestingGuard() if nested else None
            lane = Lane(process, track, title, order, nested, stream, thread, guard)
            self._lanes[key] = lane
        return lane

    def _extra_track(self, process: Process) -> int:
        tracks = self._extra_tracks.get(process)
        if tracks is None:
            tracks = self._extra_tracks[process] = itertools.count(EXTRA_TRACKS)
        return next(tracks)

    def _shared_lane(self) -> Lane:
        """Where everything goes once a hostile source has made too many lanes."""
        key = ("shared",)
        lane = self._lanes.get(key)
        if lane is None:
            process = self.process("CANN", HOST, SORT_CANN)
            lane = Lane(process, self._extra_track(process), "other lanes", 1 << 30, False)
            self._lanes[key] = lane
        return lane

    def overlapping(self, lane: Lane) -> Lane:
        """The async companion of a nested lane, where what would cross goes."""
        found = self._overlapping.get(lane)
        if found is None:
            process = lane.process
            found = Lane(process, self._extra_track(process), f"{lane.title} (overlapping)",
                         lane.order, False, lane.stream, lane.thread)  # fmt: skip
            self._overlapping[lane] = found
            self._lanes[("overlapping", id(lane))] = found
        return found

    def stream(self, device: int, stream_id: int) -> Lane:
        """A device stream: its operators, exceptions and overflows."""

        def make() -> tuple[Process, int | None, str, int]:
            return self.hardware(device), stream_id, f"Stream {stream_id}", stream_id

        return self._lane(("stream", device, stream_id), make, stream=(device, stream_id))

    def unplaced(self, device: int) -> Lane:
        """What happened on a device on a stream nobody named (an old overflow record)."""

        def make() -> tuple[Process, int | None, str, int]:
            return self.hardware(device), None, "stream not known", 1 << 21

        return self._lane(("unplaced", device), make)

    def model(self, device: int, model_id: int, model_name: str) -> Lane:
        """Operators of a model whose execution (and so stream) is not known."""

        def make() -> tuple[Process, int | None, str, int]:
            name = model_name or f"#{model_id}"
            return self.hardware(device), None, f"Model {name} (stream not known)", 1 << 20

        return self._lane(("model", device, model_id), make)

    def single_ops(self, device: int) -> Lane:
        """Single-operator launches (``acl.op``) on a device: no model, and their
        timings name no stream."""

        def make() -> tuple[Process, int | None, str, int]:
            return self.hardware(device), None, "single operators (stream not known)", 1 << 20

        return self._lane(("single", device), make)

    def calls(self, device: int, stream_id: int, handle: int | None = None) -> Lane:
        """Host calls about one stream; stream_id -1: about a whole device, or (with
        ``handle``) about a stream no StreamCreated explained."""

        def make() -> tuple[Process, int | None, str, int]:
            process = self.process("CANN", HOST, SORT_CANN)
            if stream_id >= 0:
                title, order = f"{_npu(device)} Stream {stream_id} calls", stream_id
            elif handle is not None:
                title, order = f"{_npu(device)} stream {handle:#x} calls", 1 << 16
            else:
                title, order = f"{_npu(device)} device calls", -1
            return process, None, title, (max(device, -1) + 2) * (1 << 17) + order

        key = ("calls", device, stream_id, handle if stream_id < 0 else None)
        return self._lane(key, make, stream=(device, stream_id))

    def thread(self, name: str, sort: int, thread: int) -> Lane:
        """A host thread's lane in process ``name`` (CANN, or the msproftx process)."""
        number = self.threads.get(thread)
        if number is None:
            if len(self.threads) >= LANE_LIMIT:
                return self._shared_lane()
            number = self.threads[thread] = len(self.threads) + 1

        def make() -> tuple[Process, int | None, str, int]:
            return self.process(name, HOST, sort), number, f"Thread {number}", number

        return self._lane(("thread", name, thread), make, thread=thread)

    def tx_process_name(self) -> str:
        """msprof names the msproftx process after the job's process."""
        return self.source.name or "msproftx"

    def tx_thread(self, thread: int) -> Lane:
        return self.thread(self.tx_process_name(), SORT_MSPROFTX, thread)

    def tx_unknown(self) -> Lane:
        """Marks of a source older than schema 6, which did not name the thread."""

        def make() -> tuple[Process, int | None, str, int]:
            return (
                self.process(self.tx_process_name(), HOST, SORT_MSPROFTX),
                0,
                "thread not known",
                0,
            )

        return self._lane(("tx unknown",), make)

    def log(self) -> Lane:
        """The warnings and errors of the job's CANN log, on the host."""

        def make() -> tuple[Process, int | None, str, int]:
            return self.process("CANN", HOST, SORT_CANN), None, "log warnings and errors", -2

        return self._lane(("log",), make)

    def tx_across(self) -> Lane:
        """msproftx ranges closed on another thread than the one that opened them
        (or whose threads are not known): async, they may overlap."""

        def make() -> tuple[Process, int | None, str, int]:
            process = self.process(self.tx_process_name(), HOST, SORT_MSPROFTX)
            return process, None, "ranges across threads", 1 << 20

        return self._lane(("tx async",), make, nested=False)
