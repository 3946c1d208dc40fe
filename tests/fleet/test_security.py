"""NATS security as docs/fleet.md describes it: the role permissions (nkeys)
and TLS, against a real nats-server."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from fleethelpers import RelayThread, answering_agent, wait_until

from aclmon import events as ev
from aclmon.bus import registry
from aclmon.errors import CommandRefused
from aclmon.events.wire import encode_frame
from aclmon.fleet import subjects as sj
from aclmon.fleet.connect import Credentials
from aclmon.fleet.nats_source import NatsFeed
from aclmon.fleet.relay import Relay
from aclmon.fleet.streams import DEFAULT_STREAM_LIMITS
from aclmon.store.fleet import FleetStore

pytestmark = pytest.mark.slow
HOST = sj.short_host(socket.gethostname())


def _viewer_permissions() -> list[str]:
    """The documented VIEWER role: read the streams through ephemeral consumers only."""
    subjects = ["$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.FC.>"]
    for name in sj.STREAMS.values():
        subjects += [f"$JS.API.STREAM.INFO.{name}", f"$JS.API.CONSUMER.CREATE.{name}"]
    return subjects


def _seed(tmp_path: Path, name: str) -> tuple[str, str]:
    import nkeys

    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    path = tmp_path / f"{name}.nk"
    path.write_bytes(seed)
    path.chmod(0o600)
    return str(path), nkeys.from_seed(seed).public_key.decode()


def _list(subjects: list[str]) -> str:
    return "[" + ", ".join(f'"{s}"' for s in subjects) + "]"


def _relay_role(host: str) -> str:
    """The documented RELAY role for one host: its own subjects, no stream admin;
    reading a stored message back (the clock probes' times) into its own inbox."""
    publish = [f"aclmon.*.{host}.>", f"$JS.API.STREAM.MSG.GET.{sj.STREAMS[sj.EVENTS]}"]
    subscribe = [f"aclmon.*.{host}.*.cmd", f"{sj.relay_inbox(host)}.>"]
    return f"publish: {_list(publish)}, subscribe: {_list(subscribe)}, allow_responses: true"


class Roles:
    """A nats-server with the documented roles as nkey users: an admin (streams),
    the relay of this host, the relay of another host, a viewer, an operator."""

    def __init__(self, start_nats, tmp_path: Path) -> None:
        names = ("admin", "relay", "other_relay", "viewer", "operator")
        self.seeds = {}
        keys = {}
        for name in names:
            self.seeds[name], keys[name] = _seed(tmp_path, name)
        viewer = _viewer_permissions()
        config = tmp_path / "roles.conf"
        config.write_text(f"""
authorization {{
  users = [
    {{ nkey: {keys["admin"]}, permissions: {{ publish: ["aclmon.>", "$JS.API.>"],
                                              subscribe: ["_INBOX.>"] }} }}
    {{ nkey: {keys["relay"]}, permissions: {{ {_relay_role(HOST)} }} }}
    {{ nkey: {keys["other_relay"]}, permissions: {{ {_relay_role("otherhost")} }} }}
    {{ nkey: {keys["viewer"]}, permissions: {{
        publish: {_list(viewer)}, subscribe: {_list(["aclmon.>", "_INBOX.>"])} }} }}
    {{ nkey: {keys["operator"]}, permissions: {{
        publish: {_list([*viewer, "aclmon.*.*.*.cmd"])},
        subscribe: {_list(["aclmon.>", "_INBOX.>"])} }} }}
  ]
}}
""")
        self.server = start_nats("-c", str(config))
        self.url = self.server.url

    def credentials(self, name: str) -> Credentials:
        return Credentials(nkey=self.seeds[name])

    def connect(self, name: str, errors: list[str]):
        import nats

        async def on_error(exc: Exception) -> None:
            errors.append(str(exc))

        return nats.connect(self.url, nkeys_seed=self.seeds[name], error_cb=on_error,
                            allow_reconnect=False)  # fmt: skip


def _setup_streams(roles: Roles) -> None:
    """Streams are made by an admin credential, never by a relay's."""

    async def make() -> None:
        from aclmon.fleet.connect import connect

        relay = Relay(roles.url, roles.credentials("admin"))
        relay.nc = await connect(roles.url, roles.credentials("admin"), name="admin")
        await relay.ensure_streams()
        await relay.nc.close()

    asyncio.run(make())


def test_relay_viewer_and_operator_roles(start_nats, runtime_dir, tmp_path):
    roles = Roles(start_nats, tmp_path)
    _setup_streams(roles)
    commands: list[ev.Event] = []
    publisher = answering_agent(runtime_dir, commands)
    relay = Relay(roles.url, roles.credentials("relay"), job="roles", flush_ms=5,
                  setup_streams=False)  # fmt: skip
    viewer = NatsFeed(roles.url, sj.Scope("roles"), roles.credentials("viewer"), since_s=0.0)
    operator = NatsFeed(roles.url, sj.Scope("roles"), roles.credentials("operator"))
    try:
        with RelayThread(relay) as relay_thread:
            wait_until(lambda: relay.links and relay.links[os.getpid()].frames_in, what="relay")
            for i in range(50):
                publisher.emit(ev.TxMark, f"mark {i}")
            # The viewer replays the stream from JetStream, with the clock offset the
            # relay measured under its role ...
            viewer.start()
            marks: list[ev.Event] = []
            clocks: list[ev.ClockOffset] = []

            def replayed() -> bool:
                for _key, events in viewer.poll():
                    marks.extend(e for e in events if isinstance(e, ev.TxMark))
                    clocks.extend(e for e in events if isinstance(e, ev.ClockOffset))
                return len(marks) == 50 and bool(clocks)

            wait_until(replayed, what="the viewer's replay and the relay's clock offset")
            assert clocks[0].host == HOST
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


def test_a_relay_credential_holds_only_its_own_host(start_nats, tmp_path):
    """A relay's credential cannot publish or forge on another host's subjects,
    take another host's commands, or administer the streams."""
    roles = Roles(start_nats, tmp_path)
    _setup_streams(roles)
    errors: list[str] = []

    async def attempts() -> dict[str, object]:
        nc = await roles.connect("relay", errors)
        admin = await roles.connect("admin", [])
        js_admin = admin.jetstream()
        out: dict[str, object] = {}
        try:
            # Its own host: allowed, and stored.
            await nc.publish(sj.subject("job", HOST, 1, sj.EVENTS), b"x")
            # Another host's events and its gone-marker (a rank "exited"): refused.
            await nc.publish(sj.subject("job", "otherhost", 1, sj.EVENTS), b"forged")
            await nc.publish(sj.subject("job", "otherhost", 1, sj.STATE), b"",
                             headers={sj.GONE_HEADER: "1"})  # fmt: skip
            # Another host's commands, and every client's replies: refused.
            await nc.subscribe(sj.subject("*", "otherhost", "*", sj.CMD))
            await nc.subscribe("_INBOX.>")
            await nc.flush()
            js = nc.jetstream(timeout=1.0)
            for what, call in (
                ("purge", lambda: js.purge_stream(sj.STREAMS[sj.EVENTS])),
                ("delete", lambda: js.delete_stream(sj.STREAMS[sj.ALERTS])),
                ("create", lambda: js.add_stream(name="ROGUE", subjects=["rogue.>"])),
            ):
                try:
                    await call()
                    out[what] = "done"
                except Exception as exc:  # refused: nats-py sees no answer
                    out[what] = type(exc).__name__
            await asyncio.sleep(0.2)
            out["stored"] = (await js_admin.stream_info(sj.STREAMS[sj.EVENTS])).state.messages
            out["streams"] = sorted([info.config.name for info in await js_admin.streams_info()])
        finally:
            await nc.close()
            await admin.close()
        return out

    out = asyncio.run(attempts())
    assert out["stored"] == 1  # only the publication on its own host
    assert out["purge"] != "done" and out["delete"] != "done" and out["create"] != "done"
    assert out["streams"] == sorted(sj.STREAMS.values())
    violations = " ".join(errors).lower()
    assert violations.count("permissions violation") >= 5, errors
    assert "otherhost" in violations and "$js.api" in violations


def test_a_viewer_can_make_only_a_bounded_number_of_ephemeral_consumers(start_nats, tmp_path):
    """No durable consumers (they would outlive the viewer), no deleting others'
    consumers, and a stream holds at most max_consumers of them."""
    from nats.js.api import ConsumerConfig

    roles = Roles(start_nats, tmp_path)
    limits = {cls: replace(value, max_consumers=4) for cls, value in DEFAULT_STREAM_LIMITS.items()}

    async def make_streams() -> None:
        from aclmon.fleet.connect import connect

        relay = Relay(roles.url, roles.credentials("admin"), stream_limits=limits)
        relay.nc = await connect(roles.url, roles.credentials("admin"), name="admin")
        await relay.ensure_streams()
        await relay.nc.close()

    asyncio.run(make_streams())
    errors: list[str] = []
    stream = sj.STREAMS[sj.SUMMARY]

    async def attempts() -> dict[str, object]:
        nc = await roles.connect("viewer", errors)
        js = nc.jetstream(timeout=1.0)
        out: dict[str, object] = {}
        try:
            for what, config in (
                ("durable", ConsumerConfig(durable_name="mine")),
                ("named", ConsumerConfig(name="mine", inactive_threshold=3600)),
            ):
                try:
                    await js.add_consumer(stream, config)
                    out[what] = "made"
                except Exception as exc:
                    out[what] = type(exc).__name__
            made = 0
            for i in range(10):
                try:
                    await js.add_consumer(
                        stream,
                        ConsumerConfig(deliver_subject=f"_INBOX.v{i}", inactive_threshold=3600),
                    )
                    made += 1
                except Exception as exc:
                    out["refusal"] = str(exc)
            out["ephemeral"] = made
        finally:
            await nc.close()
        return out

    out = asyncio.run(attempts())
    assert out["durable"] != "made" and out["named"] != "made"
    assert out["ephemeral"] == 4
    assert "maximum consumers" in str(out["refusal"]).lower()


def test_the_fleet_store_refuses_a_source_whose_hello_disagrees_with_its_subject(
    start_nats, tmp_path
):
    """A relay may publish only under its own host; a Hello claiming another host
    (a fake rank, a fake earliest exception) is refused by the viewer, whatever
    it says."""
    roles = Roles(start_nats, tmp_path)
    _setup_streams(roles)
    forged_pid = 999_999
    honest = ev.Hello(0, 1, *ev.hello_fields("sim", "x", 1))
    forged = honest._replace(pid=4242, host="otherhost.example", rank=0)
    early = ev.AclException(7, 1, 0, 0, 0, 0, 507011, "forged", "Forged", (), ())

    async def publish() -> None:
        nc = await roles.connect("relay", [])
        frames = [encode_frame(ev.encode(e)) for e in (forged, early)]
        await nc.publish(sj.subject("job", HOST, forged_pid, sj.EVENTS), b"".join(frames))
        await nc.publish(sj.subject("job", HOST, os.getpid(), sj.EVENTS),
                         encode_frame(ev.encode(honest)))  # fmt: skip
        await nc.flush()
        await nc.close()

    viewer = NatsFeed(roles.url, sj.Scope("job"), roles.credentials("viewer"), since_s=0.0)
    fleet = FleetStore()
    try:
        asyncio.run(publish())
        viewer.start()

        def both_seen() -> bool:
            fleet.take_from(viewer)
            return len(fleet.sources) == 2

        wait_until(both_seen, what="both sources")
    finally:
        viewer.close()
    data = fleet.to_json()
    assert [(s["host"], s["pid"]) for s in data["sources"]] == [(socket.gethostname(), os.getpid())]
    assert data["earliest_exception"] is None
    (refused,) = data["refused"]
    assert refused["pid"] == forged_pid and "otherhost.example" in refused["why"]
    assert [row.pid for row in fleet.rows()] == [os.getpid()]


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
    trusted = NatsFeed(url, sj.Scope("tls"), Credentials(token=server.token, tls_ca=cert))
    untrusted = NatsFeed(url, sj.Scope("tls"), Credentials(token=server.token))
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
