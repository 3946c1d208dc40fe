"""Who a process on an NPU is: user, full command line and short name, from ``/proc``;
and the one thing aclmon does to one: a signal (``T``/``K`` in the Host view).

npu-smi cuts names (``comm`` is 15 bytes, tables cut further) and DCMI gives only
pids, so both back ends ask here. A process in another pid namespace (a
container) or already gone is simply not found: its fields stay unknown.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass, replace

import psutil

from aclmon.errors import AclmonError
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


class SignalRefused(AclmonError):
    """Why a process may not be signalled from here (its owner, read-only, gone)."""


@dataclass(frozen=True)
class SignalTarget:
    """A process checked for signalling: ours, alive, not aclmon itself.

    It holds the process as it was when checked, so :func:`send_signal` reaches
    that process or none: a pid reused by another process since is refused.
    """

    pid: int
    user: str
    command: str
    process: psutil.Process


def signal_target(pid: int) -> SignalTarget:
    """The process ``pid`` if this user may signal it, else :class:`SignalRefused`.

    Only processes of the user running aclmon (the real uid, also for root: a
    monitor does not end other people's jobs) and never aclmon's own process.
    """
    if pid == os.getpid():
        raise SignalRefused(f"pid {pid} is this aclmon")
    try:
        process = psutil.Process(pid)
        owner = process.uids().real
    except psutil.NoSuchProcess:
        raise SignalRefused(f"pid {pid} has exited") from None
    except (psutil.Error, ValueError) as exc:
        raise SignalRefused(f"pid {pid} cannot be read here: {exc}") from None
    identity = identify(pid)
    user = identity.user or str(owner)
    if owner != os.getuid():
        raise SignalRefused(f"pid {pid} belongs to {user}: aclmon signals only your own processes")
    return SignalTarget(pid, user, identity.command or identity.name or "?", process)


def send_signal(target: SignalTarget, signum: int) -> str:
    """Send ``signum`` to the checked process; what happened, in words."""
    name = signal.Signals(signum).name
    try:
        # psutil checks first that this pid is still the process that was checked
        target.process.send_signal(signum)
    except psutil.NoSuchProcess:
        raise SignalRefused(f"pid {target.pid} has exited (or its pid was reused)") from None
    except psutil.AccessDenied:
        raise SignalRefused(f"{name} to pid {target.pid}: permission denied") from None
    return f"{name} sent to pid {target.pid} ({target.command[:60]})"
