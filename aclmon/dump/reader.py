"""Read one dump file: 2.0 operator dumps, legacy v1 files and nano dumps.

Opening a file reads its header only (one bounded read). A tensor's bytes are
read on first use of its ``raw``/``array``/``decode()``, straight into a new
buffer of the tensor's size (one read, no intermediate copy), so opening a
multi-gigabyte dump costs its header and looking at one tensor costs that
tensor. Nothing is memory-mapped: a map of a file that another process
truncates kills the reader with SIGBUS when it touches the lost pages (a dump
directory is often still being written); a file that shrank or was replaced
before a tensor is read gives a :class:`DecodeError` naming the file and the
offset. Sizes from the header are checked against the bytes present before
anything is read. Only :class:`aclmon.errors.DecodeError` escapes on bad input.
(Legacy v1 files keep their tensors inside the header message: they are read
whole.)
"""

from __future__ import annotations

import io
import json
import os
import stat
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aclmon.dump import proto_enums as pe
from aclmon.dump.dtypes import Decoded, TensorBytesError, decode_bytes, is_decodable
from aclmon.dump.header import (
    PAYLOAD_ORDER,
    ROLE_BUFFER,
    ROLE_INPUT,
    ROLE_SPACE,
    DumpFields,
    DumpHeader,
    TensorHeader,
    decode_header,
)
from aclmon.dump.naming import DumpName, parse_dump_name
from aclmon.dump.nano import NANO_MAGIC, parse_nano_head
from aclmon.errors import DecodeError

#: the writer refuses headers of 2 GiB or more (INT_MAX); so do we.
MAX_HEADER_LEN = (1 << 31) - 1

#: DfxTensorType.GENERAL: an exception dump's "input buffer" entry.
INPUT_TYPE_GENERAL = 1

FORMAT_V2 = "2.0"
FORMAT_V1 = "v1"
FORMAT_NANO = "nano"


class _OpenedFile:
    """The file a dump was read from, as it was when its header was read: tensors
    read their bytes from it on first use, and only if it is still that file."""

    __slots__ = ("identity", "path", "size", "source")

    def __init__(self, path: str, source: str, info: os.stat_result) -> None:
        self.path = path
        self.source = source
        self.size = info.st_size
        self.identity = (info.st_dev, info.st_ino)

    def read(self, offset: int, count: int, label: str) -> np.ndarray:
        """``count`` bytes from ``offset`` in a new ``uint8`` array (read straight into it);
        ``label`` names them in errors."""
        out = np.empty(count, dtype=np.uint8)
        if not count:
            return out
        try:
            with _open(self.path) as handle:
                info = os.fstat(handle.fileno())
                if (info.st_dev, info.st_ino) != self.identity:
                    raise DecodeError(
                        self.source,
                        offset,
                        f"{label}: the file was replaced since its header was read",
                    )
                handle.seek(offset)
                shrank = f"{label}: the file shrank from {self.size} bytes since it was opened"
                _read_into(handle, out, self.source, offset, shrank)
        except OSError as exc:
            raise DecodeError(
                self.source, offset, f"{label}: cannot read: {exc.strerror or exc}"
            ) from None
        return out


