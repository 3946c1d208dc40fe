"""Peers that never authenticate: bounded memory, caps that keep a real viewer in,
and warnings that cannot flood the job's stderr."""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
from pathlib import Path

import pytest
from bushelpers import RawClient, wait_until

from aclmon import events as ev
from aclmon.bus import viewers
from aclmon.bus.lograte import RateLimitedLog
from aclmon.bus.publisher import Publisher
from aclmon.bus.subscriber import Subscriber
from aclmon.events.wire import encode_frame

TOKEN = "s3cret"


def test_a_peer_cannot_make_the_job_buffer_more_than_one_handshake_frame(tmp_path: Path) -> None:
    with Publisher(str(tmp_path / "p.sock")) as publisher:
        client = RawClient(publisher.address)
        try:
            assert client.next_payload() is not None  # the server's hello
            client.sock.settimeout(10)
            # A hello that claims to be almost 4 MiB long, then 3 MiB of it: the
            # job stops reading (and closes) at the length, long before 3 MiB.
            with pytest.raises((BrokenPipeError, ConnectionResetError)):
                client.sock.sendall(struct.pack("<I", 4 * 1024 * 1024 - 1))
                for _ in range(12):
                    client.sock.sendall(b"x" * (256 * 1024))
        finally:
            client.close()


def test_receive_only_strangers_cannot_lock_out_a_viewer_with_the_token() -> None:
    with Publisher("tcp://127.0.0.1:0", token=TOKEN) as publisher:
        strangers = []
        try:
            # Viewers without the token (receive-only on loopback), then idle sockets.
            for _ in range(viewers.DEFAULT_MAX_CONNECTIONS + 4):
                client = RawClient(publisher.address)
                client.handshake()
                strangers.append(client)
            for _ in range(40):
                strangers.append(RawClient(publisher.address))
            with Subscriber(publisher.address, token=TOKEN) as viewer:
                assert viewer.wait_connected(10)
                assert viewer.commands_allowed
            admitted = [c for c in publisher._connections.values() if c.ready]
            assert len(admitted) <= viewers.MAX_UNAUTHENTICATED + 1
            waiting = [c for c in publisher._connections.values() if not c.ready]
            assert len(waiting) <= viewers.MAX_HANDSHAKES
        finally:
            for client in strangers:
                client.close()


def test_handshakes_from_one_peer_are_capped_oldest_first(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="aclmon.bus")
    with Publisher(str(tmp_path / "p.sock")) as publisher:
        clients = [RawClient(publisher.address) for _ in range(10)]
        try:
            for client in clients[:-1]:
                assert client.next_payload() is not None  # accepted, hello sent
            cap = viewers.MAX_HANDSHAKES_PER_PEER
            # The oldest ones were closed to make room for the newer ones.
            assert clients[0].next_payload(10) is None
            assert clients[-1].handshake()["ok"]
            assert wait_until(
                lambda: sum(1 for c in publisher._connections.values() if not c.ready) < cap
            )
            assert "handshakes at once from unix pid" in caplog.text
        finally:
            for client in clients:
                client.close()


def test_a_command_flood_from_a_receive_only_peer_is_cut_off_and_logged_briefly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="aclmon.bus")
    with Publisher("tcp://127.0.0.1:0") as publisher:  # loopback without a token: receive-only
        flooder = RawClient(publisher.address)
        try:
            assert flooder.handshake()["ok"]
            frames = b"".join(encode_frame(ev.encode(ev.Ping(i, 1, i))) for i in range(1, 10_001))
            flooder.sock.settimeout(10)
            with contextlib.suppress(OSError):  # the job hangs up on it: that is the point
                for _ in range(10):
                    flooder.sock.sendall(frames)
            assert wait_until(lambda: not publisher._connections)
        finally:
            flooder.close()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert 0 < len(warnings) < 10
    assert "ignored commands" in caplog.text


def test_rate_limited_log_summarises_what_it_held_back(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="test.lograte")
    limited = RateLimitedLog(logging.getLogger("test.lograte"), window=3600, burst=3)
    for i in range(100_000):
        limited.warning("ignored", "command %d ignored", i)
    assert [r.getMessage() for r in caplog.records] == [f"command {i} ignored" for i in range(3)]
    limited.flush(force=True)
    assert caplog.records[-1].getMessage() == (
        "99997 similar in the last 3600 s (latest: command 99999 ignored)"
    )
    limited.flush(force=True)
    assert len(caplog.records) == 4


def test_peer_names_for_the_caps() -> None:
    a, b = socket.socketpair()
    try:
        import os

        assert viewers.peer_of(a, "unix:fd3") == f"unix pid {os.getpid()}"
        assert viewers.peer_of(a, "tcp:10.0.0.7:5000") == "10.0.0.7"
        assert viewers.peer_of(a, "tcp:::1:5000") == "::1"
    finally:
        a.close()
        b.close()


def test_a_peer_that_flooded_is_not_admitted_without_the_token_for_a_while() -> None:
    with Publisher("tcp://127.0.0.1:0", token=TOKEN) as publisher:
        flooder = RawClient(publisher.address)
        try:
            assert flooder.handshake() == {"ok": True, "commands": False}
            frames = b"".join(encode_frame(ev.encode(ev.Ping(i, 1, i))) for i in range(1, 200))
            with contextlib.suppress(OSError):
                flooder.sock.sendall(frames)
            assert wait_until(lambda: not publisher._connections)
        finally:
            flooder.close()
        again = RawClient(publisher.address)
        try:
            verdict = again.handshake()
            assert not verdict["ok"] and "misbehaved" in verdict["why"]
        finally:
            again.close()
        with Subscriber(publisher.address, token=TOKEN) as viewer:  # same peer, with the token
            assert viewer.wait_connected(10)
