"""Smaller hardening: bogus sequence numbers, an oversized frame right after the
welcome, private recordings, recordings from a newer aclmon, what live
`aclmon events` skipped."""

from __future__ import annotations

import argparse
import os
import socket
import stat
import threading
from pathlib import Path

import msgpack
import pytest
from bushelpers import collect, wait_until

from aclmon import events as ev
from aclmon.bus import handshake
from aclmon.bus.commands import configure_events
from aclmon.bus.publisher import Publisher
from aclmon.bus.recording import FILE_HEADER, RecordingReader, RecordingWriter
from aclmon.bus.subscriber import Subscriber
from aclmon.events.wire import FrameDecoder, encode_frame
from aclmon.store import Store

BOGUS = 2**64 - 1


def _lines(*seqs: int) -> list[ev.Event]:
    return [ev.LogLine(seq, 1, "info", f"at {seq}") for seq in seqs]


def test_one_bogus_sequence_number_counts_as_one_gap(tmp_path: Path) -> None:
    events = _lines(1, 2, BOGUS, 3, 4, 6)
    with Publisher(str(tmp_path / "p.sock")) as publisher, Subscriber(publisher.address) as sub:
        assert sub.wait_connected(10)
        for event in events:
            publisher.publish(event)
        assert len(collect(sub, len(events))) == len(events)
        assert sub.gaps == 1 + 1  # the bogus jump once, then the real gap before 6
    store = Store()
    store.apply_many(events)
    assert store.state.counters.gaps == 2


def _fake_bus(path: str, after_welcome: bytes) -> threading.Thread:
    """A server that completes the handshake and sends ``after_welcome`` in the
    same write as the welcome."""
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn, listener:
            conn.sendall(encode_frame(msgpack.packb(handshake.server_hello(b"n" * 32, False))))
            frames = FrameDecoder()
            while not frames.feed(conn.recv(4096)):
                pass
            welcome = encode_frame(msgpack.packb({"ok": True, "commands": False}))
            conn.sendall(welcome + after_welcome)
            conn.recv(1)  # until the client hangs up

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_an_oversized_frame_after_the_welcome_is_reported_as_such(tmp_path: Path) -> None:
    path = str(tmp_path / "fake.sock")
    server = _fake_bus(path, (100 * 2**20).to_bytes(4, "little") + b"x" * 64)
    sub = Subscriber(path, backoff_initial=5.0).start()
    try:
        assert wait_until(lambda: "exceeds" in sub.state_reason)
        assert sub.connects == 1  # the handshake itself succeeded
        assert "handshake" not in sub.state_reason
        assert "frame of 104857600 bytes exceeds the 4194304 limit" in sub.state_reason
    finally:
        sub.close()
        server.join(5)


def test_recordings_are_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        fresh = tmp_path / "fresh.aclmon"
        RecordingWriter(fresh).close()
        existing = tmp_path / "existing.aclmon"
        existing.write_bytes(b"old")
        existing.chmod(0o644)
        RecordingWriter(existing).close()
    finally:
        os.umask(old)
    for path in (fresh, existing):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_recording_from_a_newer_schema_opens_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "future.aclmon"
    with RecordingWriter(path) as writer:
        writer.write_many(_lines(1, 2))
        writer.write_payload(msgpack.packb((250, 3, 1, "a kind from the future")))
    raw = bytearray(path.read_bytes())
    magic, version, _schema, created, info = FILE_HEADER.unpack_from(raw)
    FILE_HEADER.pack_into(raw, 0, magic, version, ev.SCHEMA_VERSION + 1, created, info)
    path.write_bytes(bytes(raw))
    with RecordingReader(path, background=False) as reader:
        assert reader.schema_warning is not None
        assert f"event schema {ev.SCHEMA_VERSION + 1}" in reader.schema_warning
        assert [e.text for e in reader.iter_events()] == ["at 1", "at 2"]
    assert _run_events([str(path)]) == 0
    out, err = capsys.readouterr()
    assert "warning:" in err and "newer than this aclmon" in err
    assert out.count("text='at") == 2


def _run_events(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    configure_events(parser)
    args = parser.parse_args(argv)
    return int(args.handler(args) or 0)


def test_live_events_says_what_it_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Publisher(str(tmp_path / "p.sock")) as publisher:
        events = _lines(1, 2, 6, 7)

        def publish_when_connected() -> None:
            wait_until(lambda: publisher.subscriber_count > 0)
            for event in events:
                publisher.publish(event)

        threading.Thread(target=publish_when_connected, daemon=True).start()
        assert _run_events([publisher.address, "--count", "4"]) == 0
    out, err = capsys.readouterr()
    assert out.count("text='at") == 4
    assert "3 events missed in the sequence" in err
