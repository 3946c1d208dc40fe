"""Running agents, as small JSON files in the per-user runtime directory.

An agent calls :func:`register` once its publisher is listening and
:func:`unregister` when it stops; a crashed agent leaves its file behind, so
:func:`list_agents` checks every PID and deletes the entries of dead ones.
:func:`resolve_target` turns what a user typed after ``aclmon attach`` /
``record`` / ``events`` into an address.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from collections.abc import Collection
from dataclasses import asdict, dataclass
from pathlib import Path

from aclmon.bus.transport import AddressError, parse_address
from aclmon.errors import AclmonError
from aclmon.events.redaction import redact_argv
from aclmon.locations import runtime_dir

_PREFIX = "agent-"
_SUFFIX = ".json"
#: registry files are tiny; a bigger one is not ours
_MAX_ENTRY_BYTES = 64 * 1024


class TargetError(AclmonError):
    """A target that names no running agent, or several."""


@dataclass(frozen=True)
class AgentInfo:
    pid: int
    address: str
    host: str
    argv: tuple[str, ...]
    started: float  # UNIX time

    def describe(self) -> str:
        command = " ".join(self.argv) or "?"
        return f"pid {self.pid} at {self.address}: {command}"


def _entry_path(pid: int, directory: Path | None = None) -> Path:
    return (directory or runtime_dir()) / f"{_PREFIX}{pid}{_SUFFIX}"


def _pid_of_name(name: str) -> int | None:
    """The PID an entry's file name is for (None: not an entry's name)."""
    digits = name[len(_PREFIX) : -len(_SUFFIX)]
    return int(digits) if digits.isdigit() else None


def register(
    address: str,
    *,
    pid: int | None = None,
    argv: list[str] | tuple[str, ...] | None = None,
    directory: Path | None = None,
) -> Path:
    """Announce an agent listening at ``address``; returns the entry's path.

    Written to a temporary name then renamed, so readers never see half a file.
    """
    info = AgentInfo(
        pid=pid or os.getpid(),
        address=address,
        host=socket.gethostname(),
        argv=redact_argv(sys.argv if argv is None else argv),
        started=time.time(),
    )
    path = _entry_path(info.pid, directory)
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump({**asdict(info), "argv": list(info.argv)}, handle)
    os.replace(temporary, path)
    return path


def unregister(pid: int | None = None, directory: Path | None = None) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_entry_path(pid or os.getpid(), directory))


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, belongs to someone else
        return True
    return True


def _read_entry(path: Path) -> AgentInfo | None:
    try:
        if path.stat().st_size > _MAX_ENTRY_BYTES:
            return None
        raw = json.loads(path.read_text())
        return AgentInfo(
            pid=int(raw["pid"]),
            address=str(raw["address"]),
            host=str(raw.get("host", "")),
            argv=tuple(str(a) for a in raw.get("argv", ())),
            started=float(raw.get("started", 0.0)),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def list_agents(directory: Path | None = None, *, skip: Collection[int] = ()) -> list[AgentInfo]:
    """Live agents, oldest first; entries of dead PIDs (or unreadable ones) are deleted.
    The entries of the PIDs in ``skip`` (agents the caller follows already) are left
    unread and out of the list: a relay of a host of many ranks rescans the registry
    every second, and reading each rank's entry was a tenth of its CPU."""
    directory = directory or runtime_dir()
    agents = []
    for path in sorted(directory.glob(f"{_PREFIX}*{_SUFFIX}")):
        if skip and _pid_of_name(path.name) in skip:
            continue
        info = _read_entry(path)
        if info is None or not pid_alive(info.pid):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            continue
        agents.append(info)
    agents.sort(key=lambda a: a.started)
    return agents


def agent_pids(directory: Path | None = None) -> list[int]:
    """The pids of the running agents (the host source marks their processes)."""
    return [agent.pid for agent in list_agents(directory)]


def resolve_target(text: str | None, directory: Path | None = None) -> str:
    """The address to connect to for a target as typed by the user.

    ``None``: the only running agent (an error lists them if there are several,
    or says there is none); a PID; a socket path (``/x.sock``, ``unix:/x``);
    or ``tcp://host:port``.
    """
    if text is None or not text.strip():
        agents = list_agents(directory)
        if not agents:
            raise TargetError(
                "no running agent found (start one with `aclmon run script.py` or `aclmon demo`)"
            )
        if len(agents) > 1:
            listing = "\n  ".join(a.describe() for a in agents)
            raise TargetError(f"several agents are running; name one by PID:\n  {listing}")
        return agents[0].address
    text = text.strip()
    if text.isdigit():
        pid = int(text)
        for agent in list_agents(directory):
            if agent.pid == pid:
                return agent.address
        raise TargetError(f"no running agent with PID {pid}")
    try:
        address = parse_address(text)
    except AddressError as exc:
        raise TargetError(
            f"not a target: {text!r} (use a PID, a socket path or tcp://host:port)"
        ) from exc
    if address.scheme == "unix" and not os.path.exists(address.path):
        raise TargetError(f"no agent socket at {address.path}")
    return str(address)
