"""``aclmon convert``: write a dump's tensors as msaccucmp ``convert`` does.

File names (docs/reference/dump_formats.md §3):

* no ``-f``, npy: ``{file}.{input|output}.{i}.npy`` (device layout, header shape)
* no ``-f``, bin: ``{file}.{input|output}.{i}.{d0_d1_...}.{numpy dtype}.{FORMAT}.bin``
* msnpy: ``{op_type}.{last '/' part of the header op_name}.{task}.{stream}.{ts}
  .{input|output}.{i}.{FORMAT}.npy`` (the op name is replaced only in 5-field names)
* ``-f FMT``: ``{file}.{input|output}.{i}.{d0xd1x...}.npy`` (converted and cropped;
  with ``-t bin`` the bin name above with the target format); inputs and outputs only
* buffers ``{file}.l1buffer.{i}.bin``, workspaces ``{file}.space.{i}.bin``
* Opdebug files: ``{file}.output.{i}.json`` (msaccucmp's keys, ``indent=4``)

Names of 255 characters or more become ``uuid3(NAMESPACE_DNS, name).hex +
suffix`` with ``new,old`` appended to ``mapping.csv``, as msaccucmp does.
Arrays are written in msaccucmp's host types: bfloat16 and float8 as float32.

Writing costs one pass over the bytes at most. The file's header is read
first; a tensor's bytes are read (straight into one array) only when its
values are needed. A ``.npy`` is one header write plus the payload; a tensor
written unchanged (its bytes as they sit in the dump, the usual case without
``-f``) is copied file to file by the kernel (``copy_file_range``), so its
bytes never pass through this process; any other
array is made C-contiguous once (a no-op when it already is) and written with
one ``tofile``, never element by element as ``np.save`` writes a strided view;
with ``-f``, NC1HWC0 (cropped to its shape, or padded without one) and
FRACTAL_NZ are converted straight into the array written, each element
copied once and the padding never.
The files are byte for byte what ``np.save`` writes.
"""

from __future__ import annotations

import errno
import json
import math
import os
import uuid
from dataclasses import dataclass, field
from typing import BinaryIO

import numpy as np
from numpy.lib import format as npy_format

from aclmon.dump import proto_enums as pe
from aclmon.dump.dtypes import (
    _MAX_ELEMENTS,
    VIEW_DTYPES,
    effective_shape,
    element_count,
    to_host_array,
)
from aclmon.dump.formats import FormatError, can_convert, convert_contiguous, convert_to_host
from aclmon.dump.header import ROLE_INPUT, ROLE_OUTPUT
from aclmon.dump.naming import is_opdebug_name
from aclmon.dump.opdebug import decode_opdebug
from aclmon.dump.reader import DumpFile, Tensor, read_dump
from aclmon.errors import AclmonError, DecodeError

MAX_FILE_NAME = 255
MAPPING_FILE = "mapping.csv"
BUFFER_TYPE_NAMES = {0: "l1"}
_MSNPY_NAME_FIELDS = 5
#: unchanged tensors at least this big are copied by the kernel; smaller ones are one write.
KERNEL_COPY_MIN = 64 * 1024
#: bytes read and written at once where the kernel cannot copy
_PIECE = 4 * 1024 * 1024
#: copy_file_range cannot copy between these two files: write the bytes instead.
_NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF}


@dataclass(frozen=True)
class ConvertOptions:
    """What ``aclmon convert`` was asked for (``-f``, ``-s``, ``-t``, ``-i``/``-o``)."""

    target_format: int | None = None
    shape: tuple[int, ...] | None = None
    file_type: str = "npy"
    only: tuple[str, int] | None = None  # ("input"|"output", index): convert just that tensor


@dataclass
class ConvertResult:
    source: str
    written: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None


def _output_name(out_dir: str, name: str, suffix: str) -> str:
    if len(name) >= MAX_FILE_NAME:
        short = uuid.uuid3(uuid.NAMESPACE_DNS, name).hex + suffix
        with open(os.path.join(out_dir, MAPPING_FILE), "a", encoding="utf-8") as mapping:
            mapping.write(f"{short},{name}\n")
        name = short
    return os.path.join(out_dir, name)


def _msnpy_base(base: str, op_name: str) -> str:
    parts = base.split(".")
    if len(parts) == _MSNPY_NAME_FIELDS and op_name:
        parts[1] = op_name.split("/")[-1]
        return ".".join(parts)
    return base


