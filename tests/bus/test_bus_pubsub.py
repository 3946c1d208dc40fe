"""Publisher and Subscriber end to end over real sockets."""

from __future__ import annotations

import logging
import struct
import time
from pathlib import Path

import pytest
from bushelpers import RawClient, collect, wait_until

from aclmon import events as ev
from aclmon.acl_constants import ACL_ERROR_INTERNAL_ERROR
from aclmon.bus.publisher import Publisher
from aclmon.bus.states import AUTH_FAILED, CONNECTED
from aclmon.bus.subscriber import CommandTimeout, Subscriber
from aclmon.errors import CommandRefused


@pytest.fixture
def sock_path(tmp_path: Path) -> str:
    return str(tmp_path / "p.sock")


def _log(i: int) -> tuple:
    return ("info", f"line {i}")


def test_events_arrive_in_order_after_the_snapshot(sock_path: str) -> None:
    state = [ev.Clock(start=99).make(ev.DeviceSet, 0, 0)]
    with (
        Publisher(sock_path, snapshot=lambda: state) as publisher,
        Subscriber(publisher.address) as sub,
    ):
        assert sub.wait_connected(10)
        for i in range(500):
            publisher.emit(ev.LogLine, *_log(i))
        got = collect(sub, 501)
    assert got[0] == state[0]._replace(seq=0)  # state first, outside the sequence
    assert [e.text for e in got[1:]] == [f"line {i}" for i in range(500)]
    assert [e.seq for e in got[1:]] == list(range(1, 501))
    assert sub.gaps == 0 and sub.malformed == 0


def test_gaps_are_counted_but_not_for_snapshot_or_restart(sock_path: str) -> None:
    with Publisher(sock_path) as publisher, Subscriber(publisher.address) as sub:
        assert sub.wait_connected(10)
        for seq in (1, 2, 5, 0, 6, 10):
            publisher.publish(ev.LogLine(seq, 1, "info", "x"))
        collect(sub, 6)
        assert sub.gaps == 2 + 3
        # A restarted source begins again with a Hello at seq 1: not a gap.
        publisher.publish(ev.Hello(1, 1, *ev.hello_fields("sim", "x", 1)))
        publisher.publish(ev.LogLine(2, 1, "info", "x"))
        collect(sub, 2)
        assert sub.gaps == 5


def test_ping_and_custom_commands_get_replies(sock_path: str) -> None:
    seen: list[ev.Event] = []
    publisher = Publisher(sock_path)

    def on_command(command: ev.Event) -> None:
        seen.append(command)
        publisher.reply(command.request_id, 0, "started", {"flags": 1})

    publisher._on_command = on_command
    with publisher, Subscriber(publisher.address) as sub:
        assert sub.wait_connected(10)
        assert sub.send_command(ev.Ping, timeout=10).message == "pong"
        reply = sub.send_command(ev.StartProfiling, timeout=10)
        assert (reply.code, reply.message, reply.data) == (0, "started", {"flags": 1})
        assert isinstance(seen[0], ev.StartProfiling)
        assert seen[0].request_id == reply.request_id
        assert 0 < reply.request_id < 2**63


def test_failing_command_handler_replies_with_an_error(sock_path: str) -> None:
    def on_command(command: ev.Event) -> None:
        raise RuntimeError("boom")

    with (
        Publisher(sock_path, on_command=on_command) as publisher,
        Subscriber(publisher.address) as sub,
    ):
        assert sub.wait_connected(10)
        reply = sub.send_command(ev.StopProfiling, timeout=10)
        assert reply.code == ACL_ERROR_INTERNAL_ERROR
        assert "boom" in reply.message


def test_unanswered_command_times_out_clearly(sock_path: str) -> None:
    with (
        Publisher(sock_path, on_command=lambda c: None) as publisher,
        Subscriber(publisher.address) as sub,
    ):
        assert sub.wait_connected(10)
        with pytest.raises(CommandTimeout, match=r"no reply to start_profiling .* within 0.3 s"):
            sub.send_command(ev.StartProfiling, timeout=0.3)
        assert not sub._pending  # nothing left waiting


def test_readonly_subscriber_refuses_locally(sock_path: str) -> None:
    with Publisher(sock_path) as publisher, Subscriber(publisher.address, readonly=True) as sub:
        assert sub.wait_connected(10)
        assert not sub.commands_allowed
        with pytest.raises(CommandRefused, match="read-only"):
            sub.send_command(ev.Ping)


