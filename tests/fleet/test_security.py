"""NATS security as docs/fleet.md describes it: the role permissions (nkeys)
and TLS, against a real nats-server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from fleethelpers import RelayThread, wait_until

from aclmon import events as ev
from aclmon.bus import registry
from aclmon.bus.publisher import Publisher
from aclmon.errors import CommandRefused
from aclmon.fleet import subjects as sj
from aclmon.fleet.connect import Credentials
from aclmon.fleet.nats_source import NatsFeed
from aclmon.fleet.relay import Relay

pytestmark = pytest.mark.slow
HOST = sj.short_host(socket.gethostname())


def _stream_permissions() -> list[str]:
    subjects = ["$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.FC.>"]
    for name in sj.STREAMS.values():
        subjects += [
            f"$JS.API.STREAM.INFO.{name}",
            f"$JS.API.CONSUMER.CREATE.{name}",
            f"$JS.API.CONSUMER.CREATE.{name}.>",
            f"$JS.API.CONSUMER.DELETE.{name}.*",
            f"$JS.API.CONSUMER.INFO.{name}.*",
        ]
    return subjects


def _seed(tmp_path: Path, name: str) -> tuple[str, str]:
    nkeys = pytest.importorskip("nkeys")
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    path = tmp_path / f"{name}.nk"
    path.write_bytes(seed)
    path.chmod(0o600)
    return str(path), nkeys.from_seed(seed).public_key.decode()


def _list(subjects: list[str]) -> str:
    return "[" + ", ".join(f'"{s}"' for s in subjects) + "]"


def test_relay_viewer_and_operator_roles(start_nats, runtime_dir, tmp_path):
    relay_seed, relay_key = _seed(tmp_path, "relay")
    viewer_seed, viewer_key = _seed(tmp_path, "viewer")
    operator_seed, operator_key = _seed(tmp_path, "operator")
    viewer_publish = _stream_permissions()
    config = tmp_path / "roles.conf"
    config.write_text(f"""
authorization {{
  users = [
    {{ nkey: {relay_key}, permissions: {{
        publish: {_list(["aclmon.>", "$JS.API.>"])},
        subscribe: {_list(["aclmon.*.*.*.cmd", "_INBOX.>"])},
        allow_responses: true }} }}
    {{ nkey: {viewer_key}, permissions: {{
        publish: {_list(viewer_publish)},
        subscribe: {_list(["aclmon.>", "_INBOX.>"])} }} }}
    {{ nkey: {operator_key}, permissions: {{
        publish: {_list([*viewer_publish, "aclmon.*.*.*.cmd"])},
        subscribe: {_list(["aclmon.>", "_INBOX.>"])} }} }}
  ]
}}
""")
    server = start_nats("-c", str(config))
    commands: list[ev.Event] = []

    def on_command(event: ev.Event) -> None:
        commands.append(event)
        publisher.reply(event.request_id, 0, "ok")

    publisher = Publisher(
        str(runtime_dir / "agent.sock"),
        snapshot=lambda: [ev.Hello(0, 1, *ev.hello_fields("sim", "x", 1))],
        on_command=on_command,
    ).start()
    registry.register(publisher.address)
    relay = Relay(server.url, Credentials(nkey=relay_seed), job="roles", flush_ms=5)
    viewer = NatsFeed(server.url, sj.Scope("roles"), Credentials(nkey=viewer_seed), since_s=0.0)
    operator = NatsFeed(server.url, sj.Scope("roles"), Credentials(nkey=operator_seed))
    try:
        with RelayThread(relay) as relay_thread:
            wait_until(lambda: relay.links and relay.links[os.getpid()].frames_in, what="relay")
            for i in range(50):
                publisher.emit(ev.TxMark, f"mark {i}")
            # The viewer replays the stream from JetStream ...
            viewer.start()
            marks: list[ev.Event] = []

            def replayed() -> bool:
                for _key, events in viewer.poll():
                    marks.extend(e for e in events if isinstance(e, ev.TxMark))
                return len(marks) == 50

            wait_until(replayed, what="the viewer's replay")
            # ... but may not send a command: the server refuses, the viewer turns read-only.
            with pytest.raises(CommandRefused):
                viewer.send_command((HOST, os.getpid()), ev.StartProfiling, timeout=2)
            wait_until(lambda: viewer.readonly, what="read-only after the violation")
            assert commands == []
            # The operator may.
            operator.start()
            wait_until(lambda: operator.state == "connected", what="operator")
            assert relay_thread.error is None
            reply = operator.send_command((HOST, os.getpid()), ev.StartProfiling, timeout=5)
            assert reply.code == 0
            assert [type(c) for c in commands] == [ev.StartProfiling]
    finally:
        viewer.close()
        operator.close()
        publisher.close()
        registry.unregister()


def _self_signed(tmp_path: Path) -> tuple[str, str]:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl to make a test certificate")
    cert, key = tmp_path / "server.pem", tmp_path / "server.key"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return str(cert), str(key)


def test_tls_with_the_ca_connects_and_without_it_is_refused(start_nats, tmp_path):
    cert, key = _self_signed(tmp_path)
    server = start_nats("--tls", "--tlscert", cert, "--tlskey", key)
    url = server.url.replace("nats://", "tls://")
    trusted = NatsFeed(url, sj.Scope("tls"), Credentials(tls_ca=cert))
    untrusted = NatsFeed(url, sj.Scope("tls"), Credentials())
    try:
        trusted.start()
        untrusted.start()
        wait_until(lambda: trusted.state == "connected", what="TLS with the CA")
        wait_until(lambda: untrusted.state not in ("connecting",), what="a verdict")
        assert untrusted.state == "disconnected"
        assert "certificate" in untrusted.state_reason.lower()
    finally:
        trusted.close()
        untrusted.close()
