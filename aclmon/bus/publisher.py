"""The agent's side of the bus: publish events without ever blocking the job.

``publish(event)``, ``emit(cls, *fields)`` and the records any thread appends
to :attr:`Publisher.ring` go through that one bounded ring and return at once
(when it is full the event is dropped and counted, ``False``); events are
numbered later, on the publisher's thread (see :data:`aclmon.bus.records.Record`),
so the thread that emits pays for one tuple and one deque append. One daemon
thread owns all I/O (``selectors``): it accepts viewers, runs the handshake, and
each turn pumps the ring (:mod:`aclmon.bus.fanout`): every queued event packed
into one buffer of frames, fanned out to each subscriber's own bounded output
buffer. A subscriber that cannot keep up loses whole batches (counted per
subscriber) instead of slowing the job or growing memory; each loss is reported
as a :class:`~aclmon.events.Drops` event to everyone still listening.

Commands from authorised, non-readonly connections reach ``on_command`` on
the publisher thread. ``Ping`` and ``RequestSnapshot`` are answered here,
since they concern the connection rather than the runtime.

Peers are not trusted before they prove who they are: the caps on handshakes
and viewers are in :mod:`aclmon.bus.viewers`. Warnings a peer can trigger are
aggregated (:mod:`aclmon.bus.lograte`). The ring's records and how they become
events are in :mod:`aclmon.bus.records`.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import msgpack

from aclmon.acl_constants import ACL_ERROR_API_NOT_SUPPORT, ACL_ERROR_INTERNAL_ERROR
from aclmon.bus import handshake
from aclmon.bus.fanout import Fanout
from aclmon.bus.lograte import RateLimitedLog
from aclmon.bus.records import PLAIN, Observer, Record
from aclmon.bus.transport import Address, Listener, as_address, default_address, listen
from aclmon.bus.viewers import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_SUBSCRIBER_BUFFER,
    HANDSHAKE_TIMEOUT_S,
    MAX_IGNORED_COMMANDS,
    Admission,
    Connection,
    flush_until,
    peer_of,
)
from aclmon.errors import AclmonError
from aclmon.events import (
    Clock,
    Drops,
    Event,
    EventDecoder,
    Ping,
    Reply,
    RequestSnapshot,
    is_command,
)
from aclmon.events.wire import (
    DEFAULT_MAX_FRAME,
    HEADER,
    FrameError,
    encode_frame,
    encode_frames,
)

log = logging.getLogger("aclmon.bus")

#: events the queue holds before ``publish`` starts dropping
DEFAULT_QUEUE_SIZE = 65536
#: connections accepted per turn of the I/O loop, so that the handshakes already
#: under way are served between bursts of new ones
_ACCEPTS_PER_TURN = 8
#: at most one Drops event per place per interval, carrying the running total
DROPS_REPORT_INTERVAL_S = 0.5
#: how often the ring is looked at while records arrive (its hot writers never wake the
#: thread: that would cost them a test per event). Often, because records taken soon are
#: cheaper for the writer too (measured: a 5 ms ring costs the job about half what a
#: 50 ms one does, its memory staying in cache); seldom once it has been quiet.
RING_POLL_S = 0.005
IDLE_POLL_S = 0.05
#: how often a publisher without ring writers (every record came through
#: :meth:`Publisher.submit` or :meth:`Publisher.publish`, which wake the thread)
#: looks at its connections for timeouts and drop reports
HOUSEKEEPING_S = 0.25

_READ_SIZE = 256 * 1024
_RECEIVE_ONLY_READ_SIZE = 4096

_pack = msgpack.Packer(use_bin_type=True, autoreset=True).pack


class Publisher:
    """Fan events out to every connected viewer; see the module docstring.

    ``address``: ``None`` (the default Unix socket for this PID), an
    :class:`Address` or its text. ``token`` enables command authentication
    (and is required to listen on a non-loopback TCP address).

    ``observer`` (an :class:`~aclmon.bus.records.Observer`) sees every batch of
    events on the publisher's thread, in order, before anyone gets it, also while
    nobody listens; then it takes the ring's records instead (``fold``).

    ``ring_writers``: someone appends to :attr:`ring` directly, without waking the
    thread (the agent's hooks do: a wake per event would cost the job), so the
    thread looks at the ring every few ms while records arrive. ``False`` when
    every record comes through :meth:`submit`, :meth:`emit` or :meth:`publish`:
    the thread then sleeps until woken.

    ``start(thread=False)`` gives it no thread: the caller's :meth:`turn` does what
    one turn of the thread's loop does, without waiting (a process serving many
    publishers, as ``bench/fleet_load.py``'s 128 synthetic ranks, drives them all
    from one loop).
    """

    def __init__(
        self,
        address: str | os.PathLike[str] | Address | None = None,
        *,
        token: str | None = None,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        snapshot: Callable[[], Iterable[Event]] | None = None,
        on_command: Callable[[Event], None] | None = None,
        observer: Observer | None = None,
        subscriber_buffer: int = DEFAULT_SUBSCRIBER_BUFFER,
        max_frame: int = DEFAULT_MAX_FRAME,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        ring_writers: bool = True,
    ) -> None:
        self._ring_writers = ring_writers
        self._requested = None if address is None else as_address(address)
        self._token = token or None
        self._snapshot = snapshot
        self._on_command = on_command
        self._admission = Admission(max_connections, subscriber_buffer, max_frame)
        self._clock = Clock()
        #: records (see :data:`Record`) appended by any thread without a lock; at most
        #: ``ring_limit`` wait: a writer checks ``len(ring) < ring_limit`` and calls
        #: :meth:`count_drop` instead of appending when it is full
        self.ring: collections.deque[Record] = collections.deque()
        self.ring_limit = queue_size
        self._fanout = Fanout(self.ring, self._clock._counter, observer, self._send)
        #: events lost in the ring (full) or unbuildable; and lost for slow subscribers
        self._queue_drops = self._fanout.queue_drops
        self._subscriber_drops = self._fanout.subscriber_drops
        self._wake_pending = False
        self._closing = False
        #: started with ``thread=False``: served by the caller's turns
        self._driven = False
        self._in_turn = False
        self._listener: Listener | None = None
        self._thread: threading.Thread | None = None
        self._connections: dict[int, Connection] = {}
        self._selector: selectors.BaseSelector | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._policy: handshake.Policy | None = None
        self._warnings = RateLimitedLog(log)
        self._warn = self._warnings.warning
        #: set by :meth:`send_snapshots`: the thread sends the snapshot to every viewer
        #: once what is queued before went out, then sets the event it carries
        self._snapshots_due: threading.Event | None = None

    # ------------------------------------------------------------ public API
    @property
    def address(self) -> str:
        """The address viewers connect to (after ``start``, the bound one)."""
        if self._listener is not None:
            return str(self._listener.address)
        return str(self._requested) if self._requested else ""

    @property
    def clock(self) -> Clock:
        """The counter ``emit`` and the ring's records take their numbers from on the
        publisher's thread. Events numbered by the caller (``publish``) and by the
        publisher are not ordered with each other: use one or the other."""
        return self._clock

    @property
    def dropped(self) -> int:
        """Events lost so far: queue overflows plus per-subscriber drops."""
        return self._queue_drops.total + self._subscriber_drops.total

    @property
    def queue_dropped(self) -> int:
        return self._queue_drops.total

    @property
    def subscriber_count(self) -> int:
        """Subscribers past the handshake."""
        return sum(1 for c in list(self._connections.values()) if c.ready)

    def start(self, *, thread: bool = True) -> Publisher:
        """Listen, and serve from a daemon thread of its own; or, with ``thread=False``,
        from whichever thread calls :meth:`turn` (one thread driving many publishers,
        as a process that stands for many ranks does: a thread each would cost a
        wake-up, a select and a GIL hand-over per rank and write)."""
        if self._thread is not None or self._driven:
            raise AclmonError("publisher already started")
        if self._requested is None:
            self._requested = default_address()
        address = self._requested
        if address.scheme == "tcp" and not address.is_loopback and not self._token:
            raise AclmonError(
                f"refusing to listen on non-loopback {address} without a token (pass token=...)"
            )
        self._listener = listen(address)
        self._policy = handshake.Policy(
            token=self._token,
            loopback=self._listener.address.is_loopback,
            unix=self._listener.address.scheme == "unix",
        )
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener.fileno(), selectors.EVENT_READ, "listener")
        self._selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        if not thread:
            self._driven = True
            self._wake_pending = True  # nothing to wake: the driver's turns take the ring
            return self
        self._thread = threading.Thread(target=self._run, name="aclmon-publisher", daemon=True)
        self._thread.start()
        return self

    def turn(self) -> None:
        """One turn of a publisher started with ``thread=False``, without waiting: the
        connections that are ready are served, the ring is sent, timeouts and drop
        reports are looked at. Its driver calls it after emitting and often enough
        for handshakes and commands (every 100 ms is plenty). A driven publisher
        belongs to its driver's thread: :meth:`close` and :meth:`send_snapshots`
        are called from there too (``emit``, ``publish`` and ``submit`` from any)."""
        if self._closing:
            return
        if not self._driven:
            raise AclmonError("turn() serves a publisher started with thread=False")
        self._in_turn = True
        try:
            self._turn(0.0)
        except Exception:  # as the thread: never take the caller down; say why
            log.exception("aclmon publisher stopped by an internal error")
            self._closing = True
        finally:
            self._in_turn = False
        if self._closing:  # closed by a command of this turn, or by an error
            self._end_driven()

    def _end_driven(self) -> None:
        self._driven = False
        try:
            self._finish()
        except Exception:
            log.exception("aclmon publisher could not send what was queued")
        finally:
            self._shutdown()

    def publish(self, event: Event) -> bool:
        """Send one ready event as it is (its ``seq`` too) through the ring; never
        blocks. ``False``: dropped (and counted)."""
        # The event is its own record (no tuple to make, nothing more for the GC to
        # track), and submit() is inlined: a tool that publishes all it has pays this
        # per event.
        ring = self.ring
        if len(ring) >= self.ring_limit or self._closing:
            self._queue_drops.add()
            return False
        ring.append(event)
        if not self._wake_pending:
            self._wake_soon()
        return True

    def emit(self, cls: type, *fields: Any) -> bool:
        """Publish ``cls(seq, now, *fields)``, numbered on the publisher's thread."""
        return self.submit((PLAIN, cls.KIND, time.time_ns(), fields))  # type: ignore[attr-defined]

    def submit(self, record: Record) -> bool:
        """Append one record to the ring and wake the thread; never blocks.
        ``False``: dropped (and counted)."""
        ring = self.ring
        if len(ring) >= self.ring_limit or self._closing:
            self.count_drop()
            return False
        ring.append(record)
        self._wake_soon()
        return True

    def count_drop(self) -> None:
        """One event lost because the ring was full (called by the ring's writers)."""
        self._queue_drops.add()

    def reply(
        self, request_id: int, code: int, message: str = "", data: dict[str, Any] | None = None
    ) -> bool:
        """Answer a command (every viewer sees it; the sender matches the id)."""
        return self.emit(Reply, request_id, code, message, data or {})

    def send_snapshots(self, timeout: float = 0.5) -> bool:
        """Send every viewer the snapshot now, after everything published before
        (the agent does this as it closes, so that the last state a relay keeps is
        the job's final one). Waits at most ``timeout`` s; False if it was not sent."""
        thread = self._thread
        if (thread is None and not self._driven) or self._closing or self._snapshot is None:
            return False
        done = threading.Event()
        self._snapshots_due = done
        if self._driven:
            if self._in_turn:
                return False  # sent at the end of this turn
            deadline = time.monotonic() + timeout
            self.turn()
            while not done.is_set() and self._driven and time.monotonic() < deadline:
                self.turn()  # a bounded turn left records: they go first
            return done.is_set()
        if thread is threading.current_thread():
            return False  # the loop sends it after this turn: it cannot be waited for here
        self._wake()
        return done.wait(timeout)

    def _send_due_snapshots(self) -> None:
        """Called once the ring's records published before the request went out (a
        pump turn that left none): the snapshot counts them."""
        done, self._snapshots_due = self._snapshots_due, None
        if done is None:
            return
        for conn in list(self._connections.values()):
            if conn.ready:
                self._send_snapshot(conn)
        done.set()

    def close(self, flush_timeout: float = 1.0) -> None:
        """Stop, after trying for ``flush_timeout`` s to send what is queued."""
        if self._closing:
            return
        self._flush_timeout = flush_timeout
        self._closing = True
        if self._driven:
            if not self._in_turn:  # else the turn under way ends it
                self._end_driven()
        elif self._thread is not None:
            self._wake()
            if self._thread is not threading.current_thread():  # close() from on_command
                self._thread.join(flush_timeout + 2.0)
            self._thread = None

    def release_in_forked_child(self) -> None:
        """In a forked child: close this process's copies of the publisher's sockets,
        so that the parent's viewers see the parent close them, never a child keep
        them open. Nothing is unlinked or shut down: they are still the parent's."""
        self._closing = True
        self._thread = None
        self._close_copies()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.release()

    def __enter__(self) -> Publisher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ the thread
    def _wake_soon(self) -> None:
        """Wake the thread unless a wake is pending already (cleared when it drains)."""
        if not self._wake_pending:
            self._wake_pending = True
            self._wake()

    def _wake(self) -> None:
        if self._wake_w is not None:
            with contextlib.suppress(OSError):  # full pipe: a wake is already pending
                self._wake_w.send(b"\0")

    def _run(self) -> None:
        try:
            self._loop()
        except Exception:  # never take the job down; say why the bus stopped
            log.exception("aclmon publisher stopped by an internal error")
        finally:
            self._shutdown()

    def _loop(self) -> None:
        while not self._closing:
            # Work left from the last turn: look at the sockets, then go on with it.
            if not self._ring_writers:
                busy = HOUSEKEEPING_S  # every record wakes the thread
            else:
                busy = RING_POLL_S if self._fanout.busy else IDLE_POLL_S
            self._turn(0.0 if self._fanout.left else busy)
        self._finish()

    def _turn(self, timeout: float) -> None:
        selector = self._selector
        assert selector is not None
        # New connections are accepted after the reads of this turn: a hello
        # that has arrived is judged before newcomers can push it out.
        accept_due = False
        for key, mask in selector.select(timeout):
            tag = key.data
            if tag == "listener":
                accept_due = True
            elif tag == "wake":
                self._drain_wake()
            else:
                conn: Connection = tag
                try:
                    if mask & selectors.EVENT_READ:
                        self._read(conn)
                    if mask & selectors.EVENT_WRITE and conn.sock.fileno() != -1:
                        self._flush(conn)
                except Exception as exc:  # one bad connection must not stop the bus
                    log.exception("error serving %s", conn.name)
                    self._drop_connection(conn, f"internal error: {exc}")
        if accept_due:
            self._accept()
        self._pump()
        # Once a turn took all that was published before (a bounded turn may
        # leave some for the next, after the sockets had theirs).
        if self._snapshots_due is not None and not self._fanout.left:
            self._send_due_snapshots()
        self._housekeeping()

    def _finish(self) -> None:
        """Closing: nothing new comes in; send all that is there, then let go."""
        self._drain_wake()
        self._pump()
        while self._fanout.left:
            self._pump()
        self._final_flush()

    def _drain_wake(self) -> None:
        assert self._wake_r is not None
        # Clear the flag before draining the queue so a publish racing with
        # this pump always either is drained now or writes a new wake byte.
        self._wake_pending = False
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while self._wake_r.recv(4096):
                pass

    def _accept(self) -> None:
        assert self._listener is not None
        for _ in range(_ACCEPTS_PER_TURN):
            accepted = self._listener.accept()
            if accepted is None:
                return
            sock, name = accepted
            ready = self._admission.viewers_at_cap(self._connections.values())
            if ready is not None:
                self._warn("refused", "refusing %s: already %d viewers", name, ready)
                sock.close()
                continue
            peer = peer_of(sock, name)
            for oldest, why in self._admission.handshakes_to_close(
                self._connections.values(), peer
            ):
                self._drop_connection(oldest, why, kind="evicted")
            conn = Connection(sock, name, peer, self._admission.max_frame)
            self._connections[sock.fileno()] = conn
            assert self._selector is not None
            self._selector.register(sock, selectors.EVENT_READ, conn)
            hello = handshake.server_hello(conn.nonce, bool(self._token))
            self._send(conn, encode_frame(_pack(hello)))

    def _read(self, conn: Connection) -> None:
        # Before the handshake, read no more than what completes one handshake
        # frame: an unauthenticated peer never makes the job hold more. A
        # connection that may not send commands has nothing to send: small reads
        # keep what a flood costs the job small until it is dropped.
        if not conn.ready:
            size = HEADER.size + handshake.MAX_HANDSHAKE_FRAME - len(conn.hello)
        else:
            size = _READ_SIZE if conn.commands else _RECEIVE_ONLY_READ_SIZE
        try:
            data = conn.sock.recv(size)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._drop_connection(conn, f"read failed: {exc}")
            return
        if not data:
            self._drop_connection(conn, "closed by peer", quiet=True)
            return
        try:
            if not conn.ready:
                whole = conn.take_hello(data, handshake.MAX_HANDSHAKE_FRAME)
                if whole is None:
                    return
                payload, rest = whole
                if not self._admit(conn, payload):
                    return
                # Bytes after the hello belong to the command stream.
                payloads = conn.command_frames.feed(rest)
            else:
                payloads = conn.command_frames.feed(data)
        except FrameError as exc:
            self._drop_connection(conn, f"garbage from peer: {exc}", kind="garbage")
            return
        for payload in payloads:
            if not self._command(conn, payload):
                return

    def _admit(self, conn: Connection, payload: bytes) -> bool:
        try:
            hello = msgpack.unpackb(payload, raw=False, strict_map_key=True)
        except Exception:  # garbage: judged below as "not an aclmon bus client"
            hello = None
        assert self._policy is not None
        verdict = handshake.judge(self._policy, conn.nonce, hello)
        if verdict.ok:
            verdict = self._admission.room_for(self._connections.values(), conn, verdict)
        self._send(conn, encode_frame(_pack(handshake.welcome(verdict))))
        if not verdict.ok:
            self._drop_connection(conn, f"handshake refused: {verdict.why}", kind="refused")
            return False
        conn.admit(verdict, self._admission.out_limit(verdict.authenticated))
        log.debug("subscriber %s connected (commands: %s)", conn.name, conn.commands)
        self._send_snapshot(conn)
        return True

    def _send_snapshot(self, conn: Connection) -> None:
        if self._snapshot is None:
            return
        try:
            events = list(self._snapshot())
        except Exception:
            log.exception("snapshot callback failed; subscriber %s starts without it", conn.name)
            return
        # Snapshot state stands outside the sequence: number 0.
        data, failed = encode_frames([e._replace(seq=0) for e in events])
        for event, exc in failed:
            log.warning("unencodable snapshot event %r skipped: %s", type(event).__name__, exc)
        self._send(conn, data)

    def _command(self, conn: Connection, payload: bytes) -> bool:
        """Handle one frame from a subscriber; False if the connection was dropped."""
        decoder = EventDecoder()
        event = decoder.decode_payload(payload)
        if event is None:
            if decoder.unknown:
                log.info("unknown command kind from %s ignored", conn.name)
                return True
            self._drop_connection(conn, "garbage from peer: malformed command frame")
            return False
        if not is_command(event):
            return self._ignore(conn, f"{conn.name} sent a {type(event).__name__}, not a command")
        if not conn.commands:
            return self._ignore(
                conn, f"command {type(event).__name__} from receive-only {conn.name} ignored"
            )
        request_id = event.request_id
        if isinstance(event, Ping):
            self.reply(request_id, 0, "pong")
        elif isinstance(event, RequestSnapshot):
            self._send_snapshot(conn)
            self.reply(request_id, 0, "snapshot sent")
        elif self._on_command is None:
            self.reply(request_id, ACL_ERROR_API_NOT_SUPPORT, "this publisher takes no commands")
        else:
            try:
                self._on_command(event)
            except Exception as exc:
                log.exception("command handler failed on %s", type(event).__name__)
                self.reply(request_id, ACL_ERROR_INTERNAL_ERROR, f"command failed: {exc}")
        return True

    def _ignore(self, conn: Connection, what: str) -> bool:
        """Count a frame ignored from ``conn``; drop it past MAX_IGNORED_COMMANDS."""
        if conn.ignore():
            self._drop_connection(conn, f"{MAX_IGNORED_COMMANDS} ignored commands: {what}",
                                  kind="ignored")  # fmt: skip
            return False
        self._warn("ignored", "%s", what)
        return True

    def _pump(self) -> None:
        self._fanout.pump(self._connections.values())

    def _send(self, conn: Connection, data: bytes) -> None:
        if not data:
            return
        try:
            waiting = conn.write(data)
        except OSError as exc:
            self._drop_connection(conn, f"write failed: {exc}", quiet=True)
            return
        if waiting:
            self._want_write(conn, True)

    def _flush(self, conn: Connection) -> None:
        try:
            waiting = conn.flush()
        except OSError as exc:
            self._drop_connection(conn, f"write failed: {exc}", quiet=True)
            return
        if not waiting:
            self._want_write(conn, False)

    def _want_write(self, conn: Connection, on: bool) -> None:
        if conn.want_write == on or conn.sock.fileno() == -1:
            return
        conn.want_write = on
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if on else 0)
        assert self._selector is not None
        self._selector.modify(conn.sock, events, conn)

    def _housekeeping(self) -> None:
        now = time.monotonic()
        for conn in list(self._connections.values()):
            if not conn.ready and now - conn.opened > HANDSHAKE_TIMEOUT_S:
                self._drop_connection(conn, "no handshake in time", kind="timeout")
            elif conn.drops.due(now, DROPS_REPORT_INTERVAL_S):
                lost = conn.drops.total
                self._warn("slow", "subscriber %s too slow: %d events dropped", conn.name, lost)
                self.emit(Drops, lost, f"publisher -> {conn.name}",
                          "subscriber too slow: its buffer was full")  # fmt: skip
        self._warnings.flush()
        drops = self._queue_drops
        # told when someone can hear it
        if self.subscriber_count and drops.due(now, DROPS_REPORT_INTERVAL_S):
            self.emit(Drops, drops.total, "publisher queue", "queue full")

    def _drop_connection(
        self, conn: Connection, why: str, quiet: bool = False, kind: str = "dropped"
    ) -> None:
        if quiet:
            log.debug("subscriber %s disconnected: %s", conn.name, why)
        else:
            self._warn(kind, "subscriber %s disconnected: %s", conn.name, why)
        self._admission.dropped(conn, kind)
        fd = conn.sock.fileno()
        if fd != -1:
            assert self._selector is not None
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(conn.sock)
            conn.close()
        self._connections.pop(fd, None)
        # Entries are keyed by fd at accept time; find by identity if the fd is gone.
        for key, other in list(self._connections.items()):
            if other is conn:
                del self._connections[key]

    def _final_flush(self) -> None:
        deadline = time.monotonic() + getattr(self, "_flush_timeout", 1.0)
        flush_until(self._connections.values(), deadline)

    def _shutdown(self) -> None:
        self._closing = True
        self._warnings.flush(force=True)
        self._close_copies()
        if self._listener is not None:
            self._listener.close()

    def _close_copies(self) -> None:
        """Close the viewers' sockets, the selector and the wake pair (not the listener)."""
        copies: list[Any] = [conn.sock for conn in self._connections.values()]
        for item in [*copies, self._wake_r, self._wake_w, self._selector]:
            if item is not None:
                with contextlib.suppress(OSError):
                    item.close()
        self._connections.clear()
