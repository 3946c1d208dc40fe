"""Closing the terminal under a viewer: every process exits, the demo job included.

A real pseudo-terminal, closed from the master side (what tmux kill-session
or an ssh drop do): every later read or write on it fails with EIO. When the
pty is the viewer's controlling terminal the kernel also sends SIGHUP then
SIGCONT; when it is not (the viewer in a session of its own, as under setsid),
no signal comes and the dead terminal itself has to be noticed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import psutil
import pytest

from aclmon import events as ev
from aclmon.bus.recording import RecordingWriter

pytestmark = pytest.mark.slow

REPO = Path(__file__).parents[2]
#: how long every process may take to go once the terminal is gone (a hang bound)
EXIT_BOUND_S = 5.0


def _env(tmp_path: Path) -> dict[str, str]:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    return dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        XDG_RUNTIME_DIR=str(runtime),
        TERM="xterm-256color",
    )


def _take_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _read_until(master: int, predicate, timeout: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not predicate(seen):
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                seen += os.read(master, 65536)
            except OSError:
                break
    return seen


def _close_terminal_under(
    argv: list[str], env: dict[str, str], ready: bytes, *, controlling: bool
) -> list[str]:
    """Run ``argv`` on a fresh pty, close the terminal once ``ready`` was drawn;
    returns the processes still alive EXIT_BOUND_S later (killed before returning)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 48, 160, 0, 0))
    proc = subprocess.Popen(
        argv,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
        preexec_fn=_take_terminal if controlling else None,
    )
    os.close(slave)
    viewer = psutil.Process(proc.pid)
    family = [viewer]
    try:
        seen = _read_until(master, lambda out: ready in out, 60)
        assert ready in seen, f"the viewer never drew {ready!r}: {seen[-500:]!r}"
        family += viewer.children(recursive=True)
        _read_until(master, lambda out: False, 0.5)  # it keeps drawing: refreshes pending
    finally:
        os.close(master)
    _gone, alive = psutil.wait_procs(family, timeout=EXIT_BOUND_S)
    names = []
    for p in alive:
        with contextlib.suppress(psutil.Error):
            names.append(f"{p.pid} {' '.join(p.cmdline()[:4])}")
    for p in family:
        with contextlib.suppress(psutil.Error):
            p.kill()
    proc.wait(10)
    return names


@pytest.mark.parametrize("controlling", [True, False], ids=["hangup-signals", "no-signal"])
def test_demo_and_its_job_exit_when_the_terminal_closes(tmp_path: Path, controlling: bool) -> None:
    # Under a shell, as in `tmux new 'aclmon demo'`: the shell is the session leader.
    argv = ["sh", "-c", f"{sys.executable} -m aclmon demo; true"]
    env = _env(tmp_path)
    assert _close_terminal_under(argv, env, b"aclmon demo", controlling=controlling) == []


def test_attach_exits_when_the_terminal_closes(tmp_path: Path) -> None:
    env = _env(tmp_path)
    address = tmp_path / "job.sock"
    job_script = tmp_path / "job.py"
    job_script.write_text(
        "import time\nimport acl\nacl.init()\nacl.rt.set_device(0)\n"
        "while True:\n    acl.rt.get_device()\n    time.sleep(0.001)\n"
    )
    job = subprocess.Popen(
        [sys.executable, "-m", "aclmon.agent", "--sim", "--listen", str(address), str(job_script)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not address.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        argv = [sys.executable, "-m", "aclmon", "attach", str(address)]
        assert _close_terminal_under(argv, env, b"sim", controlling=False) == []
    finally:
        job.kill()
        job.wait()


def test_replay_exits_when_the_terminal_closes(tmp_path: Path) -> None:
    recording = tmp_path / "r.aclmon"
    clock = ev.Clock()
    with RecordingWriter(recording, {"source": "test"}) as writer:
        writer.write(clock.make(ev.Hello, *ev.hello_fields("sim", "Ascend910B", 1)))
        for i in range(2000):
            writer.write(clock.make(ev.LogLine, "info", f"line {i}"))
    argv = [sys.executable, "-m", "aclmon", "replay", str(recording), "--play", "--speed", "64"]
    assert _close_terminal_under(argv, _env(tmp_path), b"r.aclmon", controlling=False) == []
