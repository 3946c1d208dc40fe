"""A loaded model's name and operator count, from what the job loaded.

pyACL's model description has neither, so the agent reads them from the model
the job gave the runtime: a simulator model description (JSON: its ``name`` and
its ``ops``), the description a ``.om`` path stands for in the simulator (the
sidecar ``<path>.json``), or the header of a real ``.om`` (GE's 256-byte
``ModelFileHeader``: magic ``IMOD`` at 0, the model name, 32 bytes, at 84; the
operator count of a real .om is not read: 0 = unknown). docs/sim.md describes
the description format and the sidecar; the agent imports nothing of the sim.

Only called after a successful load (the memory the job passed is valid then),
never raises: anything unreadable falls back to the file name or ``model-<id>``.
"""

from __future__ import annotations

import ctypes
import json
import os
import struct

OM_MAGIC = 0x444F4D49
OM_HEADER_SIZE = 256
OM_NAME = slice(84, 116)
#: descriptions larger than this are not parsed (the simulator refuses them too).
MAX_DESCRIPTION_BYTES = 16 << 20


#: (name, op count, op name -> op type): what a description says of the model
Described = tuple[str, int, dict[str, str]]


def _from_bytes(raw: bytes) -> Described | None:
    if raw.lstrip()[:1] == b"{":
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return None
        name = data.get("name") if isinstance(data, dict) else None
        ops = data.get("ops") if isinstance(data, dict) else None
        if isinstance(name, str) and name:
            ops = ops if isinstance(ops, list) else []
            # the operators' types, which pyACL's exception path does not give
            types = {
                op["name"]: op["type"]
                for op in ops
                if isinstance(op, dict)
                and isinstance(op.get("name"), str)
                and isinstance(op.get("type"), str)
            }
            return name, len(ops), types
        return None
    if len(raw) >= OM_HEADER_SIZE and struct.unpack_from("<I", raw, 0)[0] == OM_MAGIC:
        name = raw[OM_NAME].split(b"\0", 1)[0].decode("utf-8", "replace")
        return (name, 0, {}) if name else None
    return None


def _read(path: str, limit: int) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(limit)


def from_file(path: str, model_id: int) -> Described:
    """``(name, op count, op types)`` of the model loaded from ``path``."""
    found: Described | None = None
    try:
        head = _read(path, OM_HEADER_SIZE)
        raw = _read(path, MAX_DESCRIPTION_BYTES) if head.lstrip()[:1] == b"{" else head
        found = _from_bytes(raw)
    except OSError:  # a sidecar-only model: the simulator loads the description alone
        pass
    sidecar = path + ".json"
    if found is None or found[1] == 0:
        # The description names the model everywhere and lists its operators' types.
        try:
            if os.path.isfile(sidecar):
                found = _from_bytes(_read(sidecar, MAX_DESCRIPTION_BYTES)) or found
        except OSError:
            pass
    return found or (os.path.basename(path) or f"model-{model_id}", 0, {})


def from_memory(pointer: int, size: int, model_id: int) -> Described:
    """``(name, op count, op types)`` of the model loaded from ``size`` bytes at ``pointer``."""
    try:
        if pointer and size > 0:
            head = ctypes.string_at(pointer, min(size, OM_HEADER_SIZE))
            if head.lstrip()[:1] == b"{" and size <= MAX_DESCRIPTION_BYTES:
                head = ctypes.string_at(pointer, size)
            found = _from_bytes(head)
            if found is not None:
                return found
    except (OSError, ValueError):
        pass
    return f"model-{model_id}", 0, {}
