"""Who a process on an NPU is: user, full command line and short name, from ``/proc``.

npu-smi cuts names (``comm`` is 15 bytes, tables cut further) and DCMI gives only
pids, so both back ends ask here. A process in another pid namespace (a
container) or already gone is simply not found: its fields stay unknown.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace

import psutil

from aclmon.events.host import ProcessReading


@dataclass(frozen=True)
class ProcessIdentity:
    user: str | None = None
    command: str | None = None
    name: str | None = None


def identify(pid: int) -> ProcessIdentity:
    """What ``/proc/<pid>`` says (empty when it is not visible from here)."""
    try:
        process = psutil.Process(pid)
    except (psutil.Error, ValueError):
        return ProcessIdentity()
    user = command = name = None
    # Each field alone: another user's process may show its name but not its command.
    with contextlib.suppress(psutil.Error):
        name = process.name() or None
    with contextlib.suppress(psutil.Error, KeyError):
        user = process.username() or None
    with contextlib.suppress(psutil.Error):
        command = " ".join(process.cmdline()) or None
    return ProcessIdentity(user=user, command=command, name=name)


def complete(readings: list[ProcessReading]) -> tuple[ProcessReading, ...]:
    """The readings with user and command (and a name where the tool gave none)."""
    seen: dict[int, ProcessIdentity] = {}
    result = []
    for reading in readings:
        identity = seen.get(reading.pid)
        if identity is None:
            identity = seen[reading.pid] = identify(reading.pid)
        result.append(
            replace(
                reading,
                user=identity.user,
                command=identity.command,
                name=reading.name or identity.name,
            )
        )
    return tuple(result)
