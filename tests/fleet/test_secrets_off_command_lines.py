"""Secrets stay off every command line: each documented command started with a
token (from the environment or a 0600 file), then every /proc/*/cmdline read
while they all run, as `ps -eo args` would show them to any local user.

Also: the nats-server aclmon starts always requires a token, kept in a 0600
file; the relay forwards commands only from a server that has auth."""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import signal
import socket
import stat
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import psutil
import pytest
from fleethelpers import RelayThread, answering_agent, wait_until

from aclmon import events as ev
from aclmon.acl_constants import ACL_ERROR_API_NOT_SUPPORT
from aclmon.bus import registry
from aclmon.children import dies_with_me
from aclmon.fleet import subjects as sj
from aclmon.fleet.nats_source import NatsFeed
from aclmon.fleet.relay import Relay

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
SIM_JOB = str(ROOT / "tests" / "agent" / "sim_job.py")
MODEL = str(ROOT / "aclmon" / "sim" / "models" / "mlp_head.json")
HOST = sj.short_host(socket.gethostname())


def command_lines_holding(*secrets_: str) -> list[str]:
    """Every process whose command line holds one of the secrets (any user's)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                args = handle.read()
        except OSError:  # gone meanwhile
            continue
        if any(s.encode() in args for s in secrets_):
            shown = args.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"pid {entry}: {shown}")
    return found


def private_file(path: Path, text: str) -> str:
    path.write_text(text + "\n")
    path.chmod(0o600)
    return str(path)


def test_every_documented_command_keeps_its_token_off_its_command_line(nats, runtime_dir, tmp_path):
    bus_token = secrets.token_hex(16)
    bus_token_file = private_file(tmp_path / "bus.token", bus_token)
    nats_token_file = private_file(tmp_path / "nats.token", nats.token)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime_dir.parent))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    for name in ("ACLMON_TOKEN", "ACLMON_NATS_TOKEN", "ACLMON_JOB"):
        env.pop(name, None)
    with_bus_token = dict(env, ACLMON_TOKEN=bus_token)
    with_nats_token = dict(env, ACLMON_NATS_TOKEN=nats.token)
    stop = tmp_path / "stop"
    processes: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(what: str, *args: str, environ: dict[str, str]) -> subprocess.Popen[bytes]:
        log = open(tmp_path / f"{len(processes)}.log", "wb")  # noqa: SIM115 (closed by the OS)
        proc = subprocess.Popen([sys.executable, "-m", "aclmon", *args], env=environ,
                                stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                preexec_fn=dies_with_me())  # fmt: skip
        processes.append((what, proc))
        return proc

    try:
        # The job: its agent requires the bus token (a file); `--relay` starts the
        # host's relay, which gets the NATS token and the agent's token from the
        # environment.
        job = start(
            "run --token-file --relay",
            "run", "--sim", "--token-file", bus_token_file, "--relay", nats.url,
            "--job", "secret", SIM_JOB, MODEL, "/dev/null", "--until", str(stop),
            "--max-seconds", "120", "--pause", "0.01",
            environ=with_nats_token,
        )  # fmt: skip
        wait_until(lambda: registry.list_agents(), 60, "the job's agent")
        pid = str(job.pid)
        start("record $ACLMON_TOKEN", "record", pid, str(tmp_path / "a.aclrec"),
              environ=with_bus_token)  # fmt: skip
        start("events --token-file", "events", pid, "--token-file", bus_token_file,
              environ=env)  # fmt: skip
        start("attach $ACLMON_TOKEN", "attach", pid, "--once", "--wait", "120",
              environ=with_bus_token)  # fmt: skip
        start("export --token-file", "export", "--trace", str(tmp_path / "live.json"), pid,
              "--token-file", bus_token_file, environ=env)  # fmt: skip
        # A relay started by hand (in a runtime directory of its own, so that the
        # lock names the relay `run --relay` started, which the end of the test stops).
        other_runtime = tmp_path / "other-run"
        other_runtime.mkdir(mode=0o700)
        start("relay --token-file --agent-token-file", "relay", "--nats", nats.url,
              "--token-file", nats_token_file, "--agent-token-file", bus_token_file,
              "--job", "other", "--no-setup-streams",
              environ=dict(env, XDG_RUNTIME_DIR=str(other_runtime)))  # fmt: skip
        start("attach nats:// $ACLMON_NATS_TOKEN", "attach", f"{nats.url}/secret", "--once",
              "--wait", "120", environ=with_nats_token)  # fmt: skip
        start("record nats:// --token-file", "record", f"{nats.url}/secret/{HOST}/{pid}",
              str(tmp_path / "b.aclrec"), "--token-file", nats_token_file,
              environ=env)  # fmt: skip

        def all_running() -> bool:
            return (tmp_path / "a.aclrec").exists() and (tmp_path / "b.aclrec").exists()

        wait_until(all_running, 60, "every command running")
        time.sleep(1.0)  # every one of them past its start, connected and working
        for what, proc in processes:
            assert proc.poll() is None, f"{what} exited: {proc.returncode}"
        from aclmon.fleet.hostrelay import running_relay

        assert running_relay(runtime_dir) is not None  # the relay `run --relay` started
        assert command_lines_holding(bus_token, nats.token) == []
    finally:
        stop.touch()
        for _what, proc in processes:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for _what, proc in processes:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        from aclmon.fleet.hostrelay import running_relay

        # The relay `run --relay` started (detached): its pid is in the lock file.
        relay_pid = running_relay(runtime_dir)
        if relay_pid and relay_pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(relay_pid, signal.SIGTERM)


def _take_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def test_demo_ranks_nats_starts_a_server_with_auth_and_no_token_on_any_command_line(tmp_path):
    """`aclmon demo --ranks 2 --nats` on a terminal: its nats-server requires a token,
    which no process of the demo carries on its command line."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), TERM="xterm-256color")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 48, 160, 0, 0))
    demo = subprocess.Popen([sys.executable, "-m", "aclmon", "demo", "--ranks", "2", "--nats"],
                            stdin=slave, stdout=slave, stderr=slave, env=env,
                            start_new_session=True, preexec_fn=_take_terminal)  # fmt: skip
    os.close(slave)
    try:

        def server_and_relay() -> list[psutil.Process] | None:
            children = psutil.Process(demo.pid).children(recursive=True)
            servers = [p for p in children if "nats-server" in " ".join(p.cmdline())]
            relays = [p for p in children if "relay" in p.cmdline()]
            return servers if servers and relays else None

        deadline = time.monotonic() + 60
        servers = None
        while servers is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                os.read(master, 65536) if _readable(master) else None
            with contextlib.suppress(psutil.Error):
                servers = server_and_relay()
        assert servers, "the demo started no nats-server and relay"
        args = servers[0].cmdline()
        config = args[args.index("-c") + 1]
        info = os.stat(config)
        assert stat.S_IMODE(info.st_mode) == 0o600
        text = Path(config).read_text()
        token = text.split('token: "', 1)[1].split('"', 1)[0]
        assert len(token) >= 32
        assert command_lines_holding(token) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(demo.pid, signal.SIGTERM)
        try:
            demo.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()
        os.close(master)


