"""Recordings: a header, then the bus's own frames, appended as they come.

File layout (all integers little-endian; docs/events.md "Recording files")::

    offset 0   8 bytes  magic b"ACLMREC\\0"
           8   u16      format version (1)
          10   u16      event schema version (events.SCHEMA_VERSION)
          12   u64      creation time, ns since the UNIX epoch
          20   u32      length N of the source info (at most 64 KiB)
          24   N bytes  source info: one msgpack map
        24+N   frames   u32 length + msgpack event payload, repeated

Crash safety comes from appending whole frames: a file cut at any byte still
has every frame before the cut intact, and the reader says where it ends.

:class:`RecordingReader` indexes frame offsets and timestamps
(:class:`FrameIndexStore`: blocks of 4,096 frames, 8 bytes a frame when a
block's offsets and times fit 32-bit differences) on a background thread, reading the file in large chunks and walking the length
prefixes; timestamps are pulled out of all frames of a chunk at once with
numpy, since every event payload starts ``[kind, seq, ts_ns, ...]`` and
``ts_ns`` is packed as a msgpack uint64. The index is usable while it grows,
and :meth:`RecordingReader.refresh` indexes bytes appended since (following a
file that is still being written).
"""

from __future__ import annotations

import errno
import os
import stat
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import msgpack
import numpy as np

from aclmon.bus.frame_index import FrameColumn, FrameIndexStore, column_at, seek_time_in
from aclmon.errors import DecodeError
from aclmon.events import SCHEMA_VERSION, Event, EventDecoder, encode, unpack_payload
from aclmon.events.wire import (
    DEFAULT_MAX_FRAME,
    HEADER,
    HEADER_SIZE,
    FrameError,
    StreamDecoder,
    peek_timestamps,
    split_frames,
)

MAGIC = b"ACLMREC\0"
FORMAT_VERSION = 1
FILE_HEADER = struct.Struct("<8sHHQI")
MAX_SOURCE_INFO = 64 * 1024
#: bytes read per step while indexing or iterating
# (2 MiB: a 16 MiB chunk made ~120 MiB of per-frame temporaries while
# indexing 1M events and was no faster; bigger frames get a read of their own)
CHUNK_SIZE = 2 * 1024 * 1024
_WRITE_BUFFER = 256 * 1024

_pack = msgpack.Packer(use_bin_type=True, autoreset=True).pack
_pack_length = HEADER.pack


@dataclass(frozen=True)
class RecordingHeader:
    format_version: int
    schema_version: int
    created_ns: int
    source_info: dict[str, Any]
    data_offset: int  # where the first frame starts


@dataclass(frozen=True)
class Cut:
    """Where the readable part of a recording ends, and why."""

    offset: int
    reason: str
    damaged: bool = False  # True: bad data, not just a file that ends early

    def __str__(self) -> str:
        return f"at byte {self.offset}: {self.reason}"


# ---------------------------------------------------------------- writing
def _shared_directory(directory: Path) -> bool:
    """Sticky and writable by others, like /tmp: a name there may have been taken
    by another user first."""
    try:
        mode = os.stat(directory).st_mode
    except OSError:
        return False
    return bool(mode & stat.S_ISVTX and mode & (stat.S_IWOTH | stat.S_IWGRP))


