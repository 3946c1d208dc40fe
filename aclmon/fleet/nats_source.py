"""A viewer's feed from NATS: per-source events of a job, a host or one agent.

An asyncio loop on a daemon thread does all NATS work; the viewer calls
:meth:`NatsFeed.poll` on its own timer and gets ``(source key, events)``
batches, never blocking. A source key is ``(host, pid)`` from the subject.

Every source starts from its latest snapshot in ``ACLMON_STATE`` (when the
server has JetStream), then:

- ``since_s = None``: live only, a core subscription on the ``events``
  subjects of the scope;
- ``since_s >= 0``: an ordered JetStream consumer on ``ACLMON_EVENTS`` starting
  ``since_s`` seconds ago, which continues live once it has caught up
  (``caught_up`` is set then). ``since_s = 0`` replays everything kept.
- ``summary_only``: the ``summary`` and ``alerts`` subjects instead of
  ``events`` (a few events per second per rank, for very large jobs; there
  are no execution counts then).

Each message holds whole frames of one source; the messages of one turn of the
event loop, from every source, are decoded as one batch
(:class:`~aclmon.fleet.message_decoder.MessageDecoder`). Relays' heartbeats are kept for
:meth:`NatsFeed.take_heartbeats` (staleness in the fleet store; the clocks are
compared by the relays' ``ClockOffset`` events, which come with the events).

A server restarted without its store has lost the streams: after a reconnect
the feed looks at them again, and when one was made anew (by a relay) it
replays it from its start and says so in ``state_reason`` (the history before
is gone). :meth:`NatsFeed.close` drops what is still pending (a viewer that
quits in the middle of a long catch-up does not decode the rest first). Commands are NATS requests to the
relay on the agent's ``cmd`` subject; a credential that may not publish there
makes the feed read-only (the server reports a permissions violation).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import secrets
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import msgpack

from aclmon import events as ev
from aclmon.bus.states import AUTH_FAILED, CLOSED, CONNECTED, CONNECTING, DISCONNECTED
from aclmon.errors import CommandRefused
from aclmon.events.wire import FrameDecoder, FrameError, StreamDecoder, encode_frame
from aclmon.fleet import subjects as sj
from aclmon.fleet.connect import Credentials, NatsError, connect
from aclmon.fleet.message_decoder import Message, MessageDecoder
from aclmon.store.fleet import SourceKey

#: decoded events held for poll() before new ones are dropped (and counted)
DEFAULT_BUFFER_EVENTS = 2_000_000
#: a replay with nothing more for this long has caught up
_QUIET_S = 0.5
#: how long a replay waits for its stream to appear before following live only
STREAM_WAIT_S = 5.0
#: heartbeats held for take_heartbeats() (newest kept)
MAX_HEARTBEATS = 1024
#: subjects whose source key is kept (one per source and class; past it, parsed afresh)
MAX_SUBJECTS = 65_536
#: a heartbeat is a tiny map; anything bigger is not one
MAX_HEARTBEAT_BYTES = 256


class NatsFeed:
    """See the module docstring."""

    def __init__(
        self,
        url: str,
        scope: sj.Scope,
        credentials: Credentials | None = None,
        *,
        since_s: float | None = None,
        summary_only: bool = False,
        readonly: bool = False,
        buffer_events: int = DEFAULT_BUFFER_EVENTS,
    ) -> None:
        self.url = url
        self.scope = scope
        self.credentials = credentials or Credentials()
        self.since_s = since_s
        self.summary_only = summary_only
        self.readonly = readonly
        #: the server refused a publish on a ``cmd`` subject (these credentials may not)
        self.commands_denied = False
        self.description = f"{url}/{scope.describe()}"
        self.state = CONNECTING
        self.state_reason = ""
        self.caught_up = threading.Event()
        self.gone: set[SourceKey] = set()
        self.received = 0
        self.messages = 0
        self.lost = 0  # events dropped because poll() fell behind, or by slow-consumer limits
        self._buffer_limit = buffer_events
        self._decoder = MessageDecoder()
        #: messages of this event-loop turn, decoded together at its end
        self._incoming: list[Message] = []
        #: subject -> source key, so that a subject is parsed once
        self._keys: dict[str, SourceKey] = {}
        self._ready: collections.deque[tuple[SourceKey, list[ev.Event]]] = collections.deque()
        self._buffered = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._nc: Any = None
        self._last_message = 0.0
        self._closing = False
        self._heartbeats: collections.deque[tuple[str, float]] = collections.deque(
            maxlen=MAX_HEARTBEATS
        )
        #: class -> (JetStream subscription, creation time of its stream) while replaying
        self._replays: dict[str, tuple[Any, Any]] = {}

    # ------------------------------------------------------------ viewer side
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="aclmon-nats", daemon=True)
        self._thread.start()

    def poll(self, max_events: int = 100_000) -> list[tuple[SourceKey, list[ev.Event]]]:
        out: list[tuple[SourceKey, list[ev.Event]]] = []
        taken = 0
        with self._lock:
            while self._ready and taken < max_events:
                key, events = self._ready.popleft()
                out.append((key, events))
                taken += len(events)
            self._buffered -= taken
        return out

    def take_heartbeats(self) -> list[tuple[str, float]]:
        """``(host, received_monotonic)`` of the relays' heartbeats since the last call."""
        with self._lock:
            beats = list(self._heartbeats)
            self._heartbeats.clear()
        return beats

    def decoder_counts(self, key: SourceKey | None = None) -> tuple[int, int]:
        """(malformed, unknown) input skipped: from every source, or from the one of ``key``."""
        return self._decoder.counts(key)

    def send_command(
        self, key: SourceKey, cls: type, *fields: Any, timeout: float = 5.0
    ) -> ev.Reply:
        """Send one command to the agent ``key`` through its host's relay."""
        if cls not in ev.COMMAND_KINDS:
            raise CommandRefused(f"{cls.__name__} is not a command")
        if self.readonly:
            raise CommandRefused("read-only: these credentials may not send commands")
        loop = self._loop
        if loop is None or self.state != CONNECTED:
            raise CommandRefused(f"not connected to {self.url} ({self.state})")
        command = cls(1, time.time_ns(), secrets.randbits(63), *fields)
        subject = sj.subject(self.scope.job, key[0], key[1], sj.CMD)
        future = asyncio.run_coroutine_threadsafe(
            self._request(subject, encode_frame(ev.encode(command)), timeout), loop
        )
        try:
            data = future.result(timeout + 1.0)
        except asyncio.TimeoutError:
            data = None
        except Exception as exc:
            if self.readonly:
                raise CommandRefused("read-only: these credentials may not send commands") from exc
            raise CommandRefused(f"command to {subject} failed: {exc}") from exc
        if data is None:
            if self.readonly:
                raise CommandRefused("read-only: these credentials may not send commands")
            raise CommandRefused(
                f"no reply on {subject} within {timeout:g} s (is a relay running?)"
            )
        payloads = []
        with contextlib.suppress(FrameError):
            payloads = FrameDecoder(64 * 1024, subject).feed(data)
        reply = ev.EventDecoder().decode_payload(payloads[0]) if len(payloads) == 1 else None
        if not isinstance(reply, ev.Reply):
            raise CommandRefused(f"the reply on {subject} is not one framed Reply")
        return reply

    def request_snapshots(self, keys: list[SourceKey], timeout: float = 5.0) -> set[SourceKey]:
        """Ask each agent in ``keys``, through its host's relay, for its snapshot now (it
        follows on the agent's ``events`` subject, where the feed gets it in order).
        Sent also by a read-only feed: it changes nothing in the job. Returns the
        sources that said it was sent (not: no relay, a relay or agent that takes no
        commands, credentials that may not publish there)."""
        loop = self._loop
        if loop is None or self.state != CONNECTED or self.commands_denied or not keys:
            return set()

        async def ask(key: SourceKey) -> bool:
            command = ev.RequestSnapshot(1, time.time_ns(), secrets.randbits(63))
            subject = sj.subject(self.scope.job, key[0], key[1], sj.CMD)
            try:
                data = await self._request(subject, encode_frame(ev.encode(command)), timeout)
            except Exception:
                return False
            payloads: list[bytes] = []
            with contextlib.suppress(FrameError):
                payloads = FrameDecoder(64 * 1024, subject).feed(data or b"")
            reply = ev.EventDecoder().decode_payload(payloads[0]) if len(payloads) == 1 else None
            return isinstance(reply, ev.Reply) and reply.code == 0

        async def ask_all() -> list[bool]:
            return list(await asyncio.gather(*(ask(key) for key in keys)))

        future = asyncio.run_coroutine_threadsafe(ask_all(), loop)
        try:
            answers = future.result(timeout + 2.0)
        except Exception:
            return set()
        return {key for key, sent in zip(keys, answers, strict=True) if sent}

    def close(self) -> None:
        self._closing = True  # callbacks still queued return at once
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None
        self.state = CLOSED

    # ------------------------------------------------------------ the loop
    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except NatsError as exc:
            reason = str(exc)
            self.state_reason = reason
            self.state = AUTH_FAILED if "authorization" in reason.lower() else DISCONNECTED
        except Exception as exc:  # keep the viewer alive with a reason to show
            self.state_reason = f"{type(exc).__name__}: {exc}"
            self.state = DISCONNECTED
        self.caught_up.set()

    async def _error(self, exc: Exception) -> None:
        text = str(exc)
        if "permissions violation" in text.lower() and sj.CMD in text:
            self.readonly = self.commands_denied = True
        elif "authorization" in text.lower():
            if self.state == CONNECTING:
                # refused before the first connection: connect() gives up on it, so
                # the state says so with the reason (never "connecting: <refusal>")
                self.state = AUTH_FAILED
            self.state_reason = text

    async def _disconnected(self) -> None:
        if self.state == CONNECTED:
            self.state = DISCONNECTED

    async def _reconnected(self) -> None:
        self.state = CONNECTED
        if self._replays:
            asyncio.get_running_loop().create_task(self._check_streams())

    async def _check_streams(self) -> None:
        """After a reconnect: a stream made anew (the server lost its store) is
        replayed from its start, and the viewer is told its history is gone."""
        js = self._nc.jetstream()
        for cls, (sub, created) in list(self._replays.items()):
            deadline = time.monotonic() + STREAM_WAIT_S * 4
            info = None
            while not self._closing and time.monotonic() < deadline:
                try:
                    info = await js.stream_info(sj.STREAMS[cls])
                    break
                except Exception:  # not there (yet): a relay makes it again
                    await asyncio.sleep(0.25)
            if info is None or created is None or info.created == created:
                continue  # the same stream: the ordered consumer carries on by itself
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
            self.state_reason = (
                f"the server lost its stored history (stream {sj.STREAMS[cls]} made anew"
                f" at {datetime.now(timezone.utc):%H:%M:%S} UTC): events before that are gone"
            )
            await self._replay(cls, from_start=True)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        if self._closing:
            return
        self._nc = nc = await connect(
            self.url,
            self.credentials,
            name="aclmon-viewer",
            error_cb=self._error,
            disconnected_cb=self._disconnected,
            reconnected_cb=self._reconnected,
        )
        try:
            await nc.subscribe(
                sj.heartbeat_subject(self.scope.job, self.scope.host), cb=self._on_heartbeat
            )
            await nc.subscribe(self.scope.subject(sj.STATE), cb=self._on_state_live)
            classes = (sj.SUMMARY, sj.ALERTS) if self.summary_only else (sj.EVENTS,)
            # Live or not, each source starts from its latest snapshot (models,
            # devices, streams), which the live subjects only carry when an
            # agent connects to its relay.
            await self._seed_state()
            if self.since_s is None:
                for cls in classes:
                    await nc.subscribe(
                        self.scope.subject(cls),
                        cb=self._on_events,
                        pending_msgs_limit=1_000_000,
                        pending_bytes_limit=256 << 20,
                    )
                self.caught_up.set()
            else:
                for cls in classes:
                    await self._replay(cls)
                asyncio.get_running_loop().create_task(self._watch_caught_up())
            # Connected once every subscription is in place: nothing published
            # after this is missed.
            self.state = CONNECTED
            await self._stop.wait()
        finally:
            # No drain: what is still pending (a long catch-up) is dropped, so
            # quitting takes a moment whatever the backlog.
            with contextlib.suppress(Exception):
                await nc.close()

    async def _seed_state(self) -> None:
        """The latest snapshot of every source in scope (``ACLMON_STATE``)."""
        from nats.js.api import DeliverPolicy

        js = self._nc.jetstream()
        try:
            sub = await js.subscribe(
                self.scope.subject(sj.STATE),
                ordered_consumer=True,
                deliver_policy=DeliverPolicy.LAST_PER_SUBJECT,
            )
        except Exception:  # no stream (or no JetStream): sources appear with their events
            return
        try:
            while True:
                try:
                    msg = await sub.next_msg(timeout=_QUIET_S)
                except Exception:  # nothing (more) to seed
                    break
                self._on_state(msg)
                if msg.metadata.num_pending == 0:
                    break
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _replay(self, cls: str, from_start: bool = False) -> None:
        from nats.js.api import ConsumerConfig, DeliverPolicy

        js = self._nc.jetstream()
        since = 0.0 if from_start else self.since_s or 0.0
        if since > 0:
            start = datetime.now(timezone.utc) - timedelta(seconds=since)
            config = ConsumerConfig(
                deliver_policy=DeliverPolicy.BY_START_TIME,
                opt_start_time=start,
            )
        else:
            config = ConsumerConfig(deliver_policy=DeliverPolicy.ALL)
        self._last_message = time.monotonic()
        from nats.js.errors import NotFoundError

        deadline = time.monotonic() + STREAM_WAIT_S
        while True:
            try:
                sub = await js.subscribe(
                    self.scope.subject(cls),
                    cb=self._on_replayed,
                    ordered_consumer=True,
                    config=config,
                    pending_msgs_limit=1_000_000,
                    pending_bytes_limit=512 << 20,
                )
                created = None
                with contextlib.suppress(Exception):
                    created = (await js.stream_info(sj.STREAMS[cls])).created
                self._replays[cls] = (sub, created)
                return
            except NotFoundError:
                # No stream yet (a relay creates it when it starts): wait a
                # little, then follow live without history.
                if time.monotonic() < deadline:
                    await asyncio.sleep(0.25)
                    continue
                self.state_reason = f"no stream {sj.STREAMS[cls]}: live only, no history"
                await self._nc.subscribe(self.scope.subject(cls), cb=self._on_events,
                                         pending_msgs_limit=1_000_000,
                                         pending_bytes_limit=256 << 20)  # fmt: skip
                return
            except Exception as exc:
                raise NatsError(f"cannot replay {sj.STREAMS[cls]}: {exc}") from exc

    async def _watch_caught_up(self) -> None:
        while not self.caught_up.is_set():
            await asyncio.sleep(0.05)
            if time.monotonic() - self._last_message > _QUIET_S:
                self.caught_up.set()

    # ------------------------------------------------------------ messages
    async def _on_heartbeat(self, msg: Any) -> None:
        host = sj.parse_heartbeat_subject(msg.subject)
        data = msg.data
        if host is None or self._closing or len(data) > MAX_HEARTBEAT_BYTES:
            return
        try:
            beat = msgpack.unpackb(data, raw=False, strict_map_key=True)
        except Exception:  # not a heartbeat: ignored
            return
        sent_ns = beat.get("sent_ns") if isinstance(beat, dict) else None
        if type(sent_ns) is not int or not 0 < sent_ns < 1 << 63:
            return
        with self._lock:
            self._heartbeats.append((host, time.monotonic()))

    async def _on_replayed(self, msg: Any) -> None:
        if self._closing:
            return
        self._last_message = time.monotonic()
        self._deliver(msg.subject, msg.data)
        with contextlib.suppress(Exception):
            if msg.metadata.num_pending == 0:
                self.caught_up.set()

    async def _on_events(self, msg: Any) -> None:
        if not self._closing:
            self._deliver(msg.subject, msg.data)

    async def _on_state_live(self, msg: Any) -> None:
        # The events subject carries every snapshot in order; without it (summary
        # only) the state subject is where a fresh one (asked for, or the relay's
        # periodic one) comes.
        if self.summary_only or (msg.headers and sj.GONE_HEADER in msg.headers):
            self._on_state(msg)

    def _on_state(self, msg: Any) -> None:
        self._decode_incoming()  # events that came before this snapshot go before it
        parsed = sj.parse_subject(msg.subject)
        if parsed is None:
            return
        key = (parsed.host, parsed.pid)
        if msg.headers and sj.GONE_HEADER in msg.headers:
            self.gone.add(key)
            with self._lock:
                self._ready.append((key, []))  # the viewer learns of the source even so
            if not msg.data:  # a relay that kept no snapshot (or an older relay)
                return
        # A snapshot on its own decoder: the source's event decoder keeps its counts.
        decoder = StreamDecoder(source=msg.subject)
        try:
            events = decoder.feed(msg.data)
        except FrameError:
            return
        if events:
            self._push(key, events)

    def _deliver(self, subject: str, data: bytes) -> None:
        key = self._keys.get(subject)
        if key is None:
            parsed = sj.parse_subject(subject)
            if parsed is None:
                return
            if len(self._keys) >= MAX_SUBJECTS:
                self._keys.clear()
            key = self._keys[subject] = (parsed.host, parsed.pid)
        self.messages += 1
        if not self._incoming:
            asyncio.get_running_loop().call_soon(self._decode_incoming)
        self._incoming.append((key, subject, data))

    def _decode_incoming(self) -> None:
        """What came in this turn of the event loop, every source at once."""
        messages, self._incoming = self._incoming, []
        if self._closing:
            return
        for key, events in self._decoder.decode(messages):
            self._push(key, events)

    def _push(self, key: SourceKey, events: list[ev.Event]) -> None:
        self.received += len(events)
        with self._lock:
            if self._buffered + len(events) > self._buffer_limit:
                self.lost += len(events)
                return
            self._ready.append((key, events))
            self._buffered += len(events)

    async def _request(self, subject: str, data: bytes, timeout: float) -> bytes | None:
        try:
            msg = await self._nc.request(subject, data, timeout=timeout)
        except Exception as exc:
            if type(exc).__name__ in ("TimeoutError", "NoRespondersError"):
                return None
            raise
        return bytes(msg.data)