def test_server_ignores_commands_from_a_readonly_connection(sock_path: str) -> None:
    calls: list[ev.Event] = []
    with Publisher(sock_path, on_command=calls.append) as publisher:
        client = RawClient(publisher.address)
        try:
            assert client.handshake(readonly=True) == {"ok": True, "commands": False}
            client.send(ev.encode(ev.StartProfiling(1, 1, 77)))
            client.send(ev.encode(ev.Ping(2, 1, 78)))
            assert not [e for e in client.events(0.5) if isinstance(e, ev.Reply)]
        finally:
            client.close()
    assert calls == []


def test_tcp_client_without_token_cannot_command() -> None:
    calls: list[ev.Event] = []
    with Publisher("tcp://127.0.0.1:0", on_command=calls.append) as publisher:
        with Subscriber(publisher.address) as sub:
            assert sub.wait_connected(10)
            assert not sub.commands_allowed
            with pytest.raises(CommandRefused, match="receive-only"):
                sub.send_command(ev.StartProfiling)
            publisher.emit(ev.LogLine, "info", "still receives")
            assert collect(sub, 1)[0].text == "still receives"
        # Sending anyway, by hand, is ignored by the server.
        client = RawClient(publisher.address)
        try:
            assert client.handshake() == {"ok": True, "commands": False}
            client.send(ev.encode(ev.StartProfiling(1, 1, 77)))
            client.send(ev.encode(ev.Ping(2, 1, 78)))
            assert not [e for e in client.events(0.5) if isinstance(e, ev.Reply)]
        finally:
            client.close()
    assert calls == []


def test_tcp_token_proves_itself_and_wrong_token_fails() -> None:
    with Publisher("tcp://127.0.0.1:0", token="s3cret") as publisher:
        with Subscriber(publisher.address, token="s3cret") as good:
            assert good.wait_connected(10)
            assert good.commands_allowed
            assert good.send_command(ev.Ping, timeout=10).code == 0
        with Subscriber(publisher.address) as anonymous:
            assert anonymous.wait_connected(10)
            assert not anonymous.commands_allowed
        states: list[str] = []
        with Subscriber(publisher.address, token="guess", on_state=states.append) as bad:
            assert wait_until(lambda: bad.state == AUTH_FAILED)
            assert bad.state_reason == "bad token"
            assert CONNECTED not in states


def test_non_loopback_listener_requires_the_token_to_receive() -> None:
    with Publisher("tcp://0.0.0.0:0", token="s3cret") as publisher:
        port = publisher.address.rsplit(":", 1)[1]
        with Subscriber(f"tcp://127.0.0.1:{port}") as anonymous:
            assert wait_until(lambda: anonymous.state == AUTH_FAILED)
            assert anonymous.state_reason == "token required"
        with Subscriber(f"tcp://127.0.0.1:{port}", token="s3cret") as good:
            assert good.wait_connected(10)


def test_stalled_subscriber_makes_the_publisher_drop_not_block(sock_path: str) -> None:
    limit = 64 * 1024
    with Publisher(sock_path, subscriber_buffer=limit) as publisher:
        stalled = RawClient(publisher.address, rcvbuf=4096)
        try:
            assert stalled.handshake()["ok"]
            with Subscriber(publisher.address) as healthy:
                assert healthy.wait_connected(10)
                assert wait_until(lambda: publisher.subscriber_count == 2)
                received: list[ev.Event] = []
                for burst in range(60):
                    for i in range(500):
                        assert publisher.emit(ev.LogLine, "info", f"{burst}:{i}:" + "x" * 200)
                    # Paced to the healthy reader (one burst fits its buffer);
                    # the stalled one falls further behind every time.
                    lines = 500 * (burst + 1)

                    def burst_arrived(lines: int = lines) -> bool:
                        received.extend(healthy.poll(100_000, 0.01))
                        return sum(isinstance(e, ev.LogLine) for e in received) >= lines

                    assert wait_until(burst_arrived)
                    # Memory stays bounded however long the stall lasts:
                    # the buffer limit plus at most one batch.
                    bound = limit + 500 * 300
                    assert all(len(c.out) <= bound for c in list(publisher._connections.values()))
                assert wait_until(lambda: publisher.dropped > 0)
                drops: list[ev.Event] = []

                def drops_seen() -> bool:
                    received.extend(healthy.poll(100_000, 0.05))
                    drops[:] = [e for e in received if isinstance(e, ev.Drops)]
                    return bool(drops)

                assert wait_until(drops_seen)
                assert drops[-1].total > 0
                assert "too slow" in drops[-1].why

                # The healthy subscriber lost nothing.
                def all_lines() -> bool:
                    received.extend(healthy.poll(100_000, 0.05))
                    return sum(isinstance(e, ev.LogLine) for e in received) == 30_000

                assert wait_until(all_lines)
                assert healthy.gaps == 0
                assert publisher.queue_dropped == 0
                assert publisher.dropped >= drops[-1].total  # reports lag the count
        finally:
            stalled.close()


