"""Offline model (.om) paths: which model description the sim runs for them.

Real programs load ``.om`` files built by ATC. The sim runs model descriptions
(JSON, docs/sim.md), so for a path that is not a description it looks, in
order, for:

1. a sidecar file next to it: ``<path>.json`` (``resnet50.om.json``);
2. an entry in the ``models`` mapping of the sim config (``ACLMON_SIM_CONFIG``):
   keys are .om paths (as given, absolute, or the file name) or model names
   (the name in the .om header, for ``load_from_mem`` of a real .om).

When the .om itself is a real one, its 256-byte header is read for the error
message and the mapping: the GE ``ModelFileHeader`` layout (little-endian):
magic ``0x444F4D49`` ("IMOD") at 0, header size at 4, version at 8, a 64-byte
checksum, the payload length at 76, flags at 80..83, the model name (32 bytes,
NUL padded) at 84, ``ops`` at 116, 32 bytes of user information at 120, the
IR version at 152, the model count at 156 and the platform version (20 bytes)
at 160. The inputs and outputs live in a later partition whose byte layout
aclmon has not verified, so the sim does not read them.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

OM_MAGIC = 0x444F4D49
OM_HEADER_SIZE = 256
SIDECAR_SUFFIX = ".json"


@dataclass(frozen=True)
class OmHeader:
    name: str
    version: int
    length: int
    model_num: int
    platform_version: str


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def read_header(raw: bytes) -> OmHeader | None:
    """The header of a real offline model, or None when ``raw`` is not one."""
    if len(raw) < OM_HEADER_SIZE or struct.unpack_from("<I", raw, 0)[0] != OM_MAGIC:
        return None
    version = struct.unpack_from("<I", raw, 8)[0]
    length = struct.unpack_from("<I", raw, 76)[0]
    model_num = struct.unpack_from("<I", raw, 156)[0]
    return OmHeader(_text(raw[84:116]), version, length, model_num, _text(raw[160:180]))


def looks_like_description(raw: bytes) -> bool:
    return raw.lstrip()[:1] == b"{"


def mapped(models: dict[str, str], path: str | None, name: str | None) -> str | None:
    """The description the config maps a .om path or model name to."""
    keys = []
    if path:
        keys += [path, os.path.abspath(path), os.path.basename(path)]
    if name:
        keys.append(name)
    for key in keys:
        if key in models:
            return models[key]
    return None


def description_for(path: str, models: dict[str, str]) -> tuple[str | None, OmHeader | None]:
    """``(description path or None, the .om header if the file is a real .om)``.

    Returns ``path`` itself when it already is a description.
    """
    header = None
    try:
        with open(path, "rb") as handle:
            head = handle.read(OM_HEADER_SIZE)
    except OSError:
        head = b""
    if head and looks_like_description(head):
        return path, None
    header = read_header(head)
    sidecar = path + SIDECAR_SUFFIX
    if Path(sidecar).is_file():
        return sidecar, header
    found = mapped(models, path, header.name if header else None)
    return found, header


def missing_message(path: str, header: OmHeader | None, exists: bool) -> str:
    what = (
        f"{path} is an offline model (name {header.name!r}, platform "
        f"{header.platform_version or 'unknown'})"
        if header
        else (f"{path} is not a model description" if exists else f"{path} does not exist")
    )
    return (
        f"{what}; the simulator runs model descriptions: write {path}{SIDECAR_SUFFIX} "
        "or map the path in the 'models' of ACLMON_SIM_CONFIG (see docs/sim.md)"
    )
