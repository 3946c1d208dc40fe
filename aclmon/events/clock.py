"""Building new events: sequence numbers, timestamps, the Hello of this process."""

from __future__ import annotations

import itertools
import os
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from aclmon import __version__
from aclmon.events.redaction import redact_argv
from aclmon.events.schema import SCHEMA_VERSION


class Clock:
    """Per-source sequence numbers and timestamps for new events (thread-safe)."""

    __slots__ = ("_counter",)

    def __init__(self, start: int = 1) -> None:
        # next() on itertools.count is atomic under the GIL: no lock on the hot path.
        self._counter = itertools.count(start)

    def make(self, cls: type, *fields: Any) -> Any:
        """``cls(seq, ts_ns, *fields)`` with the next sequence number and now."""
        return cls(next(self._counter), time.time_ns(), *fields)


#: a jump in the sequence larger than this is not events lost (no publisher
#: drops that many) but a bogus number: it counts as one missed event, no more
IMPLAUSIBLE_GAP = 1 << 32


def missed_between(previous: int, seq: int) -> int:
    """Events missing between sequence numbers ``previous`` and ``seq`` (> previous)."""
    missed = seq - previous - 1
    return 1 if missed > IMPLAUSIBLE_GAP else missed


def hello_fields(
    runtime: str,
    soc_name: str,
    device_count: int,
    *,
    pid: int | None = None,
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Any, ...]:
    """The fields of a Hello (after seq and ts_ns) for this process, or for the
    process ``pid`` with its own ``argv`` and ``environ`` (``aclmon watch``)."""
    argv = list(sys.argv if argv is None else argv)
    identity = rank_identity(os.environ if environ is None else environ, argv)
    return (
        SCHEMA_VERSION,
        __version__,
        os.getpid() if pid is None else pid,
        socket.gethostname(),
        redact_argv(argv),
        runtime,
        soc_name,
        device_count,
        identity["job"],
        identity["rank"],
        identity["rank_size"],
        identity["local_rank"],
        identity["device_id"],
        identity["rank_env"],
    )


#: launcher variables copied into ``Hello.rank_env`` (plus every ``HCCL_*``)
RANK_VARIABLES = (
    "RANK_ID", "RANK", "RANK_SIZE", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
    "DEVICE_ID", "ASCEND_DEVICE_ID", "RANK_TABLE_FILE", "MASTER_ADDR", "MASTER_PORT",
)  # fmt: skip
_MAX_RANK_ENV = 32
_MAX_VALUE = 256


def _number(environ: Any, *names: str) -> int:
    for name in names:
        text = str(environ.get(name, "")).strip()
        if text.lstrip("-").isdigit():
            return int(text)
    return -1


def rank_identity(environ: Any, argv: list[str]) -> dict[str, Any]:
    """Job name, rank, size, local rank and device of this process, from the
    launcher's environment (HCCL-style ``RANK_ID``/``RANK_SIZE``/``DEVICE_ID``
    or torchrun-style ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``).

    The job is ``$ACLMON_JOB``, else the rank table's file name, else the
    script's name. Values that are not numbers count as not set.
    """
    rank_env: dict[str, str] = {}
    names = [n for n in RANK_VARIABLES if n in environ]
    names += sorted(n for n in environ if n.startswith("HCCL_"))
    for name in names[:_MAX_RANK_ENV]:
        rank_env[name] = str(environ[name])[:_MAX_VALUE]
    job = str(environ.get("ACLMON_JOB", "")).strip()
    table = str(environ.get("RANK_TABLE_FILE", "")).strip()
    if not job and table:
        job = os.path.splitext(os.path.basename(table))[0]
    if not job:
        script = next((a for a in argv if a.endswith(".py")), argv[0] if argv else "")
        base = os.path.basename(script)
        job = base[:-3] if base.endswith(".py") else base
    return {
        "job": job[:_MAX_VALUE],
        "rank": _number(environ, "RANK_ID", "RANK"),
        "rank_size": _number(environ, "RANK_SIZE", "WORLD_SIZE"),
        "local_rank": _number(environ, "LOCAL_RANK"),
        "device_id": _number(environ, "DEVICE_ID", "ASCEND_DEVICE_ID"),
        "rank_env": rank_env,
    }