class _Source:
    """The dump file, opened on first use for kernel-side copies of tensors written
    as they are (tensors whose values are needed read their own bytes)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = -1
        self.kernel_copy = hasattr(os, "copy_file_range")

    def _open(self) -> int:
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_RDONLY)
        return self._fd

    def copy_to(self, out: BinaryIO, offset: int, count: int) -> None:
        """Append ``count`` bytes of the file from ``offset`` to ``out``: in the kernel
        when it can, else read and written in pieces. Raises :class:`DecodeError` if
        the file no longer holds them (it shrank since its header was read)."""
        src = self._open()
        out.flush()
        dst = out.fileno()
        done = 0
        while done < count and self.kernel_copy and count >= KERNEL_COPY_MIN:
            try:
                copied = os.copy_file_range(src, dst, count - done, offset + done)
            except OSError as exc:
                if exc.errno not in _NO_KERNEL_COPY:
                    raise
                self.kernel_copy = False  # this pair of file systems: read and write
                break
            if copied == 0:
                break  # the file ended, or the kernel gave up: see below
            done += copied
        while done < count:
            piece = os.pread(src, min(count - done, _PIECE), offset + done)
            if not piece:
                raise DecodeError(
                    os.path.basename(self.path),
                    offset + done,
                    f"the file ends before the {count} bytes at offset {offset} (it shrank)",
                )
            view = memoryview(piece)
            while view.nbytes:
                view = view[os.write(dst, view) :]
            done += len(piece)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _as_stored(
    tensor: Tensor, options: ConvertOptions, save_shape: tuple[int, ...] | None
) -> tuple[np.dtype, tuple[int, ...], int] | None:
    """(dtype, shape, bytes) when the tensor is written exactly as its bytes sit in the
    file (no conversion, a plain numpy type, the bytes all there), else ``None``: the
    values must be read (and any problem is reported as for every other tensor)."""
    if options.target_format is not None or tensor.dtype_label:
        return None
    dtype = VIEW_DTYPES.get(tensor.data_type)
    if dtype is None:
        return None
    present = tensor.present
    shape = effective_shape(tensor.data_type, tensor.shape, present)
    if math.prod(d for d in shape if d) > _MAX_ELEMENTS:
        return None
    count = element_count(shape)
    needed = count * dtype.itemsize
    if needed > present:
        return None
    if save_shape is not None:
        if math.prod(save_shape) != count:
            return None
        shape = save_shape
    return dtype, tuple(shape), needed


def _write_npy_header(out: BinaryIO, dtype: np.dtype, shape: tuple[int, ...]) -> None:
    """The header ``np.save`` writes for a C-ordered array (format 1.0, 2.0 if needed)."""
    header = {"descr": npy_format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape}
    try:
        npy_format.write_array_header_1_0(out, header)
    except ValueError:  # a header too big for format 1.0 (thousands of dimensions)
        npy_format.write_array_header_2_0(out, header)


def _unchanged_bytes(array: np.ndarray, tensor: Tensor) -> int:
    """How many bytes of ``array`` are the tensor's file bytes as they are (its bytes
    in C order are the first bytes of ``tensor.raw``); 0 when they are not."""
    raw = tensor.raw
    if (
        not array.flags.c_contiguous
        or array.nbytes > raw.nbytes
        or array.__array_interface__["data"][0] != raw.__array_interface__["data"][0]
    ):
        return 0
    return array.nbytes


def _write_payload(out: BinaryIO, array: np.ndarray, tensor: Tensor, source: _Source) -> None:
    """``array``'s bytes in C order, appended to ``out`` in one pass."""
    count = _unchanged_bytes(array, tensor)
    if count >= KERNEL_COPY_MIN and source.kernel_copy:
        source.copy_to(out, tensor.offset, count)
        return
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)  # one copy; tofile of a strided view is per element
    array.tofile(out)


def _save_npy(target: str, array: np.ndarray, tensor: Tensor, source: _Source) -> None:
    """What ``np.save(target, array)`` writes: the header (format 1.0, 2.0 when the
    header needs it), then the bytes."""
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    with open(target, "wb") as out:
        _write_npy_header(out, array.dtype, array.shape)
        _write_payload(out, array, tensor, source)