def open_new_recording(path: Path) -> int:
    """A descriptor for writing a recording at ``path``, mode 0600, empty.

    Never follows a symlink (``O_NOFOLLOW``): one planted where the recording goes
    would make us overwrite whatever it points at. In a directory other users can
    write to (sticky, like /tmp) the file must be new (``O_EXCL``). An existing
    file elsewhere is overwritten only if it is a regular file of ours; it is
    truncated after those checks, never before. Refusals are ``OSError`` whose
    ``strerror`` says why and what to do.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    if _shared_directory(path.parent):
        flags |= os.O_EXCL
    try:
        # Owner-only whatever the umask: events carry command lines, op names, paths.
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            why = "it is a symbolic link (not followed: remove it or record elsewhere)"
        elif exc.errno == errno.EEXIST:
            why = (
                "it already exists in a directory other users can write to"
                " (refused: remove it or pick a new name)"
            )
        elif exc.errno == errno.ENXIO:
            why = "it is a FIFO nobody reads (not a regular file)"
        else:
            raise
        raise OSError(exc.errno, why, str(path)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "it is not a regular file", str(path))
        if info.st_uid != os.getuid():
            raise OSError(errno.EPERM, "it belongs to another user", str(path))
        os.set_blocking(fd, True)
        os.fchmod(fd, 0o600)  # an existing file keeps its mode otherwise
        os.ftruncate(fd, 0)
    except OSError:
        os.close(fd)
        raise
    return fd


class RecordingWriter:
    """Append events to a new recording file (overwrites ``path``).

    Frames are buffered up to 256 KiB; call :meth:`flush` to make them visible
    to a reader following the file, and :meth:`close` at the end.
    """

    def __init__(
        self, path: str | os.PathLike[str], source_info: dict[str, Any] | None = None
    ) -> None:
        self.path = Path(path)
        info = _pack(dict(source_info or {}))
        if len(info) > MAX_SOURCE_INFO:
            raise DecodeError(str(self.path), 0, f"source info of {len(info)} bytes is too big")
        self.created_ns = time.time_ns()
        fd = open_new_recording(self.path)
        self._file: BinaryIO = os.fdopen(fd, "wb")
        self._file.write(
            FILE_HEADER.pack(MAGIC, FORMAT_VERSION, SCHEMA_VERSION, self.created_ns, len(info))
            + info
        )
        self._file.flush()
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self.count = 0

    def write(self, event: Event) -> None:
        self.write_payload(encode(event))

    def write_many(self, events: list[Event]) -> None:
        for event in events:
            self.write_payload(encode(event))

    def write_payload(self, payload: bytes) -> None:
        """One already-encoded event payload."""
        self._pending.append(_pack_length(len(payload)))
        self._pending.append(payload)
        self._pending_bytes += len(payload) + HEADER_SIZE
        self.count += 1
        if self._pending_bytes >= _WRITE_BUFFER:
            self._write_pending()

    def _write_pending(self) -> None:
        if self._pending:
            self._file.write(b"".join(self._pending))
            self._pending.clear()
            self._pending_bytes = 0

    def flush(self) -> None:
        self._write_pending()
        self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            self.flush()
            self._file.close()

    def __enter__(self) -> RecordingWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------- reading
def is_recording(path: str | os.PathLike[str]) -> bool:
    """``path`` is a readable file that starts like an aclmon recording."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def read_header(fd: int, source: str, file_size: int) -> RecordingHeader:
    if file_size < FILE_HEADER.size:
        raise DecodeError(source, 0, f"too short for a recording header ({file_size} bytes)")
    raw = os.pread(fd, FILE_HEADER.size, 0)
    magic, version, schema, created, info_size = FILE_HEADER.unpack(raw)
    if magic != MAGIC:
        raise DecodeError(source, 0, "not an aclmon recording (bad magic)")
    if version != FORMAT_VERSION:
        raise DecodeError(source, 8, f"recording format version {version} is not supported")
    if info_size > MAX_SOURCE_INFO:
        raise DecodeError(source, 20, f"source info of {info_size} bytes exceeds the limit")
    if FILE_HEADER.size + info_size > file_size:
        raise DecodeError(source, FILE_HEADER.size, "file ends inside the source info")
    try:
        info = msgpack.unpackb(
            os.pread(fd, info_size, FILE_HEADER.size), raw=False, strict_map_key=True
        )
    except Exception as exc:  # msgpack raises many types on garbage
        raise DecodeError(source, FILE_HEADER.size, f"unreadable source info: {exc}") from None
    if not isinstance(info, dict):
        raise DecodeError(source, FILE_HEADER.size, "source info is not a map")
    return RecordingHeader(version, schema, created, info, FILE_HEADER.size + info_size)