def _readable(fd: int) -> bool:
    import select

    return bool(select.select([fd], [], [], 0.1)[0])


# ---------------------------------------------------------------- no anonymous command path
@pytest.mark.parametrize("allowed", [False, True])
def test_a_relay_forwards_no_command_from_a_server_without_auth(start_nats, runtime_dir, allowed):
    server = start_nats(anonymous=True)
    seen: list[ev.Event] = []
    notes: list[str] = []
    publisher = answering_agent(runtime_dir, seen)
    relay = Relay(server.url, job="anon", flush_ms=5, on_note=notes.append,
                  allow_anonymous_commands=allowed)  # fmt: skip
    stranger = NatsFeed(server.url, sj.Scope("anon"))  # anyone: no credentials at all
    try:
        with RelayThread(relay):
            wait_until(lambda: relay.links and relay.links[os.getpid()].commands, what="relay")
            stranger.start()
            wait_until(lambda: stranger.state == "connected", what="the stranger connected")
            reply = stranger.send_command((HOST, os.getpid()), ev.StartProfiling, timeout=5)
        if allowed:
            assert reply.code == 0 and [type(e) for e in seen] == [ev.StartProfiling]
        else:
            assert reply.code == ACL_ERROR_API_NOT_SUPPORT
            assert "requires no authentication" in reply.message
            assert "--allow-anonymous-commands" in reply.message
            assert seen == []
            assert any("lets anyone connect" in n for n in notes)
    finally:
        stranger.close()
        publisher.close()
        registry.unregister()
