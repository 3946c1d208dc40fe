"""One relay per host: is one running for this user's agents, and start one if not.

A running relay holds a shared ``flock`` on ``relay.lock`` in the runtime
directory (the one that holds the agent registry) from the moment it is
connected to its server for as long as it runs, with its pid and server URL
written in the file. ``aclmon run --relay URL`` calls :func:`ensure_relay`:
under an exclusive ``relay-start.lock`` (so ranks starting together start one
relay, not eight) it checks for a running relay (one to another server is an
error: the job's events would not go where asked) and, if there is none,
starts ``aclmon relay --nats URL`` detached (its own session, output to
``relay.log``) and waits until it holds the lock, i.e. is connected; a relay
that exits or does not connect in time is an error, never "started". Nothing
here imports NATS: the job only spawns a process.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from aclmon.locations import runtime_dir

LOCK_NAME = "relay.lock"
START_LOCK_NAME = "relay-start.lock"
LOG_NAME = "relay.log"


def hold_relay_lock(url: str = "", directory: Path | None = None) -> IO[str]:
    """Called by a relay once connected to ``url``: mark this host as having one
    (keep the file open)."""
    handle = open((directory or runtime_dir()) / LOCK_NAME, "a+")  # noqa: SIM115 (held open)
    fcntl.flock(handle, fcntl.LOCK_SH)
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n{url}\n")
    handle.flush()
    return handle


def running_relay_info(directory: Path | None = None) -> tuple[int, str] | None:
    """``(pid, url)`` of a relay running for this runtime directory, or None
    (pid -1 or url "" when the file does not say)."""
    path = (directory or runtime_dir()) / LOCK_NAME
    try:
        handle = open(path)  # noqa: SIM115 (closed below)
    except FileNotFoundError:
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            text = handle.read().strip().splitlines()
            pid = int(text[0]) if text and text[0].isdigit() else -1
            return pid, text[1].strip() if len(text) > 1 else ""
        fcntl.flock(handle, fcntl.LOCK_UN)
    return None


def running_relay(directory: Path | None = None) -> int | None:
    """The pid of a relay running for this runtime directory, or None."""
    info = running_relay_info(directory)
    return None if info is None else info[0]


def _same_server(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def ensure_relay(
    url: str, *, job: str | None = None, agent_token: str | None = None, timeout: float = 10.0
) -> tuple[int, bool]:
    """``(pid, started)``: the host's relay, started now if there was none.

    ``agent_token`` (the job's own bus token) reaches the relay in its
    environment, never on its command line."""
    from aclmon.errors import AclmonError

    directory = runtime_dir()
    with open(directory / START_LOCK_NAME, "a") as start_lock:
        fcntl.flock(start_lock, fcntl.LOCK_EX)
        running = running_relay_info(directory)
        if running is not None:
            pid, other = running
            if other and not _same_server(other, url):
                raise AclmonError(
                    f"this host's relay (pid {pid}) forwards to {other}, not to {url}: stop it,"
                    f" or pass --relay {other}"
                )
            return pid, False
        command = [sys.executable, "-m", "aclmon", "relay", "--nats", url]
        if job:
            command += ["--job", job]
        env = dict(os.environ)
        if agent_token:
            env["ACLMON_TOKEN"] = agent_token
        with open(directory / LOG_NAME, "ab") as log:
            process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, env=env,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            started = running_relay(directory)
            if started is not None:
                return started, True
            if process.poll() is not None:
                tail = ""
                with contextlib.suppress(OSError):
                    tail = (directory / LOG_NAME).read_text(errors="replace").strip()
                    tail = tail.splitlines()[-1] if tail else ""
                raise AclmonError(f"the relay for {url} exited at start: {tail}")
            time.sleep(0.05)
        # Not connected in time: never reported as started.
        process.terminate()
        raise AclmonError(
            f"the relay for {url} did not connect within {timeout:g} s"
            f" (its output: {directory / LOG_NAME})"
        )


def wait_for_relay(publisher: Any, viewers_before: int, timeout: float = 5.0) -> bool:
    """Wait (``timeout`` at most) until the relay has connected to this agent,
    i.e. one more viewer than ``viewers_before``: the job's first events then
    reach it instead of being sent to nobody."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if publisher.subscriber_count > viewers_before:
            return True
        time.sleep(0.005)
    return False