def convert_file(
    path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    options: ConvertOptions | None = None,
) -> ConvertResult:
    """Convert one dump file into ``out_dir``; per-tensor problems become warnings."""
    options = options or ConvertOptions()
    path, out_dir = os.fspath(path), os.fspath(out_dir)
    base = os.path.basename(path)
    result = ConvertResult(path)
    source = _Source(path)
    try:
        # The header only: tensors written as they are go file to file without being read.
        dump = read_dump(path)
        result.warnings.extend(dump.warnings)
        if is_opdebug_name(base):
            _write_opdebug(dump, base, out_dir, result)
            return result
        stem_base = _msnpy_base(base, dump.op_name) if options.file_type == "msnpy" else base
        if options.only is not None:
            role, index = options.only
            tensors = dump.inputs if role == ROLE_INPUT else dump.outputs
            if index >= len(tensors):
                raise AclmonError(
                    f"{base}: {role} index {index} is out of range [0, {len(tensors)})"
                )
            _write_tensor(tensors[index], stem_base, out_dir, options, result, None, source)
            return result
        for role, tensors in ((ROLE_INPUT, dump.inputs), (ROLE_OUTPUT, dump.outputs)):
            shapes = (
                None
                if options.target_format is not None
                else _ffts_shapes(dump, role, tensors, result)
            )
            for tensor in tensors:
                save_shape = shapes[tensor.index] if shapes else None
                _write_tensor(tensor, stem_base, out_dir, options, result, save_shape, source)
        if options.target_format is not None:
            return result  # msaccucmp's -f path writes inputs and outputs only
        for tensor in dump.buffers:
            kind = BUFFER_TYPE_NAMES.get(tensor.header.buffer_type, str(tensor.header.buffer_type))
            _write_bytes(
                tensor,
                _output_name(out_dir, f"{base}.{kind}buffer.{tensor.index}.bin", ".bin"),
                result,
                source,
            )
        for tensor in dump.workspaces:
            _write_bytes(
                tensor,
                _output_name(out_dir, f"{base}.space.{tensor.index}.bin", ".bin"),
                result,
                source,
            )
    except AclmonError as exc:
        result.error = str(exc)
    except OSError as exc:
        result.error = f"{base}: cannot write: {exc.strerror or exc}"
    finally:
        source.close()
    return result


def _write_opdebug(dump: DumpFile, base: str, out_dir: str, result: ConvertResult) -> None:
    for tensor in dump.outputs:
        record = decode_opdebug(bytes(tensor.raw), base, tensor.offset)
        target = _output_name(out_dir, f"{base}.output.{tensor.index}.json", ".json")
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(record, sort_keys=False, indent=4))
        result.written.append(target)


def _ffts_shapes(
    dump: DumpFile, role: str, tensors: list[Tensor], result: ConvertResult
) -> list[tuple[int, ...]] | None:
    """msaccucmp saves an auto-mode FFTS+ thread's tensors in the thread's slice shape."""
    shapes = dump.ffts_auto_shapes(role)
    if shapes is None:
        return None
    if len(shapes) != len(tensors):
        result.warnings.append(
            f"FFTS+ {role}_tensor_slice lists {len(shapes)} tensors, the file has {len(tensors)}; "
            "header shapes used"
        )
        return None
    return shapes


def _write_bytes(tensor: Tensor, target: str, result: ConvertResult, source: _Source) -> None:
    with open(target, "wb") as out:
        source.copy_to(out, tensor.offset, tensor.present)
    result.written.append(target)


def _write_as_stored(
    tensor: Tensor,
    stored: tuple[np.dtype, tuple[int, ...], int],
    base: str,
    role: str,
    out_dir: str,
    options: ConvertOptions,
    result: ConvertResult,
    source: _Source,
) -> None:
    """The names and bytes :func:`_write_tensor` writes for an unconverted tensor of a
    plain type, without reading its values: header, then the bytes file to file."""
    dtype, shape, nbytes = stored
    fmt = pe.format_name(tensor.format)
    if options.file_type == "bin":
        dims = "_".join(str(d) for d in shape)
        stem = f"{base}.{role}.{tensor.index}.{dims}.{dtype.name}.{fmt}"
        target = _output_name(out_dir, stem + ".bin", ".bin")
    else:
        if options.file_type == "msnpy":
            stem = f"{base}.{role}.{tensor.index}.{fmt}"
        else:
            stem = f"{base}.{role}.{tensor.index}"
        target = _output_name(out_dir, stem + ".npy", ".npy")
    with open(target, "wb") as out:
        if options.file_type != "bin":
            _write_npy_header(out, dtype, shape)
        source.copy_to(out, tensor.offset, nbytes)
    result.written.append(target)


