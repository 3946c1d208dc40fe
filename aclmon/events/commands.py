"""The commands a viewer sends an agent, and the agent's reply to each.

They are events like any other (same framing, recording and decoding), declared
with :func:`register` as the events of :mod:`aclmon.events.schema` are; a
registration with ``command=True`` is a kind a viewer may send. The schema's
``Event`` union, ``Command`` and ``COMMAND_KINDS`` take them from here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from aclmon.events.registry import register


@register(64, "set_profiling_config", command=True)
class SetProfilingConfig(NamedTuple):
    """Command: profiling flags, AI Core metrics, devices, sampling interval."""

    seq: int
    ts_ns: int
    request_id: int
    flags: int
    aicore_metrics: int
    devices: tuple[int, ...]  # empty = every device in use
    sample_interval_ms: int  # 0 = leave unchanged


class _Request(NamedTuple):
    """A command that carries nothing but its ``request_id``: the fields of the
    commands below, each its own kind (a subclass adds no field; commands are
    few, so their instances go without ``__slots__``)."""

    seq: int
    ts_ns: int
    request_id: int


@register(65, "start_profiling", command=True)
class StartProfiling(_Request):
    """Command: start profiling with the configured settings."""


@register(66, "stop_profiling", command=True)
class StopProfiling(_Request):
    """Command: stop aclmon's profiling session."""


@register(67, "request_snapshot", command=True)
class RequestSnapshot(_Request):
    """Command: re-publish the current state (for a viewer that joins late)."""


@register(68, "ping", command=True)
class Ping(_Request):
    """Command: liveness check (the publisher answers it itself)."""


@register(96, "reply")
class Reply(NamedTuple):
    """The agent's answer to one command, matched by ``request_id``."""

    seq: int
    ts_ns: int
    request_id: int
    code: int  # 0 = ok, else an ACL error code
    message: str
    data: dict[str, Any]  # plain values (the schema's Summary)
