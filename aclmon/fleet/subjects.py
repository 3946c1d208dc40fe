"""NATS subjects and JetStream streams of the fleet, and how frames are routed.

A subject is ``aclmon.<job>.<host>.<pid>.<class>``. Every frame of an agent
goes to its ``events`` subject, in order; low-rate kinds are copied to
``summary``, the kinds nobody may miss to ``alerts``, and the agent's
snapshot (its ``seq = 0`` frames) to ``state``. Commands are requests on
``cmd``. The relay routes by the kind byte of each payload without decoding
it: every payload is a msgpack array ``[kind, seq, ts_ns, ...]`` whose
header is one byte (fixarray, up to 15 elements) or three (array16, as for
Hello), followed by the kind (a positive fixint) and the first byte of
``seq`` (``0x00`` only for ``seq = 0``).
"""

from __future__ import annotations

from dataclasses import dataclass

from aclmon import events as ev

# The tokens are shared with the fleet store, which checks sources against their subjects.
from aclmon.events.names import short_host as short_host
from aclmon.events.names import token as token

PREFIX = "aclmon"
EVENTS = "events"
SUMMARY = "summary"
ALERTS = "alerts"
STATE = "state"
CMD = "cmd"
CLASSES = (EVENTS, SUMMARY, ALERTS, STATE)

#: header on an empty ``state`` message: the agent is gone.
GONE_HEADER = "Aclmon-Gone"

#: one JetStream stream per class (streams may not overlap subjects).
STREAMS = {
    EVENTS: "ACLMON_EVENTS",
    SUMMARY: "ACLMON_SUMMARY",
    ALERTS: "ACLMON_ALERTS",
    STATE: "ACLMON_STATE",
}

#: kinds copied to ``summary`` (a few per second per rank).
SUMMARY_KINDS = frozenset(
    ev.kind_of(cls)
    for cls in (ev.Hello, ev.DeviceSample, ev.HostSample, ev.ProfilingState, ev.Drops)
)
#: kinds copied to ``alerts`` (rare, kept longest).
ALERT_KINDS = frozenset(ev.kind_of(cls) for cls in (ev.AclException, ev.DumpFileSeen, ev.LogLine))
HELLO_KIND = ev.kind_of(ev.Hello)
REPLY_KIND = ev.kind_of(ev.Reply)


def subject(job: str, host: str, pid: int | str, cls: str) -> str:
    return f"{PREFIX}.{job}.{host}.{pid}.{cls}"


@dataclass(frozen=True)
class Scope:
    """What a viewer watches: a job, one host of it, or one agent."""

    job: str
    host: str = "*"
    pid: str = "*"

    def subject(self, cls: str) -> str:
        return subject(self.job, self.host, self.pid, cls)

    def describe(self) -> str:
        parts = [self.job]
        if self.host != "*":
            parts.append(self.host)
        if self.pid != "*":
            parts.append(self.pid)
        return "/".join(parts)


@dataclass(frozen=True)
class SourceSubject:
    job: str
    host: str
    pid: int
    cls: str


#: a relay's own subjects use this in place of a pid: aclmon.<job>.<host>.relay.heartbeat
RELAY = "relay"
#: published by each relay every second, for each job it serves (not kept in a stream)
HEARTBEAT = "heartbeat"
HEARTBEAT_EVERY_S = 1.0


def heartbeat_subject(job: str, host: str) -> str:
    return subject(job, host, RELAY, HEARTBEAT)


def relay_inbox(host: str) -> str:
    """The prefix of the reply subjects of ``host``'s relay (its JetStream requests:
    the clock probes): its credentials may read these, not every client's ``_INBOX``."""
    return f"_INBOX.{RELAY}.{host}"


def parse_heartbeat_subject(text: str) -> str | None:
    """The host of a relay's heartbeat subject, or None."""
    parts = text.split(".")
    if len(parts) != 5 or parts[0] != PREFIX or parts[3:] != [RELAY, HEARTBEAT]:
        return None
    return parts[2]


def parse_subject(text: str) -> SourceSubject | None:
    """The parts of an agent's subject, or None for anything else (the relay's
    own subjects, other prefixes)."""
    parts = text.split(".")
    if len(parts) != 5 or parts[0] != PREFIX or not parts[3].isdigit():
        return None
    return SourceSubject(parts[1], parts[2], int(parts[3]), parts[4])