def _open(path: str) -> io.FileIO:
    """``path`` opened for unbuffered reads; without waiting for a writer if it is a FIFO
    (which the caller then refuses: it is not a regular file)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    return io.FileIO(fd, "rb")


def _read_into(handle: io.FileIO, out: np.ndarray, source: str, offset: int, shrank: str) -> None:
    """Fill ``out`` from ``handle``'s position ``offset``; a :class:`DecodeError` saying
    ``shrank`` at the offset where the file ends first."""
    view = out.data.cast("B")  # bytes, whatever the dtype (out is a fresh, contiguous array)
    done = 0
    while done < out.nbytes:
        got = handle.readinto(view[done:])
        if not got:
            raise DecodeError(source, offset + done, shrank)
        done += got


@dataclass
class Tensor:
    """One tensor of a dump: header fields plus its bytes, read on first use."""

    role: str  # "input" | "output" | "buffer" | "space"
    index: int
    header: TensorHeader
    offset: int  # absolute file offset of the tensor's bytes
    present: int  # bytes of the tensor the file held when it was opened (short if cut)
    source: str
    dtype_label: str = ""  # overrides the proto name (nano types we do not map)
    loaded: bool = True  # False when the file was read with header_only=True
    _bytes: np.ndarray | None = field(default=None, repr=False, compare=False)
    _file: _OpenedFile | None = field(default=None, repr=False, compare=False)
    _read: weakref.ref[np.ndarray] | None = field(default=None, repr=False, compare=False)

    @property
    def raw(self) -> np.ndarray:
        """The ``present`` bytes as ``uint8``, read from the file on first use.

        The bytes stay in memory as long as something holds them (this array or
        a view of it, e.g. ``array``): a tensor whose values were used and let go
        costs no memory, and the next use reads it again. Raises
        :class:`DecodeError` when the file was read header-only, or can no longer
        give them (it shrank or was replaced since it was opened)."""
        if self._bytes is not None:
            return self._bytes
        held = self._read() if self._read is not None else None
        if held is not None:
            return held
        if not self.loaded or self._file is None:
            raise DecodeError(
                self.source,
                self.offset,
                f"{self.role} {self.index}: bytes not loaded (header only)",
            )
        data = self._file.read(self.offset, self.present, f"{self.role} {self.index}")
        self._read = weakref.ref(data)
        return data

    @property
    def is_read(self) -> bool:
        """Whether the bytes are in memory (``raw`` would not read the file)."""
        return self._bytes is not None or (self._read is not None and self._read() is not None)

    @property
    def data_type(self) -> int:
        return self.header.data_type

    @property
    def dtype_name(self) -> str:
        return self.dtype_label or pe.dtype_name(self.header.data_type)

    @property
    def format(self) -> int:
        return self.header.format

    @property
    def format_name(self) -> str:
        return pe.format_name(self.header.format)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.header.shape

    @property
    def original_shape(self) -> tuple[int, ...]:
        return self.header.original_shape

    @property
    def size(self) -> int:
        """Byte size the header declares."""
        return self.header.size

    def decode(self) -> Decoded:
        """The typed array (a view when possible) with its label.

        Raises :class:`DecodeError` when the bytes present cannot hold the shape,
        or cannot be read.
        """
        if self.dtype_label:
            return Decoded(self.raw, False, f"raw bytes ({self.dtype_label} is not decoded)")
        if self.role in (ROLE_BUFFER, ROLE_SPACE):
            return Decoded(self.raw, True, "bytes")
        try:
            return decode_bytes(self.raw, self.header.data_type, self.header.shape)
        except TensorBytesError as exc:
            raise DecodeError(
                self.source, self.offset, f"{self.role} {self.index}: {exc}"
            ) from None

    @property
    def array(self) -> np.ndarray:
        return self.decode().array

    @property
    def supported(self) -> bool:
        """Whether the bytes decode to typed values (else they are shown raw, labelled)."""
        if self.dtype_label:
            return False
        return self.role in (ROLE_BUFFER, ROLE_SPACE) or is_decodable(self.header.data_type)


@dataclass
class DumpFile(DumpFields[Tensor]):
    """A decoded dump file: its header's fields and its tensors (bytes read on first use)."""

    path: str
    file_size: int
    container: str  # "2.0" | "v1" | "nano"
    header_length: int
    warnings: list[str] = field(default_factory=list)
    name: DumpName | None = None
    header_only: bool = False

    @property
    def tensors(self) -> list[Tensor]:
        return [*self.inputs, *self.outputs, *self.buffers, *self.workspaces]

    @property
    def op_type(self) -> str:
        """The op type from the file name; "" for an exception dump, whose name has
        ``exception_info`` (or the kernel's name) in that place."""
        from aclmon.dump.summary import is_exception_dump

        if self.name is None or is_exception_dump(self.path):
            return ""
        return self.name.op_type

    @property
    def ffts_info(self) -> dict[str, Any] | None:
        """The FFTS+ JSON msaccucmp reads from ``attr[0].value`` (``threadMode``,
        ``slice_instance_num``, ``input_tensor_slice`` …); ``None`` if absent or not JSON."""
        if not self.attrs:
            return None
        try:
            info = json.loads(self.attrs[0][1])
        except ValueError:
            return None
        return info if isinstance(info, dict) else None

    def ffts_auto_shapes(self, role: str) -> list[tuple[int, ...]] | None:
        """Per-tensor shapes of this FFTS+ thread's slice in auto mode, as msaccucmp computes
        them (``higher - lower`` of ``{role}_tensor_slice[thread_id]``); ``None`` when the
        file is not an auto-mode FFTS+ dump or the attribute does not have that shape."""
        info = self.ffts_info
        thread = self.name.thread_id if self.name else None
        if not info or not info.get("threadMode") or thread is None:
            return None
        slices = info.get(f"{role}_tensor_slice")
        if (
            not isinstance(slices, list)
            or thread >= len(slices)
            or not isinstance(slices[thread], list)
        ):
            return None
        shapes = []
        for tensor_slice in slices[thread]:
            if not isinstance(tensor_slice, list):
                return None
            dims = []
            for axis in tensor_slice:
                if not isinstance(axis, dict):
                    return None
                low, high = axis.get("lower"), axis.get("higher")
                if not isinstance(low, int) or not isinstance(high, int) or high < low:
                    return None
                dims.append(high - low)
            shapes.append(tuple(dims))
        return shapes


