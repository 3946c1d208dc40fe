"""Every agent on this host as one feed (``aclmon attach --all`` / ``attach PID PID``).

One bus :class:`~aclmon.bus.Subscriber` per agent. With ``pids=None`` the
registry is read every second: new agents are followed as they appear, and
agents whose process ended are marked gone (their state stays on screen).
Same interface as :class:`~aclmon.fleet.nats_source.NatsFeed`: ``poll()``
gives ``(source key, events)`` batches, ``send_command(key, ...)`` reaches
one agent.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from aclmon import events as ev
from aclmon.bus import registry
from aclmon.bus.states import CLOSED, CONNECTED, CONNECTING
from aclmon.bus.subscriber import Subscriber
from aclmon.errors import AclmonError
from aclmon.fleet.subjects import short_host
from aclmon.store.fleet import SourceKey

REGISTRY_POLL_S = 1.0


class LocalFeed:
    def __init__(
        self,
        pids: list[int] | None = None,
        *,
        token: str | None = None,
        readonly: bool = False,
        registry_dir: Any = None,
    ) -> None:
        self.pids = pids
        self.token = token
        self.readonly = readonly
        self.registry_dir = registry_dir
        self.description = (
            "every agent on this host" if pids is None else "pids " + " ".join(map(str, pids))
        )
        self.state = CONNECTING
        self.state_reason = ""
        self.caught_up = threading.Event()
        self.gone: set[SourceKey] = set()
        self._subscribers: dict[SourceKey, Subscriber] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._scan()
        if self.pids is not None:
            missing = sorted(set(self.pids) - {key[1] for key in self._subscribers})
            if missing:
                self.close()
                raise AclmonError("no running agent with PID " + ", ".join(map(str, missing)))
        self.state = CONNECTED
        self._thread = threading.Thread(target=self._watch, name="aclmon-local-fleet", daemon=True)
        self._thread.start()

    def _scan(self) -> None:
        agents = registry.list_agents(self.registry_dir)
        alive = set()
        for info in agents:
            if self.pids is not None and info.pid not in self.pids:
                continue
            key = (short_host(info.host), info.pid)
            alive.add(key)
            with self._lock:
                if key in self._subscribers:
                    continue
                subscriber = Subscriber(
                    info.address, token=self.token, readonly=self.readonly, backoff_max=1.0
                )
                self._subscribers[key] = subscriber
            subscriber.start()
        with self._lock:
            for key, subscriber in self._subscribers.items():
                if key not in alive and key not in self.gone:
                    self.gone.add(key)
                    subscriber.close()
        self.caught_up.set()

    def _watch(self) -> None:
        while not self._stop.wait(REGISTRY_POLL_S):
            with contextlib.suppress(Exception):  # a registry hiccup: try again next time
                self._scan()

    def poll(self, max_events: int = 100_000) -> list[tuple[SourceKey, list[ev.Event]]]:
        with self._lock:
            subscribers = list(self._subscribers.items())
        out = []
        room = max_events
        for key, subscriber in subscribers:
            if room <= 0:
                break
            events = subscriber.poll(room, 0)
            out.append((key, events))  # an empty batch still makes the source known
            room -= len(events)
        return out

    def keys(self) -> list[SourceKey]:
        with self._lock:
            return list(self._subscribers)

    def decoder_counts(self, key: SourceKey | None = None) -> tuple[int, int]:
        """(malformed, unknown) input skipped: from every agent, or from the one of ``key``."""
        with self._lock:
            subscribers = [s for k, s in self._subscribers.items() if key in (None, k)]
        return (sum(s.malformed for s in subscribers), sum(s.unknown for s in subscribers))

    def send_command(
        self, key: SourceKey, cls: type, *fields: Any, timeout: float = 5.0
    ) -> ev.Reply:
        if self.readonly:
            raise AclmonError("read-only: commands are not sent")
        with self._lock:
            subscriber = self._subscribers.get(key)
        if subscriber is None or key in self.gone:
            raise AclmonError(f"no running agent pid {key[1]} on {key[0]}")
        return subscriber.send_command(cls, *fields, timeout=timeout)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        with self._lock:
            subscribers = list(self._subscribers.values())
        for subscriber in subscribers:
            subscriber.close()
        self.state = CLOSED
