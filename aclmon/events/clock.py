"""Building new events: sequence numbers, timestamps, the Hello of this process."""

from __future__ import annotations

import itertools
import os
import socket
import sys
import time
from typing import Any

from aclmon import __version__
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


def hello_fields(runtime: str, soc_name: str, device_count: int) -> tuple[Any, ...]:
    """The fields of a Hello for this process (after seq and ts_ns)."""
    return (
        SCHEMA_VERSION,
        __version__,
        os.getpid(),
        socket.gethostname(),
        tuple(sys.argv),
        runtime,
        soc_name,
        device_count,
    )