def test_a_stalled_subscriber_that_reads_again_receives_again(sock_path: str) -> None:
    """Batches are dropped unpacked for a viewer whose buffer has not moved since it
    lost one; once it reads, it gets the new ones again."""
    with Publisher(sock_path, subscriber_buffer=16 * 1024) as publisher:
        viewer = RawClient(publisher.address, rcvbuf=4096)
        try:
            assert viewer.handshake()["ok"]
            assert wait_until(lambda: publisher.subscriber_count == 1)

            def lost() -> bool:  # it reads nothing meanwhile
                for i in range(200):
                    publisher.emit(ev.LogLine, "info", f"{i}:" + "x" * 200)
                return publisher.dropped > 0

            assert wait_until(lost)
            seen: list[ev.Event] = []

            def marked() -> bool:
                publisher.emit(ev.TxMark, "back")
                seen.extend(viewer.events(0.2))
                return any(isinstance(e, ev.TxMark) for e in seen)

            assert wait_until(marked)
        finally:
            viewer.close()


def test_garbage_peer_is_disconnected_and_others_unaffected(
    sock_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="aclmon.bus")
    with Publisher(sock_path) as publisher, Subscriber(publisher.address) as sub:
        assert sub.wait_connected(10)
        rogue = RawClient(publisher.address)
        try:
            assert rogue.handshake()["ok"]
            rogue.sock.sendall(struct.pack("<I", 0xFFFFFFF0) + b"junk")
            assert wait_until(lambda: "garbage from peer" in caplog.text)
            assert wait_until(lambda: publisher.subscriber_count == 1)
        finally:
            rogue.close()
        publisher.emit(ev.LogLine, "info", "after")
        assert collect(sub, 1)[0].text == "after"


def test_garbage_instead_of_a_hello_is_refused(sock_path: str) -> None:
    with Publisher(sock_path) as publisher:
        client = RawClient(publisher.address)
        try:
            client.next_payload()  # server hello
            client.send(b"\xc1\xc1")
            import msgpack

            assert msgpack.unpackb(client.next_payload()) == {
                "ok": False,
                "why": "not an aclmon bus client",
            }
            assert client.next_payload(2.0) is None  # closed
        finally:
            client.close()


def test_subscriber_reconnects_with_backoff(sock_path: str) -> None:
    states: list[str] = []
    sub = Subscriber(sock_path, on_state=states.append, backoff_max=0.2).start()
    try:
        # Nobody listens yet: it keeps trying.
        assert wait_until(lambda: "disconnected" in states)
        with Publisher(sock_path) as first:
            assert sub.wait_connected(10)
            first.emit(ev.LogLine, "info", "one")
            assert collect(sub, 1)[0].text == "one"
        assert wait_until(lambda: sub.state != CONNECTED)
        with Publisher(sock_path) as second:
            assert wait_until(lambda: sub.connects == 2)
            second.emit(ev.LogLine, "info", "two")
            assert collect(sub, 1)[0].text == "two"
    finally:
        sub.close()
    assert states.count("connected") == 2
    assert states[-1] == "closed"


def test_queue_overflow_drops_and_reports(sock_path: str) -> None:
    # Not started: nothing drains the queue.
    publisher = Publisher(sock_path, queue_size=10)
    results = [publisher.emit(ev.LogLine, "info", "x") for _ in range(15)]
    assert results.count(False) == 5
    assert publisher.dropped == publisher.queue_dropped == 5
    with publisher, Subscriber(publisher.address) as sub:
        assert sub.wait_connected(10)
        got: list[ev.Event] = []
        assert wait_until(
            lambda: got.extend(sub.poll(1000, 0.05)) or any(isinstance(e, ev.Drops) for e in got)
        )
        drop = next(e for e in got if isinstance(e, ev.Drops))
        assert (drop.total, drop.where) == (5, "publisher queue")


def test_command_sent_with_the_hello_is_served(sock_path: str) -> None:
    import msgpack

    from aclmon.bus import handshake
    from aclmon.events.wire import encode_frame

    with Publisher(sock_path) as publisher:
        client = RawClient(publisher.address)
        try:
            hello = msgpack.unpackb(client.next_payload())
            answer = msgpack.packb(handshake.client_hello(hello, None, False))
            client.sock.sendall(encode_frame(answer) + encode_frame(ev.encode(ev.Ping(1, 1, 5))))
            assert msgpack.unpackb(client.next_payload()) == {"ok": True, "commands": True}
            replies = [e for e in client.events(1.0) if isinstance(e, ev.Reply)]
            assert [(r.request_id, r.message) for r in replies] == [(5, "pong")]
        finally:
            client.close()