class RecordingReader:
    """Random access to a recording: index, seek by time or number, iterate.

    Opening reads and checks the header (a bad one raises
    :class:`~aclmon.errors.DecodeError`). Indexing then runs on a daemon
    thread unless ``background=False``; ``len(reader)`` is the number of
    frames indexed so far, ``indexed`` says whether the scan has reached the
    end, and ``cut`` says where and why the readable part ended (``None``
    for a clean end).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        background: bool = True,
        max_frame: int = DEFAULT_MAX_FRAME,
    ) -> None:
        self.path = Path(path)
        self.source = str(self.path)
        self.max_frame = max_frame
        try:
            self._fd = os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise DecodeError(self.source, 0, f"cannot open: {exc.strerror}") from None
        try:
            size = os.fstat(self._fd).st_size
            self.header = read_header(self._fd, self.source, size)
        except BaseException:
            os.close(self._fd)
            raise
        self._index = FrameIndexStore()
        self._scan_pos = self.header.data_offset
        self._lock = threading.Lock()
        self._done = threading.Event()
        self.cut: Cut | None = None
        self.error: str | None = None
        #: set when the file comes from a newer aclmon (it still opens)
        self.schema_warning: str | None = None
        if self.header.schema_version > SCHEMA_VERSION:
            self.schema_warning = (
                f"{self.source} was recorded with event schema {self.header.schema_version},"
                f" newer than this aclmon's {SCHEMA_VERSION}: events of kinds it does not"
                " know are skipped (and counted), the rest is shown"
            )
        self.decoder = EventDecoder()
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(
                target=self._index_in_background, name="aclmon-recording-index", daemon=True
            )
            self._thread.start()
        else:
            self.refresh()

    # ------------------------------------------------------------ indexing
    def _index_in_background(self) -> None:
        try:
            self.refresh()
        except Exception as exc:  # reported, never raised on a thread
            self.error = f"indexing stopped: {exc}"
            self._done.set()

    def refresh(self) -> int:
        """Index frames appended since the last scan; returns how many."""
        with self._lock:
            before = len(self._index)
            if self.cut is not None and self.cut.damaged:
                return 0  # past damage the frames cannot be found again
            try:
                self._scan()
            finally:
                self._done.set()
            return len(self._index) - before

    def _scan(self) -> None:
        fd = self._fd
        size = os.fstat(fd).st_size
        pos = self._scan_pos
        while pos < size:
            chunk = os.pread(fd, min(CHUNK_SIZE, size - pos), pos)
            if not chunk:
                break
            try:
                offsets, stop = split_frames(
                    chunk, 0, len(chunk), self.max_frame, self.source, base_offset=pos
                )
                if stop == 0 and len(chunk) >= HEADER_SIZE:
                    # A frame larger than a chunk (its length already checked
                    # against max_frame): read just that frame.
                    (length,) = HEADER.unpack_from(chunk)
                    chunk = os.pread(fd, min(HEADER_SIZE + length, size - pos), pos)
                    offsets, stop = split_frames(
                        chunk, 0, len(chunk), self.max_frame, self.source, base_offset=pos
                    )
            except FrameError as exc:
                # Frames before the damage in this chunk are still good.
                good, stop = self._frames_before(chunk, exc.offset - pos)
                self._add(chunk, good, stop, pos)
                pos += stop
                self._scan_pos = pos
                self.cut = Cut(pos, exc.reason, damaged=True)
                return
            self._add(chunk, offsets, stop, pos)
            del chunk, offsets
            pos += stop
            self._scan_pos = pos
            if stop == 0:
                break  # an incomplete frame at the end of the file
        self.cut = self._describe_end(pos, size)

    def _frames_before(self, chunk: bytes, limit: int) -> tuple[list[int], int]:
        offsets, stop = split_frames(chunk, 0, limit, self.max_frame, self.source)
        return offsets, stop

    def _describe_end(self, pos: int, size: int) -> Cut | None:
        left = size - pos
        if left <= 0:
            return None
        if left < HEADER_SIZE:
            return Cut(pos, f"file ends inside a frame header ({left} of {HEADER_SIZE} bytes)")
        (length,) = HEADER.unpack(os.pread(self._fd, HEADER_SIZE, pos))
        return Cut(pos, f"file ends inside a frame ({left - HEADER_SIZE} of {length} bytes)")

    def _add(self, chunk: bytes, offsets: list[int], stop: int, base: int) -> None:
        if not offsets:
            return
        starts = np.array(offsets, dtype=np.int64)
        ends = np.empty_like(starts)
        ends[:-1] = starts[1:]
        ends[-1] = stop
        starts += HEADER_SIZE
        data = np.frombuffer(chunk, dtype=np.uint8)
        times, irregular = peek_timestamps(data, starts, ends)
        if irregular.any():
            for i in np.flatnonzero(irregular):
                times[i] = self._slow_timestamp(chunk[starts[i] : ends[i]])
        starts -= HEADER_SIZE
        starts += base
        self._index.extend(starts, times)

    @staticmethod
    def _slow_timestamp(payload: bytes) -> int:
        try:
            obj = unpack_payload(payload)
        except Exception:
            return 0
        if isinstance(obj, tuple) and len(obj) >= 3 and type(obj[2]) is int and obj[2] >= 0:
            return min(obj[2], (1 << 63) - 1)
        return 0

    # ------------------------------------------------------------ state
    def __len__(self) -> int:
        return len(self._index)

    @property
    def indexed(self) -> bool:
        """The first scan reached the end (more may be appended later)."""
        return self._done.is_set()

    def wait_indexed(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    @property
    def offsets(self) -> FrameColumn:
        """File offset of each frame indexed so far (read like an int64 array)."""
        return FrameColumn(self._index.state, times=False)

    @property
    def timestamps(self) -> FrameColumn:
        """``ts_ns`` of each frame indexed so far (0 where a frame had none)."""
        return FrameColumn(self._index.state, times=True)

    @property
    def index_nbytes(self) -> int:
        """Memory the frame index holds."""
        return self._index.nbytes

    def timestamp(self, index: int) -> int:
        return int(self.timestamps[index])

    def seek_time(self, ts_ns: int) -> int:
        """Number of the first event at or after ``ts_ns`` (``len`` if none).

        Bisects the running maximum of the timestamps, so events slightly out
        of order (several threads) still give one well-defined answer."""
        return seek_time_in(self._index.state, ts_ns)

    # ------------------------------------------------------------ events
    def _frame_span(self, start: int, stop: int) -> tuple[int, int]:
        """File bytes from frame ``start`` to the end of frame ``stop - 1``."""
        state = self._index.state
        last = column_at(state, stop - 1, False)
        (length,) = HEADER.unpack(os.pread(self._fd, HEADER_SIZE, last))
        return column_at(state, start, False), last + HEADER_SIZE + length

    def event_at(self, index: int) -> Event | None:
        """The event of frame ``index`` (``None`` if that frame is malformed)."""
        n = len(self._index)
        if not 0 <= index < n:
            raise IndexError(f"event {index} of {n}")
        begin, end = self._frame_span(index, index + 1)
        payload = os.pread(self._fd, end - begin, begin)[HEADER_SIZE:]
        return self.decoder.decode_payload(payload)

    def iter_events(self, start: int = 0, stop: int | None = None) -> Iterator[Event]:
        """Decoded events of frames ``start..stop`` (malformed ones skipped and
        counted in ``decoder``), read in large chunks without touching the
        frames before ``start``."""
        n = len(self._index)
        stop = n if stop is None else min(stop, n)
        if start < 0:
            start = max(0, n + start)
        if start >= stop:
            return
        begin, end = self._frame_span(start, stop)
        stream = StreamDecoder(self.max_frame, self.source)
        pos = begin
        try:
            while pos < end:
                chunk = os.pread(self._fd, min(CHUNK_SIZE, end - pos), pos)
                if not chunk:
                    break
                pos += len(chunk)
                yield from stream.feed(chunk)
        finally:
            self.decoder.malformed += stream.malformed
            self.decoder.unknown += stream.unknown

    def read_events(self, start: int, count: int) -> list[Event]:
        return list(self.iter_events(start, start + count))

    def close(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> RecordingReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
