"""Decode Ascend dump files: operator dumps, overflow (Opdebug) records, nano dumps, stats CSVs.

The layouts follow ``docs/reference/dump_formats.md``; where that is silent we
follow what msaccucmp does. Everything here is plain Python + numpy, holds no
global mutable state and is safe to call from worker threads (the TUI decodes
off the UI thread). Only :class:`aclmon.errors.DecodeError` (an ``AclmonError``)
escapes on bad input, naming the file and the byte offset.

Public API (import from ``aclmon.dump``; submodules load lazily so that
``aclmon --help`` never imports numpy):

``classify(path) -> "op-dump" | "overflow" | "stats" | "nano" | None``
    Cheap: the file name and the first bytes only.
``summarize(path) -> dict``
    Small JSON-able dict for ``DumpFileSeen.summary``: ``kind``, ``op_type``,
    ``op_name``, ``task_id``, ``stream_id``, ``timestamp``, ``tensors`` (role,
    index, dtype, format, shape, original_shape, size); overflow files add
    ``records`` (decoded Opdebug dicts, each with ``explained`` status words).
    Never raises: a bad file gives ``{"kind": ..., "error": "..."}``.
``read_dump(path) -> DumpFile``
    Header fields (``version``, ``dump_time``, ``op_name``, ``attrs``,
    ``dfx_message``), ``inputs``/``outputs``/``buffers``/``workspaces`` as
    :class:`Tensor` objects whose bytes are read on first use of ``.raw`` (the
    bytes as ``uint8``) or ``.array`` (the typed view of them), ``warnings`` (list of str), and
    ``name`` (the parsed file name). Reads 2.0 files, legacy v1 files and nano dumps.
``decode_opdebug(data, source="<bytes>") -> dict``
    One overflow record (old 2048-byte or new magic layout) in msaccucmp's key
    names and order.
``explain_status(record) -> list[str]``
    The status words of a decoded record in words (bit table of the reference).
``overflow_target(record) -> dict``
    ``task_id``, ``stream_id``, ``context_id``, ``thread_id`` of the operator
    that overflowed (what links an Opdebug record to its operator dump).
``tensor_stats(array, bins=32, first=8) -> dict``
    Shape, dtype, min/max/mean/std, NaN/+Inf/-Inf/zero counts, first values and
    a histogram, computed in chunks (bounded extra memory).
``DumpIndex(directory)``
    Walks a dump directory, classifies files and links each overflow record to
    the operator dump it points at (task id, stream id): ``files``,
    ``op_dumps``, ``overflows``, ``links``, ``find(task_id, stream_id)``.
``parse_dump_name(name) -> DumpName | None`` and ``read_stats_csv(path)``.
``convert_file(path, out_dir, ConvertOptions(...))``, ``convert_to_host(array,
src_format, target_shape, dst_format=None)`` and ``can_convert(src, dst)``
implement ``aclmon convert``. Dtype/format numbers are the dump *proto* enums
(``aclmon.dump.proto_enums``), never ``aclDataType``/``aclFormat``.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> submodule that defines it; loaded on first use (PEP 562).
_EXPORTS: dict[str, str] = {
    "classify": "aclmon.dump.summary",
    "summarize": "aclmon.dump.summary",
    "read_dump": "aclmon.dump.reader",
    "DumpFile": "aclmon.dump.reader",
    "Tensor": "aclmon.dump.reader",
    "decode_opdebug": "aclmon.dump.opdebug",
    "explain_status": "aclmon.dump.opdebug",
    "overflow_target": "aclmon.dump.opdebug",
    "tensor_stats": "aclmon.dump.stats",
    "DumpIndex": "aclmon.dump.index",
    "parse_dump_name": "aclmon.dump.naming",
    "DumpName": "aclmon.dump.naming",
    "read_stats_csv": "aclmon.dump.statscsv",
    "convert_file": "aclmon.dump.convert",
    "ConvertOptions": "aclmon.dump.convert",
    "convert_to_host": "aclmon.dump.formats",
    "can_convert": "aclmon.dump.formats",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'aclmon.dump' has no attribute {name!r}")
    return getattr(importlib.import_module(module_name), name)


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
