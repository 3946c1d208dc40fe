"""The frame index of a recording: each frame's file offset and timestamp.

Kept in blocks of :data:`INDEX_BLOCK` frames, each column as 32-bit
differences from the block's smallest value when they fit (8 bytes a frame
instead of 24 plus a growing array's doubling), with the running maximum of
the timestamps per block so a time seek bisects blocks, then one block.
Readers (:class:`FrameColumn`) see an immutable state that the indexing thread
replaces as it appends.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple, overload

import numpy as np

#: frames per block of the frame index (a power of two)
INDEX_BLOCK = 4096
_BLOCK_SHIFT = INDEX_BLOCK.bit_length() - 1
_U32_SPAN = 1 << 32
_NO_TIME = -(1 << 63)


class _Block(NamedTuple):
    """A full block of the index: ``uint32`` differences from the block's smallest
    value when its values span less than 4 GiB / 4.29 s, else plain ``int64``."""

    offsets: np.ndarray
    offset_base: int
    times: np.ndarray
    time_base: int


def _pack_column(values: np.ndarray) -> tuple[np.ndarray, int]:
    low = int(values.min())
    if int(values.max()) - low < _U32_SPAN:
        return (values - low).astype(np.uint32), low
    return values.copy(), 0


class _IndexState(NamedTuple):
    """What a reader of the index sees: every row below ``n`` is final."""

    n: int
    blocks: list[_Block]  # append-only; rows of block b are b * INDEX_BLOCK + 0..4095
    block_max: np.ndarray  # running maximum of the times at the end of each full block
    tail_offsets: np.ndarray  # int64, the block being filled (rows n - n % INDEX_BLOCK..)
    tail_times: np.ndarray
    tail_max: np.ndarray  # running maximum within the tail (including blocks before it)


class FrameIndexStore:
    """Offsets and timestamps of a recording's frames: 8 bytes a frame when they fit.

    Frames are kept in blocks of :data:`INDEX_BLOCK`. The block being filled is
    ``int64``; a full block is stored as ``uint32`` differences from its smallest
    offset and time (``int64`` again for a block that spans 4 GiB of file or more
    than 4.29 s: huge frames, a quiet job, a frame without a timestamp). The
    running maximum of the timestamps, which time seeks bisect, is kept per block
    and recomputed within the one block a seek lands in. 1M frames of a busy job
    take ~8 MiB instead of the 24 bytes a frame (plus capacity doubling) of three
    ``int64`` arrays.

    One thread appends; any thread reads. A reader takes :attr:`state` once and
    sees a consistent index of ``state.n`` frames: the writer never changes a row
    it has published, and a full block gets new tail arrays instead of reusing them.
    """

    def __init__(self) -> None:
        self._blocks: list[_Block] = []
        self._block_max = np.empty(16, dtype=np.int64)
        self._new_tail()
        self._tail_n = 0
        self._max = _NO_TIME
        self.state = _IndexState(
            0, self._blocks, self._block_max[:0], self._tail_off, self._tail_ts, self._tail_max
        )

    def _new_tail(self, capacity: int = 256) -> None:
        self._tail_off = np.empty(capacity, dtype=np.int64)
        self._tail_ts = np.empty(capacity, dtype=np.int64)
        self._tail_max = np.empty(capacity, dtype=np.int64)

    def _grow_tail(self, needed: int) -> None:
        """Room for ``needed`` rows in the tail: new arrays (readers keep the old ones)."""
        rows = self._tail_n
        old = (self._tail_off, self._tail_ts, self._tail_max)
        self._new_tail(min(INDEX_BLOCK, max(needed, 2 * len(self._tail_off))))
        for new, previous in zip((self._tail_off, self._tail_ts, self._tail_max), old, strict=True):
            new[:rows] = previous[:rows]

    def __len__(self) -> int:
        return self.state.n

    def extend(self, offsets: np.ndarray, times: np.ndarray) -> None:
        """Append frames (int64 offsets and times, same length), then publish them."""
        n = self.state.n
        done = 0
        total = len(offsets)
        while done < total:
            k = min(INDEX_BLOCK - self._tail_n, total - done)
            a, b = self._tail_n, self._tail_n + k
            if b > len(self._tail_off):
                self._grow_tail(b)
            self._tail_off[a:b] = offsets[done : done + k]
            self._tail_ts[a:b] = times[done : done + k]
            running = np.maximum.accumulate(times[done : done + k])
            np.maximum(running, self._max, out=running)
            self._tail_max[a:b] = running
            self._max = int(running[-1])
            self._tail_n = b
            done += k
            if b == INDEX_BLOCK:
                self._freeze()
        self.state = _IndexState(
            n + total,
            self._blocks,
            self._block_max[: len(self._blocks)],
            self._tail_off,
            self._tail_ts,
            self._tail_max,
        )

    def _freeze(self) -> None:
        packed_off, off_base = _pack_column(self._tail_off)
        packed_ts, ts_base = _pack_column(self._tail_ts)
        nblocks = len(self._blocks)
        if nblocks == len(self._block_max):
            bigger = np.empty(2 * nblocks, dtype=np.int64)
            bigger[:nblocks] = self._block_max
            self._block_max = bigger  # readers keep the old array: rows they see are in both
        self._block_max[nblocks] = self._max
        self._blocks.append(_Block(packed_off, off_base, packed_ts, ts_base))
        self._new_tail()
        self._tail_n = 0

    @property
    def nbytes(self) -> int:
        """Bytes the index holds (for the benchmarks and the docs)."""
        state = self.state
        blocks = state.blocks[: state.n >> _BLOCK_SHIFT]
        tail = state.tail_offsets.nbytes + state.tail_times.nbytes + state.tail_max.nbytes
        return sum(b.offsets.nbytes + b.times.nbytes for b in blocks) + tail + len(blocks) * 8


def _column_range(state: _IndexState, start: int, stop: int, times: bool) -> np.ndarray:
    """Rows ``start..stop-1`` (0 <= start <= stop <= state.n) of one column, as int64."""
    out = np.empty(stop - start, dtype=np.int64)
    full = state.n >> _BLOCK_SHIFT
    i = start
    while i < stop:
        b = i >> _BLOCK_SHIFT
        first = b << _BLOCK_SHIFT
        lo, hi = i - first, min(stop - first, INDEX_BLOCK)
        target = out[i - start : i - start + hi - lo]
        if b < full:
            block = state.blocks[b]
            values, base = (
                (block.times, block.time_base) if times else (block.offsets, block.offset_base)
            )
            np.add(values[lo:hi], np.int64(base), out=target)
        else:
            target[:] = (state.tail_times if times else state.tail_offsets)[lo:hi]
        i = first + hi
    return out


def column_at(state: _IndexState, index: int, times: bool) -> int:
    b = index >> _BLOCK_SHIFT
    lo = index - (b << _BLOCK_SHIFT)
    if b < state.n >> _BLOCK_SHIFT:
        block = state.blocks[b]
        if times:
            return int(block.times[lo]) + block.time_base
        return int(block.offsets[lo]) + block.offset_base
    return int((state.tail_times if times else state.tail_offsets)[lo])


def seek_time_in(state: _IndexState, ts_ns: int) -> int:
    """First row whose running maximum of the times is >= ``ts_ns`` (``n`` if none)."""
    full = state.n >> _BLOCK_SHIFT
    b = int(np.searchsorted(state.block_max, ts_ns, side="left"))
    if b < full:
        first = b << _BLOCK_SHIFT
        running = np.maximum.accumulate(_column_range(state, first, first + INDEX_BLOCK, True))
        if b:
            np.maximum(running, state.block_max[b - 1], out=running)
        return first + int(np.searchsorted(running, ts_ns, side="left"))
    first = full << _BLOCK_SHIFT
    return first + int(np.searchsorted(state.tail_max[: state.n - first], ts_ns, side="left"))


class FrameColumn:
    """One column of the index (file offsets or timestamps) as of when it was taken,
    read like a 1-D int64 array: ``col[i]`` an int, ``col[a:b]`` an ``np.ndarray``
    (built from the blocks it covers), ``len``, ``max()``, ``tolist()``,
    ``np.asarray(col)``."""

    __slots__ = ("_state", "_times")

    def __init__(self, state: _IndexState, times: bool) -> None:
        self._state = state
        self._times = times

    def __len__(self) -> int:
        return self._state.n

    @overload
    def __getitem__(self, key: int | np.integer) -> int: ...

    @overload
    def __getitem__(self, key: slice) -> np.ndarray: ...

    def __getitem__(self, key: int | np.integer | slice) -> int | np.ndarray:
        n = self._state.n
        if isinstance(key, slice):
            start, stop, step = key.indices(n)
            if step == 1:
                return _column_range(self._state, start, max(start, stop), self._times)
            return _column_range(self._state, 0, n, self._times)[key]
        index = int(key)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(f"index {key} is out of bounds for {n} frames")
        return column_at(self._state, index, self._times)

    def __iter__(self) -> Iterator[int]:
        for start in range(0, self._state.n, INDEX_BLOCK):
            yield from self[start : start + INDEX_BLOCK].tolist()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        values = self[:]
        return values if dtype is None else values.astype(dtype)

    def tolist(self) -> list[int]:
        values: list[int] = self[:].tolist()
        return values

    def max(self) -> int:
        """The largest value (for times: the running maximum at the last frame)."""
        state = self._state
        if state.n == 0:
            raise ValueError("max() of an empty column")
        if not self._times:
            return column_at(state, state.n - 1, False)  # offsets only grow
        last = state.n - 1
        if last & (INDEX_BLOCK - 1) == INDEX_BLOCK - 1 and (last >> _BLOCK_SHIFT) < len(
            state.block_max
        ):
            return int(state.block_max[last >> _BLOCK_SHIFT])
        return int(state.tail_max[last & (INDEX_BLOCK - 1)])