def _real_format(tensor: Tensor) -> int:
    """msaccucmp treats a 4-D format tag on a tensor that is not 4-D as ND."""
    if tensor.format in (pe.FORMAT_NCHW, pe.FORMAT_NHWC, pe.FORMAT_HWCN) and len(tensor.shape) != 4:
        return pe.FORMAT_ND
    return tensor.format


def _to_target_format(
    array: np.ndarray,
    tensor: Tensor,
    target_format: int,
    shape: tuple[int, ...] | None,
    label: str,
    result: ConvertResult,
) -> tuple[np.ndarray, int] | str:
    """(array, format written) as msaccucmp's ``-f`` path produces it, or why it cannot be."""
    real = _real_format(tensor)
    if real == target_format:
        return array, real  # same format: reshaped only, never sliced
    if not can_convert(real, target_format):
        return f"no conversion from {pe.format_name(real)} to {pe.format_name(target_format)}"
    crop = shape or tensor.original_shape or None
    # NC1HWC0: converted straight into the array written (FRACTAL_NZ: convert_to_host does)
    converted = convert_contiguous(array, real, crop, target_format)
    if converted is not None:
        return converted, target_format
    try:
        return convert_to_host(array, real, crop, target_format), target_format
    except FormatError as exc:
        if crop is None or real in (pe.FORMAT_FRACTAL_Z, pe.FORMAT_FRACTAL_NZ):
            # the data itself does not fit (or these formats need the shape to reshape at all)
            return str(exc)
        crop_error = exc
    try:
        padded = convert_to_host(array, real, None, target_format)
    except FormatError as exc:
        return str(exc)
    # converted but the slice failed: msaccucmp keeps the padded data and the source format name
    result.warnings.append(f"{label}: not cropped: {crop_error}")
    return padded, real


def _write_tensor(
    tensor: Tensor,
    base: str,
    out_dir: str,
    options: ConvertOptions,
    result: ConvertResult,
    save_shape: tuple[int, ...] | None,
    source: _Source,
) -> None:
    role = "input" if tensor.role == ROLE_INPUT else "output"
    label = f"{role} {tensor.index}"
    stored = _as_stored(tensor, options, save_shape)
    if stored is not None:
        _write_as_stored(tensor, stored, base, role, out_dir, options, result, source)
        return
    try:
        decoded = tensor.decode()
    except AclmonError as exc:
        result.warnings.append(f"{label}: skipped: {exc}")
        return
    if not decoded.supported:
        # msaccucmp cannot read these either; it warns and goes on.
        result.warnings.append(f"{label}: skipped: {decoded.label}")
        return
    array = to_host_array(decoded.array, tensor.data_type)
    out_format = tensor.format
    if options.target_format is not None:
        converted = _to_target_format(
            array, tensor, options.target_format, options.shape, label, result
        )
        if isinstance(converted, str):
            if options.file_type != "msnpy":
                result.warnings.append(f"{label}: not written: {converted}")
                return
            # msaccucmp's msnpy mode saves a tensor it could not convert as it is
            result.warnings.append(f"{label}: written unconverted: {converted}")
        else:
            array, out_format = converted
    if save_shape is not None:
        if math.prod(save_shape) == array.size:
            array = array.reshape(save_shape)
        else:
            result.warnings.append(
                f"{label}: FFTS+ slice shape {list(save_shape)} does not hold {array.size} elements; "
                "header shape used"
            )
    if options.file_type == "bin":
        dims = "_".join(str(d) for d in array.shape)
        stem = (
            f"{base}.{role}.{tensor.index}.{dims}.{array.dtype.name}.{pe.format_name(out_format)}"
        )
        target = _output_name(out_dir, stem + ".bin", ".bin")
        with open(target, "wb") as out:
            _write_payload(out, array, tensor, source)
    else:
        if options.file_type == "msnpy":
            stem = f"{base}.{role}.{tensor.index}.{pe.format_name(out_format)}"
        elif options.target_format is not None:
            stem = f"{base}.{role}.{tensor.index}.{'x'.join(str(d) for d in array.shape)}"
        else:
            stem = f"{base}.{role}.{tensor.index}"
        target = _output_name(out_dir, stem + ".npy", ".npy")
        _save_npy(target, array, tensor, source)
    result.written.append(target)
