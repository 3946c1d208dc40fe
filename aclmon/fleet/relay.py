"""``aclmon relay``: one per host, every local agent's frames to NATS, unchanged.

For each agent in the registry (whose directory is watched, so a new agent is
followed within a few milliseconds and its first events are not lost, and
rescanned every second, so exited ones are let go) the relay is an ordinary bus client over the agent's
Unix socket, allowed commands. What each agent sends is kept as it is read (an
asyncio protocol per connection, :class:`~aclmon.fleet.agent_link.AgentProtocol`),
and one router task takes what every agent sent in a turn of the event loop: it
splits it into frames (:func:`~aclmon.events.wire.split_frames`) and routes each by its kind byte
(:mod:`aclmon.fleet.subjects`) without decoding it: every frame to
``events``, copies to ``summary`` / ``alerts``, and the snapshot frames
(``seq = 0``) to ``state``. Frames are batched per (agent, class) and
published when a batch reaches ``max_bytes`` (never above the server's
``max_payload``) or ``max_frames``, or ``flush_ms`` after it started.

Losses between the relay and NATS (a publish that fails, a frame larger than
the server takes, a frame larger than the bus allows, which is skipped while
the connection is kept) are counted per agent and published on its subjects as
a ``Drops`` event with ``where = "relay -> nats"`` and ``seq = 0`` (outside
the agent's sequence), so every viewer shows them like any other drop; the
events themselves are also missing from the sequence, which viewers count as
gaps. Lost copies (``summary``, ``alerts``, ``state``) are counted apart
(``where = "relay -> nats (copies)"``). The snapshot kept for ``state`` is
bounded by the server's ``max_payload``; snapshot frames beyond it are counted
as lost copies. The relay never slows an agent: when it falls behind, the
agent's publisher drops for it, as for any slow viewer.

Every second the relay publishes a heartbeat for each job it serves
(``aclmon.<job>.<host>.relay.heartbeat``): viewers see its sources go stale
when it stops.
All subjects carry the relay's host name (``--host``, default this host's):
a relay's credentials allow exactly its host's subjects.

Commands arrive as NATS requests on ``aclmon.<job>.<host>.<pid>.cmd``
(:mod:`aclmon.fleet.relay_commands`).

Only the Hello of each agent is decoded (its job name picks the subjects);
Replies are decoded to match requests.

The relay also measures its host's clock against the NATS server's (at start,
then every ``clock_every_s``; :mod:`aclmon.fleet.relay_clock`) and sends the
result to every agent's subjects as a :class:`~aclmon.events.ClockOffset`
(``seq = 0``; ``events`` and ``alerts``, and after the frames of each
``state`` snapshot sent from then on), so that a fleet viewer, even one that
joins after the jobs exited, can order the ranks' events by one clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Callable
from typing import Any

import msgpack

from aclmon import events as ev
from aclmon.bus import registry
from aclmon.bus.transport import parse_address
from aclmon.events.wire import (
    DEFAULT_MAX_FRAME,
    HEADER,
    HEADER_SIZE,
    FrameError,
    encode_frame,
    peek,
    split_frames,
)
from aclmon.fleet import subjects as sj
from aclmon.fleet.agent_link import MAX_INBOX, AgentLink, job_of, open_link
from aclmon.fleet.connect import Credentials, NatsError, close_flushed, connect
from aclmon.fleet.relay_clock import DEFAULT_CLOCK_EVERY_S, keep_clock, measure_clock
from aclmon.fleet.relay_commands import (
    ask_for_snapshots,
    on_command,
    requires_authentication,
)
from aclmon.fleet.streams import DEFAULT_STREAM_LIMITS, StreamLimits, ensure_streams

log = logging.getLogger("aclmon.relay")

DEFAULT_FLUSH_MS = 20.0
DEFAULT_MAX_BYTES = 64 * 1024
DEFAULT_MAX_FRAMES = 1024
DEFAULT_STATE_EVERY_S = 30.0
REGISTRY_POLL_S = 1.0
#: how often the registry directory's modification time is looked at
REGISTRY_WATCH_S = 0.02
#: the latest snapshot of an agent is published at most this often
STATE_MIN_INTERVAL_S = 1.0
#: kind byte -> extra classes of the frame (besides events)
_ROUTES: dict[int, str] = {
    **dict.fromkeys(sj.SUMMARY_KINDS, sj.SUMMARY),
    **dict.fromkeys(sj.ALERT_KINDS, sj.ALERTS),
}
#: ``Drops.where`` of what the relay lost: events frames, and copies of them
RELAY_DROPS = "relay -> nats"
RELAY_COPY_DROPS = "relay -> nats (copies)"


class Relay:
    """See the module docstring. ``run(stop)`` until ``stop`` is set."""

    def __init__(
        self,
        url: str,
        credentials: Credentials | None = None,
        *,
        job: str | None = None,
        host: str | None = None,
        agent_token: str | None = None,
        flush_ms: float = DEFAULT_FLUSH_MS,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_frames: int = DEFAULT_MAX_FRAMES,
        setup_streams: bool = True,
        stream_limits: dict[str, StreamLimits] | None = None,
        state_every_s: float = DEFAULT_STATE_EVERY_S,
        clock_every_s: float = DEFAULT_CLOCK_EVERY_S,
        registry_dir: Any = None,
        agents: Callable[[], list[registry.AgentInfo]] | None = None,
        on_note: Callable[[str], None] | None = None,
        allow_anonymous_commands: bool = False,
        on_connected: Callable[[], None] | None = None,
    ) -> None:
        if max_bytes < 1024:
            raise NatsError(f"--max-msg must be at least 1 KiB, not {max_bytes}")
        self.url = url
        self.credentials = credentials or Credentials()
        self.job = sj.token(job) if job else None
        self.host = sj.short_host(host or socket.gethostname())
        self.agent_token = agent_token
        self.flush_s = flush_ms / 1000.0
        self.max_bytes = max_bytes
        self.max_frames = max_frames
        self.setup_streams = setup_streams
        self.stream_limits = stream_limits or DEFAULT_STREAM_LIMITS
        self.state_every_s = state_every_s
        self.clock_every_s = clock_every_s
        #: the newest ClockOffset frame of this host (None until measured)
        self.clock_frame: bytes | None = None
        #: the live agents, less those of the given pids (followed already: their
        #: entries are not read again at each rescan)
        self._list_agents: Callable[[frozenset[int]], list[registry.AgentInfo]] = (
            (lambda _followed: agents())
            if agents is not None
            else (lambda followed: registry.list_agents(registry_dir, skip=followed))
        )
        #: the registry's directory is watched for new agents (not a custom list)
        self._registry_dir = registry_dir
        self._watch_registry = agents is None
        self._on_connected = on_connected
        self.note = on_note or (lambda text: log.info("%s", text))
        self.links: dict[int, AgentLink] = {}
        #: the links that may have something to send (a batch, a snapshot, a drop
        #: count, the clock offset), by pid: the flusher visits these alone, not
        #: every rank of the host every tick
        self.waiting: dict[int, AgentLink] = {}
        #: the links that read something the router has not taken yet, by pid
        self._ready: dict[int, AgentLink] = {}
        self._ready_event = asyncio.Event()
        self._refused: set[int] = set()
        self.allow_anonymous_commands = allow_anonymous_commands
        #: the server lets anyone connect (known once connected)
        self.anonymous_server = False
        self.nc: Any = None
        self.publish_errors = 0
        self.max_payload = 1 << 20  # the server's, once connected
        #: frames read, published and dropped by agents that have gone
        self._ended = {
            "frames_in": 0, "published": 0, "dropped": 0, "copies_dropped": 0, "oversized": 0,
            "agents": 0,
        }  # fmt: skip

    # ------------------------------------------------------------ running
    async def run(self, stop: asyncio.Event) -> None:
        self.nc = await connect(
            self.url,
            self.credentials,
            name=f"aclmon-relay@{self.host}",
            reconnected_cb=self._reconnected,
            inbox_prefix=sj.relay_inbox(self.host),
        )
        self.max_payload = int(self.nc.max_payload)
        self.max_bytes = min(self.max_bytes, self.max_payload)
        if self._on_connected is not None:
            self._on_connected()  # e.g. `aclmon relay` takes the host's relay lock now
        self.anonymous_server = not requires_authentication(self.nc)
        if self.anonymous_server:
            self.note(
                f"{self.url} lets anyone connect: "
                + (
                    "forwarding commands anyway (--allow-anonymous-commands)"
                    if self.allow_anonymous_commands
                    else "commands from it are refused (give the server authentication,"
                    " or pass --allow-anonymous-commands)"
                )
            )
        try:
            if self.setup_streams:
                await self.ensure_streams()
            await self.nc.subscribe(sj.subject("*", self.host, "*", sj.CMD), cb=self._on_command)
            tasks = [
                asyncio.create_task(self._discover(stop)),
                asyncio.create_task(self._router(stop)),
                asyncio.create_task(self._flusher(stop)),
                asyncio.create_task(ask_for_snapshots(self, stop)),
                asyncio.create_task(self._heartbeats(stop)),
                asyncio.create_task(keep_clock(self, stop)),
            ]
            await stop.wait()
            for task in tasks:
                task.cancel()
            for link in list(self.links.values()):
                if link.task is not None:
                    link.task.cancel()
            await asyncio.gather(
                *tasks, *(lk.task for lk in self.links.values() if lk.task), return_exceptions=True
            )
            for link in list(self.links.values()):
                await self._flush_link(link, force=True)
        finally:
            await close_flushed(self.nc)

    async def ensure_streams(self) -> None:
        """Create the class streams that do not exist yet (file storage, limits)."""
        await ensure_streams(self.nc, self.stream_limits, self.note)

    async def _reconnected(self) -> None:
        """Back on the server: one restarted without its store has lost the
        streams, which are made again (said by ensure_streams); every agent's
        snapshot, drop totals and clock offset are sent again, so the (new) streams
        hold them."""
        if self.setup_streams:
            try:
                await self.ensure_streams()
            except Exception as exc:  # keep relaying live traffic
                self.note(f"after reconnecting: {exc}")
        for link in self.links.values():
            link.state_dirty = bool(link.state_frames)
            link.state_published = 0.0
            link.drops_reported = -1 if link.dropped else 0
            link.copies_reported = -1 if link.copies_dropped else 0
            link.clock_pending = True
            self.wait_for(link)

    # ------------------------------------------------------------ agents
    def _registry_changed(self, seen: list[int]) -> bool:
        """Whether the registry directory changed since ``seen`` (updated)."""
        if not self._watch_registry or self._registry_dir is None:
            return False
        try:
            info = os.stat(self._registry_dir)
        except OSError:
            return False
        mark = [info.st_ino, info.st_mtime_ns]
        if mark == seen:
            return False
        seen[:] = mark
        return True

    async def _discover(self, stop: asyncio.Event) -> None:
        if self._watch_registry and self._registry_dir is None:
            with contextlib.suppress(Exception):
                from aclmon.locations import runtime_dir

                self._registry_dir = runtime_dir()
        seen: list[int] = []
        self._registry_changed(seen)
        while not stop.is_set():
            try:
                agents = await asyncio.to_thread(self._list_agents, frozenset(self.links))
            except Exception as exc:  # a registry problem must not end the relay
                log.warning("cannot list agents: %s", exc)
                agents = []
            alive = {a.pid for a in agents}
            self._refused &= alive
            for info in agents:
                if info.pid in self.links or info.pid in self._refused:
                    continue
                try:
                    address = parse_address(info.address)
                except Exception:
                    continue
                # The relay's host name, the one its credentials allow: the
                # subjects and the command subscription always agree.
                link = AgentLink(pid=info.pid, host=self.host, address=address, job=self.job)
                self.links[info.pid] = link
                link.task = asyncio.create_task(self._follow(link))
            # Watch the directory (a stat every few ms) so that a new agent is
            # followed before its first events; rescan every second regardless.
            rescan = time.monotonic() + REGISTRY_POLL_S
            while not stop.is_set() and time.monotonic() < rescan:
                if self._registry_changed(seen):
                    break
                # a sleep, not wait_for(stop.wait()): that made a task and a timer
                # fifty times a second; the stop is seen within one watch
                await asyncio.sleep(REGISTRY_WATCH_S)

    async def _follow(self, link: AgentLink) -> None:
        """Connect to the agent, then wait for the connection's end: what it sends
        meanwhile is routed by :meth:`_router`, not by this task."""
        try:
            protocol = await asyncio.wait_for(open_link(link, self.agent_token), 5.0)
        except PermissionError as exc:
            self.note(f"agent pid {link.pid} refused the relay: {exc}")
            self._refused.add(link.pid)
            self.links.pop(link.pid, None)
            return
        except (OSError, ValueError, asyncio.TimeoutError, asyncio.IncompleteReadError) as exc:
            log.info("cannot connect to agent pid %s yet: %s", link.pid, exc)
            self.links.pop(link.pid, None)
            return
        self.note(
            f"following pid {link.pid} at {link.address}"
            + ("" if link.commands else " (the agent allows no commands)")
        )
        try:
            protocol.follow(lambda data: self._received(link, data))
            await protocol.closed
            # What the router has not taken yet is routed here, before the last flush.
            link.ended = True
            self._ready.pop(link.pid, None)
            try:
                await self._take(link)
            except Exception:  # as in the router: said, and the link still ends
                log.exception("agent pid %s: cannot route the last of what it sent", link.pid)
                link.inbox.clear()
        finally:
            if link.writer is not None:
                link.writer.close()
            for future in link.replies.values():
                if not future.done():
                    future.cancel()
        await self._flush_link(link, force=True)
        await self._gone(link)
        self.links.pop(link.pid, None)
        if self.waiting.get(link.pid) is link:
            del self.waiting[link.pid]
        self._ended["agents"] += 1
        self._ended["frames_in"] += link.frames_in
        self._ended["published"] += link.published
        self._ended["dropped"] += link.dropped
        self._ended["copies_dropped"] += link.copies_dropped
        self._ended["oversized"] += link.oversized
        self.note(f"pid {link.pid} ended ({link.frames_in} frames, {link.dropped} dropped)")

    def _received(self, link: AgentLink, data: bytes) -> None:
        """A chunk read from an agent (on the event loop, from its protocol): kept in
        its inbox, the link marked ready, the router woken once for all of them."""
        link.inbox += data
        self._ready[link.pid] = link
        if not self._ready_event.is_set():
            self._ready_event.set()
        if len(link.inbox) > MAX_INBOX and not link.paused and link.writer is not None:
            # The router is behind: the agent's publisher holds the rest (and drops
            # for us, as for any slow viewer, if we stay behind).
            link.paused = True
            with contextlib.suppress(Exception):
                link.writer.pause_reading()

    async def _router(self, stop: asyncio.Event) -> None:
        """Route what every ready link has read since the last turn: one task wakes
        for all the reads of a turn of the event loop."""
        while not stop.is_set():
            await self._ready_event.wait()
            self._ready_event.clear()
            ready, self._ready = self._ready, {}
            for link in ready.values():
                if link.ended:
                    continue
                try:
                    await self._take(link)
                except Exception:  # one agent's bytes must not stop the others'
                    log.exception("agent pid %s: cannot route what it sent", link.pid)
                    self.note(f"agent pid {link.pid}: internal error routing its frames;"
                              " its connection is closed (see the log)")  # fmt: skip
                    if link.writer is not None:
                        link.writer.close()

    async def _take(self, link: AgentLink) -> None:
        """Route the complete frames of the link's inbox; send the batches due."""
        async with link.lock:
            buffer = link.inbox
            while buffer:
                if link.skip:
                    # The rest of an oversized frame: read and thrown away.
                    skipped = min(link.skip, len(buffer))
                    del buffer[:skipped]
                    link.skip -= skipped
                    continue
                too_big = None
                try:
                    offsets, stop = split_frames(
                        buffer, 0, len(buffer), DEFAULT_MAX_FRAME, f"agent pid {link.pid}"
                    )
                except FrameError as exc:
                    # The frames before it are whole; the length says how much to skip.
                    too_big = exc.offset
                    offsets, stop = split_frames(buffer, 0, too_big, DEFAULT_MAX_FRAME, "")
                if offsets:
                    await self._route(link, buffer, offsets, stop)
                del buffer[:stop]
                if too_big is None:
                    break
                (length,) = HEADER.unpack_from(buffer, 0)
                link.skip = HEADER_SIZE + length
                link.oversized += 1
                link.dropped += 1
                if link.oversized == 1 or link.oversized % 1000 == 0:
                    self.note(
                        f"agent pid {link.pid}: a frame of {length} bytes is over the"
                        f" {DEFAULT_MAX_FRAME} limit: skipped ({link.oversized} so far),"
                        " the connection kept"
                    )
            if link.paused and link.writer is not None and not link.ended:
                link.paused = False
                with contextlib.suppress(Exception):
                    link.writer.resume_reading()
            # Batches due go out now, not at the flusher's next tick:
            # on a busy machine a timer fires late, a read does not wait.
            if link.due(time.monotonic(), self.flush_s, self.clock_frame is not None):
                await self._flush_link(link)
            if link.pending(self.clock_frame is not None):
                self.wait_for(link)  # the rest goes when due, by the flusher
            elif self.waiting.get(link.pid) is link:
                del self.waiting[link.pid]  # all sent here: the flusher has nothing to do

    async def _route(
        self, link: AgentLink, buffer: bytearray, offsets: list[int], stop: int
    ) -> None:
        """Route the complete frames of one read. The ``events`` batch takes
        runs of consecutive frames as single pieces (no copy per frame); each
        frame is only looked at for its kind and whether ``seq`` is 0."""
        now = time.monotonic()
        data = bytes(buffer[:stop])
        batches = link.batches
        events = batches[sj.EVENTS]
        routes = _ROUTES
        max_bytes, max_frames = self.max_bytes, self.max_frames
        count = len(offsets)
        piece = offsets[0] if offsets else 0  # start of the run not yet in the batch
        piece_frames = 0
        link.frames_in += count
        for index in range(count):
            start = offsets[index]
            end = offsets[index + 1] if index + 1 < count else stop
            kind, snapshot = peek(data, start + HEADER_SIZE, end)
            if kind in routes or kind == sj.HELLO_KIND or kind == sj.REPLY_KIND or snapshot:
                self._special(link, data[start:end], kind, snapshot, now)
            size = end - start
            if size > self.max_payload:  # larger than any message the server takes
                if piece_frames:
                    events.add(data[piece:start], now, piece_frames)
                link.dropped += 1
                piece, piece_frames = end, 0
                continue
            # A message never passes max_bytes (a single larger frame goes alone)
            # nor max_frames.
            if (events.frames or piece_frames) and (
                events.size + (end - piece) > max_bytes
                or events.frames + piece_frames >= max_frames
            ):
                if piece_frames:
                    events.add(data[piece:start], now, piece_frames)
                await self._publish(link, sj.EVENTS)
                for extra in (sj.SUMMARY, sj.ALERTS):
                    if batches[extra].size > max_bytes:
                        await self._publish(link, extra)
                piece, piece_frames = start, 0
            piece_frames += 1
        if piece_frames:
            events.add(data[piece:stop], now, piece_frames)
        for extra in (sj.SUMMARY, sj.ALERTS):
            if batches[extra].size > max_bytes or batches[extra].frames >= max_frames:
                await self._publish(link, extra)

    def _special(
        self, link: AgentLink, frame: bytes, kind: int, snapshot: bool, now: float
    ) -> None:
        """A frame that goes beyond ``events``: summary/alerts copies, the
        snapshot (``state``), the Hello that names the job, a Reply awaited."""
        if kind == sj.HELLO_KIND and (link.job is None or not link.host_checked):
            hello = ev.EventDecoder().decode_payload(frame[HEADER_SIZE:])
            if isinstance(hello, ev.Hello) and link.job is None:
                link.job = job_of(hello)
            if isinstance(hello, ev.Hello) and not link.host_checked:
                link.host_checked = True
                if sj.short_host(hello.host) != self.host:
                    self.note(
                        f"agent pid {link.pid} says its host is {hello.host!r}, published as"
                        f" {self.host}: viewers refuse a source whose Hello and subject"
                        f" disagree (start the relay with --host {sj.short_host(hello.host)})"
                    )
        elif kind == sj.REPLY_KIND and link.replies:
            self._match_reply(link, frame)
        extra = _ROUTES.get(kind)
        if extra is not None:
            if len(frame) <= self.max_payload:
                link.batches[extra].add(frame, now)
            else:
                link.copies_dropped += 1
        if snapshot:  # seq 0: the agent's snapshot
            if kind == sj.HELLO_KIND:
                link.state_frames = []
                link.state_size = 0
            # One state message holds the snapshot: never more than the server takes
            # (an agent that sends seq-0 frames forever cannot grow it).
            if link.state_size + len(frame) > self.max_payload:
                link.copies_dropped += 1
                return
            link.state_frames.append(frame)
            link.state_size += len(frame)
            link.state_dirty = True

    def _match_reply(self, link: AgentLink, frame: bytes) -> None:
        reply = ev.EventDecoder().decode_payload(frame[HEADER_SIZE:])
        if isinstance(reply, ev.Reply):
            future = link.replies.pop(reply.request_id, None)
            if future is not None and not future.done():
                future.set_result(frame)

    async def _gone(self, link: AgentLink) -> None:
        """Tell viewers the agent exited: a ``state`` message with a header, holding the
        agent's last snapshot (its final one: the stream keeps one message a subject,
        and a viewer that comes later must still find what the job did)."""
        if link.job is None:
            return
        try:
            await self.nc.publish(
                link.subject(sj.STATE), b"".join(link.state_frames), headers={sj.GONE_HEADER: "1"}
            )
        except Exception:
            self.publish_errors += 1

    # ------------------------------------------------------------ publishing
    async def _publish(self, link: AgentLink, cls: str) -> None:
        batch = link.batches[cls]
        if not batch.frames:
            return
        if link.job is None:
            return  # held until the agent's Hello names the job (the first frame)
        data, frames = batch.take()
        try:
            await self.nc.publish(link.subject(cls), data)
        except Exception as exc:  # disconnected, buffer full: count, never stall the agent
            self.publish_errors += 1
            if cls == sj.EVENTS:
                link.dropped += frames
            else:
                link.copies_dropped += frames
            log.debug("publish to %s failed: %s", link.subject(cls), exc)
            return
        if cls == sj.EVENTS:
            link.published += frames

    async def _flush_link(self, link: AgentLink, *, force: bool = False) -> None:
        now = time.monotonic()
        for cls, batch in link.batches.items():
            if batch.frames and (force or now - batch.started >= self.flush_s):
                await self._publish(link, cls)
        # After the agent's first events (its Hello leads every source's stream).
        if link.clock_pending and link.published and self.clock_frame is not None:
            link.clock_pending = False
            try:
                await self.nc.publish(link.subject(sj.EVENTS), self.clock_frame)
                await self.nc.publish(link.subject(sj.ALERTS), self.clock_frame)
            except Exception:
                self.publish_errors += 1
        if (
            link.state_dirty
            and link.job is not None
            and (force or now - link.state_published >= STATE_MIN_INTERVAL_S)
        ):
            # At most once a second: an agent that sends snapshot frames all the
            # time costs one bounded message a second, not one per flush.
            link.state_dirty = False
            link.state_published = now
            state = b"".join(link.state_frames)
            if self.clock_frame and link.state_size + len(self.clock_frame) <= self.max_payload:
                state += self.clock_frame  # a viewer starting from the snapshot gets it too
            try:
                await self.nc.publish(link.subject(sj.STATE), state)
            except Exception:
                self.publish_errors += 1
                link.copies_dropped += 1
        if link.job is None:
            return
        if link.dropped != link.drops_reported:
            why = "publish to NATS failed, or a frame over max_payload or the bus limit"
            if await self._report_drops(link, link.dropped, RELAY_DROPS, why):
                link.drops_reported = link.dropped
        if link.copies_dropped != link.copies_reported:
            why = "summary, alert or state copy not published (failed or over max_payload)"
            if await self._report_drops(link, link.copies_dropped, RELAY_COPY_DROPS, why):
                link.copies_reported = link.copies_dropped

    async def _report_drops(self, link: AgentLink, count: int, where: str, why: str) -> bool:
        frame = encode_frame(ev.encode(ev.Drops(0, time.time_ns(), count, where, why)))
        try:
            await self.nc.publish(link.subject(sj.EVENTS), frame)
            await self.nc.publish(link.subject(sj.SUMMARY), frame)
        except Exception:
            self.publish_errors += 1
            return False
        return True

    async def _flusher(self, stop: asyncio.Event) -> None:
        tick = max(self.flush_s / 2, 0.002)
        while not stop.is_set():
            await asyncio.sleep(tick)
            now = time.monotonic()
            clock_known = self.clock_frame is not None
            # Only the links with something waiting, and of those the ones due: a
            # host of many ranks would otherwise cost a look at each rank every tick.
            for pid, link in list(self.waiting.items()):
                if self.links.get(pid) is not link:  # gone
                    self.waiting.pop(pid, None)
                    continue
                # A link waits while it has something to send: one not due yet keeps
                # waiting (its reads flush it, and take it out, when it empties there).
                if not link.due(now, self.flush_s, clock_known):
                    continue
                await self._flush_link(link)
                if not link.pending(clock_known) and self.waiting.get(pid) is link:
                    del self.waiting[pid]

    def wait_for(self, link: AgentLink) -> None:
        """``link`` has something to send later: the flusher looks at it until it
        has sent all."""
        self.waiting[link.pid] = link

    async def _heartbeats(self, stop: asyncio.Event) -> None:
        """Every second, for each job served: this relay is alive (its send time is
        in it; viewers compare clocks by the ClockOffset, which JetStream keeps)."""
        while not stop.is_set():
            jobs = {link.job for link in self.links.values() if link.job is not None}
            payload = msgpack.packb({"sent_ns": time.time_ns()})
            for job in jobs:
                try:
                    await self.nc.publish(sj.heartbeat_subject(job, self.host), payload)
                except Exception:
                    self.publish_errors += 1
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), sj.HEARTBEAT_EVERY_S)

    # ------------------------------------------------------------ the clock
    async def measure_clock(self) -> tuple[int, int]:
        """(offset_ns, uncertainty_ns) of this host's clock against the server's."""
        return await measure_clock(self.nc, self.host)

    async def _on_command(self, msg: Any) -> None:
        await on_command(self, msg)

    def totals(self) -> dict[str, int]:
        """Agents followed and their frames, over the relay's whole run."""
        links = list(self.links.values())
        ended = self._ended
        return {
            "agents": len(links) + ended["agents"],
            "frames_in": sum(lk.frames_in for lk in links) + ended["frames_in"],
            "published": sum(lk.published for lk in links) + ended["published"],
            "dropped": sum(lk.dropped for lk in links) + ended["dropped"],
            "copies_dropped": sum(lk.copies_dropped for lk in links) + ended["copies_dropped"],
            "oversized": sum(lk.oversized for lk in links) + ended["oversized"],
        }