def test_close_from_a_command_handler_does_not_hang(sock_path: str) -> None:
    publisher = Publisher(sock_path)
    publisher._on_command = lambda command: publisher.close()
    with publisher, Subscriber(publisher.address) as sub:
        assert sub.wait_connected(10)
        with pytest.raises((CommandRefused, CommandTimeout)):
            sub.send_command(ev.StopProfiling, timeout=2)
        assert wait_until(lambda: sub.state != CONNECTED)


def test_subscriber_survives_a_server_that_is_not_a_bus(sock_path: str) -> None:
    import socket
    import threading

    server = socket.socket(socket.AF_UNIX)
    server.bind(sock_path)
    server.listen()
    stop = threading.Event()

    def serve_garbage() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"\x05\x00\x00\x00\xc1\xc1\xc1\xc1\xc1")

    thread = threading.Thread(target=serve_garbage)
    thread.start()
    states: list[str] = []
    try:
        with Subscriber(sock_path, on_state=states.append, backoff_max=0.1) as sub:
            assert wait_until(lambda: "handshake failed" in sub.state_reason)
            assert CONNECTED not in states
    finally:
        stop.set()
        thread.join()
        server.close()


def test_big_snapshot_events_right_after_the_welcome(sock_path: str) -> None:
    # The snapshot follows the welcome at once, often in the same read: frames
    # far bigger than a handshake message must pass.
    big = ev.DumpFileSeen(7, 1, "/d/x", "overflow", 1, {"records": tuple(range(5000))})
    with (
        Publisher(sock_path, snapshot=lambda: [big]) as publisher,
        Subscriber(publisher.address) as sub,
    ):
        assert sub.wait_connected(10)
        (got,) = collect(sub, 1)
        assert got == big._replace(seq=0)
        assert sub.connects == 1


def test_close_from_the_state_callback_does_not_hang(sock_path: str) -> None:
    holder: list[Subscriber] = []

    def on_state(state: str) -> None:
        if state == "disconnected":
            holder[0].close()

    sub = Subscriber(sock_path, on_state=on_state)  # nobody listens: disconnected at once
    holder.append(sub)
    sub.start()
    assert wait_until(lambda: sub.state == "closed")
    sub.close()


def test_connections_beyond_the_cap_are_closed(sock_path: str) -> None:
    with Publisher(sock_path, max_connections=2) as publisher:
        first, second = RawClient(publisher.address), RawClient(publisher.address)
        third = RawClient(publisher.address)
        try:
            assert first.handshake()["ok"] and second.handshake()["ok"]
            assert third.handshake() == {"ok": False, "why": "already 2 viewers"}
            assert third.next_payload(5.0) is None  # and closed
        finally:
            for client in (first, second, third):
                client.close()
        # Freed slots are usable again.
        assert wait_until(lambda: len(publisher._connections) == 0)
        with Subscriber(publisher.address) as sub:
            assert sub.wait_connected(10)


def test_send_snapshots_goes_after_everything_published_before(sock_path: str) -> None:
    """The agent's last snapshot (before its Goodbye) counts every event: it is sent
    only once the ring's records went out, even when one bounded pump turn cannot
    take them all."""
    sent = 60_000
    state = [ev.Clock(start=99).make(ev.DeviceSet, 0, 0)]
    with (
        Publisher(sock_path, snapshot=lambda: state) as publisher,
        Subscriber(publisher.address) as sub,
    ):
        assert sub.wait_connected(10)
        assert collect(sub, 1) == [state[0]._replace(seq=0)]
        for i in range(sent):
            publisher.emit(ev.LogLine, *_log(i))
        assert publisher.send_snapshots(timeout=30)
        got = collect(sub, sent + 1)
    assert publisher.dropped == 0
    assert [e.seq for e in got] == [*range(1, sent + 1), 0]


def test_a_gathering_wait_ends_for_a_commands_reply_and_for_close(sock_path: str) -> None:
    """A viewer's subscriber lets a slow stream gather for its pace between reads;
    a command sent meanwhile is answered at once, and closing does not wait."""
    with Publisher(sock_path) as publisher:
        sub = Subscriber(publisher.address, coalesce=60.0)
        sub.start()
        thread = sub._thread
        try:
            assert sub.wait_connected(10)
            # a slow stream over more than the rate window: measured slow, the
            # thread then gathers for a minute after each short read
            for i in range(3):
                publisher.emit(ev.LogLine, "info", f"line {i}")
                time.sleep(0.3)
            assert wait_until(lambda: sub.received >= 3, 10)
            assert sub.send_command(ev.Ping, timeout=10).message == "pong"
            before = sub.received
            publisher.emit(ev.LogLine, "info", "last")
            assert wait_until(lambda: sub.received > before, 10)
            time.sleep(0.2)  # back in its wait
        finally:
            sub.close()
        assert thread is not None and not thread.is_alive()