def read_dump(
    path: str | os.PathLike[str], container: str | None = None, *, header_only: bool = False
) -> DumpFile:
    """Read a dump file. ``container`` forces "2.0", "v1" or "nano" (default: detect).

    Reads the header; each tensor's bytes are read when first used. With
    ``header_only`` they never are (``raw``/``decode()`` raise): the agent reads
    headers inside the user's job and must not read tensors there.
    """
    path = os.fspath(path)
    source = os.path.basename(path) or path
    if "\0" in path:  # a name from a peer or a damaged recording: no file has it
        raise DecodeError(source, 0, "cannot read: the name holds a NUL byte")
    try:
        with _open(path) as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise DecodeError(source, 0, "not a regular file")
            size = info.st_size
            prefix = handle.read(16) or b""
            detected = container is None
            if container is None:
                container = detect_container(prefix, size, source)
            if container in (FORMAT_V2, FORMAT_NANO):
                # the length word and the header (a bad length is reported by the reader)
                header_len = int.from_bytes(prefix[:8], "little")
                count = min(size, 8 + min(header_len, size))
            else:
                count = size  # v1: the tensors are inside the header message
            data = np.empty(count, dtype=np.uint8)
            handle.seek(0)
            shrank = f"the file shrank from {size} bytes while it was being read"
            _read_into(handle, data, source, 0, shrank)
    except OSError as exc:
        raise DecodeError(source, 0, f"cannot read: {exc.strerror or exc}") from None
    opened = None if header_only else _OpenedFile(path, source, info)
    if container == FORMAT_V1 and detected:
        try:
            dump = _read_v1(data, path, source)
        except DecodeError as exc:
            # most often a 2.0 file with a damaged length, not a legacy file: say both
            header_len = int.from_bytes(prefix[:8], "little")
            raise DecodeError(
                source,
                exc.offset,
                f"header length {header_len} exceeds the {size - 8} bytes after it, "
                f"and the file is not a legacy v1 dump either ({exc.reason})",
            ) from None
    elif container == FORMAT_NANO:
        dump = _read_nano(data, path, source, size, opened)
    elif container == FORMAT_V1:
        dump = _read_v1(data, path, source)
    elif container == FORMAT_V2:
        dump = _read_v2(data, path, source, size, opened)
    else:
        raise DecodeError(source, 0, f"unknown container {container!r}")
    dump.header_only = header_only and container != FORMAT_V1
    dump.name = parse_dump_name(os.path.basename(path))
    return dump


def detect_container(prefix: bytes, size: int, source: str) -> str:
    """Container of a file from its first 16 bytes and its size."""
    if size < 8 or len(prefix) < 8:
        raise DecodeError(
            source, 0, f"file has {size} bytes, too short for the 8-byte header length"
        )
    if size >= 12 and len(prefix) >= 12 and int.from_bytes(prefix[8:12], "little") == NANO_MAGIC:
        return FORMAT_NANO
    header_len = int.from_bytes(prefix[:8], "little")
    if 0 < header_len <= size - 8:
        return FORMAT_V2
    # A legacy v1 file is one protobuf message: field 1 (version, a string) first.
    if prefix[0] == 0x0A and header_len > size - 8:
        return FORMAT_V1
    if header_len == 0:
        raise DecodeError(source, 0, "header length is 0")
    raise DecodeError(
        source, 0, f"header length {header_len} exceeds the {size - 8} bytes after it"
    )


def _fill_from_header(dump: DumpFile, header: DumpHeader) -> None:
    dump.version = header.version
    dump.dump_time = header.dump_time
    dump.op_name = header.op_name
    dump.dfx_message = header.dfx_message
    dump.attrs = header.attrs


