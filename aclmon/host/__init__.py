"""aclmon.host: every NPU and every process on this host, without an agent.

The host source reads the driver through DCMI (``libdcmi.so`` with ctypes) when
the library is there, else through the ``npu-smi`` command, and reports plain
:class:`HostSnapshot` values: one per refresh, every unknown value ``None``.
:class:`HostSource` refreshes a back end on its own thread for a screen;
:func:`collect_once` takes one snapshot for ``aclmon top --once``. No Textual
here. See docs/host.md.
"""

from __future__ import annotations

from aclmon.events.host import DeviceReading, HostSnapshot, ProcessReading, SourceName
from aclmon.host.dcmi import DcmiBackend, DcmiUnavailable, find_dcmi_library
from aclmon.host.npusmi import NpuSmiBackend, find_npu_smi
from aclmon.host.npusmi_text import NpuSmiFormatError, parse_chip_values, parse_info
from aclmon.host.source import (
    Backend,
    HostSource,
    HostStatus,
    HostUnavailable,
    collect_once,
    open_backend,
)

__all__ = [
    "Backend",
    "DcmiBackend",
    "DcmiUnavailable",
    "DeviceReading",
    "HostSnapshot",
    "HostSource",
    "HostStatus",
    "HostUnavailable",
    "NpuSmiBackend",
    "NpuSmiFormatError",
    "ProcessReading",
    "SourceName",
    "collect_once",
    "find_dcmi_library",
    "find_npu_smi",
    "open_backend",
    "parse_chip_values",
    "parse_info",
]