def _read_v2(
    data: np.ndarray, path: str, source: str, size: int, opened: _OpenedFile | None
) -> DumpFile:
    if size < 8:
        raise DecodeError(
            source, 0, f"file has {size} bytes, too short for the 8-byte header length"
        )
    header_len = int.from_bytes(bytes(data[:8]), "little")
    if header_len == 0:
        raise DecodeError(source, 0, "header length is 0")
    if header_len > size - 8 or header_len > MAX_HEADER_LEN:
        raise DecodeError(
            source, 0, f"header length {header_len} exceeds the {size - 8} bytes after it"
        )
    header = decode_header(data.data, 8, 8 + header_len, source)
    dump = DumpFile(path, size, FORMAT_V2, header_len)
    _fill_from_header(dump, header)
    layout_payload(dump, header, 8 + header_len, source, size, opened)
    return dump


def _place(
    dump: DumpFile,
    th: TensorHeader,
    pos: int,
    source: str,
    size: int,
    opened: _OpenedFile | None,
    label: str = "",
) -> None:
    """Add one tensor whose bytes start at file offset ``pos`` (``size`` = file size;
    ``opened`` is ``None`` for a header-only read)."""
    present = max(0, min(pos + th.size, size) - pos)
    tensor = Tensor(
        th.role, th.index, th, pos, present, source, label, opened is not None, None, opened
    )
    dump.of_role(th.role).append(tensor)
    if pos + th.size > size:
        dump.warnings.append(
            f"{th.role} {th.index}: declares {th.size} bytes at offset {pos}, the file ends at {size}"
        )


def layout_payload(
    dump: DumpFile,
    header: DumpHeader,
    start: int,
    source: str,
    size: int,
    opened: _OpenedFile | None,
) -> None:
    """Slice the payload in the writer's order: inputs, outputs, buffers, workspaces.

    Exception dumps (dump_formats.md §1.6) list "input buffers" among the inputs
    (``input_type`` GENERAL) but write their bytes last, after workspaces and
    after MC2 context data that has no header entry; those are therefore placed
    backwards from the end of the file.
    """
    trailing = [th for th in header.inputs if th.input_type == INPUT_TYPE_GENERAL]
    pos = start
    declared = 0
    for role in PAYLOAD_ORDER:
        for th in header.of_role(role):
            if th.input_type == INPUT_TYPE_GENERAL and role == ROLE_INPUT:
                continue
            declared += th.size
            _place(dump, th, pos, source, size, opened)
            pos += th.size
    if trailing:
        tail = sum(th.size for th in trailing)
        declared += tail
        tail_pos = max(size - tail, pos)
        if tail_pos > pos:
            dump.warnings.append(
                f"exception dump: {tail_pos - pos} bytes without a header entry (MC2 context) "
                f"before {len(trailing)} input buffer(s)"
            )
        for th in trailing:
            _place(dump, th, tail_pos, source, size, opened)
            tail_pos += th.size
        dump.inputs.sort(key=lambda t: t.index)
        if pos + tail <= size:
            return
    expected = start + declared
    if expected != size:
        dump.warnings.append(
            f"size mismatch: 8 + header {start - 8} + tensors {declared} = {expected} bytes, "
            f"file has {size}"
        )


def _read_nano(
    data: np.ndarray, path: str, source: str, size: int, opened: _OpenedFile | None
) -> DumpFile:
    """Nano dump: TLV head, then input bytes, then output bytes (file size must match)."""
    head = parse_nano_head(data, source, size)
    dump = DumpFile(path, size, FORMAT_NANO, head.head_len)
    dump.version = f"nano {head.version_id}"
    pos = 8 + head.head_len
    for th in (*head.header.inputs, *head.header.outputs):
        label = head.labels.get((th.role, th.index), "")
        _place(dump, th, pos, source, size, opened, label)
        pos += th.size
    if pos != size:
        dump.warnings.append(
            f"size mismatch: 8 + head {head.head_len} + tensors {pos - 8 - head.head_len} = "
            f"{pos} bytes, file has {size}"
        )
    return dump


def _read_v1(data: np.ndarray, path: str, source: str) -> DumpFile:
    size = int(data.shape[0])
    header = decode_header(data.data, 0, size, source)
    dump = DumpFile(path, size, FORMAT_V1, size)
    _fill_from_header(dump, header)
    for role in PAYLOAD_ORDER:
        for th in header.of_role(role):
            embedded = th.data_end - th.data_start
            if th.size and th.size != embedded:
                dump.warnings.append(
                    f"{role} {th.index}: size field says {th.size} bytes, data holds {embedded}"
                )
            raw = data[th.data_start : th.data_end]
            dump.of_role(role).append(
                Tensor(role, th.index, th, th.data_start, int(raw.shape[0]), source, _bytes=raw)
            )
    return dump
