"""Helpers of the fleet tests: a relay on a thread, an agent's publisher
registered like an agent, waiting with timeouts."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aclmon import events as ev
from aclmon.bus import registry
from aclmon.bus.publisher import Publisher
from aclmon.fleet.connect import Credentials
from aclmon.fleet.relay import Relay

#: the ways a viewer fails to connect, for :func:`unreachable`
UNREACHABLE = ("no server", "wrong token", "bad certificate")


class RelayThread:
    """A :class:`Relay` running its own event loop on a thread."""

    def __init__(self, relay: Relay) -> None:
        self.relay = relay
        self.error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            self._ready.set()
            await self.relay.run(self._stop)

        try:
            asyncio.run(main())
        except BaseException as exc:
            self.error = exc
        finally:
            self._ready.set()

    def __enter__(self) -> RelayThread:
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(20)

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_until(condition: Callable[[], Any], timeout: float = 15.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what or condition}")


def hello() -> ev.Hello:
    return ev.Hello(0, 1, *ev.hello_fields("sim", "Ascend910B1", 1))


def start_publisher(runtime_dir: Path, **options: Any) -> Publisher:
    """A bus publisher in this process, registered as the agent of this pid."""
    publisher = Publisher(
        str(runtime_dir / "agent.sock"), snapshot=lambda: [hello()], **options
    ).start()
    registry.register(publisher.address)
    return publisher


def answering_agent(runtime_dir: Path, seen: list[ev.Event], message: str = "ok") -> Publisher:
    """:func:`start_publisher` that records each command in ``seen`` and answers it."""

    def on_command(event: ev.Event) -> None:
        seen.append(event)
        publisher.reply(event.request_id, 0, message)

    publisher = start_publisher(runtime_dir, on_command=on_command)
    return publisher


def unreachable(case: str, url: str, tmp_path: Path) -> tuple[str, Credentials, str]:
    """(URL, credentials, words of the reason) that fail to connect to the
    server at ``url`` as ``case`` (one of :data:`UNREACHABLE`) says."""
    if case == "no server":
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            return (
                f"nats://127.0.0.1:{probe.getsockname()[1]}",
                Credentials(),
                "connect call failed",
            )
    if case == "wrong token":
        return url, Credentials(token="wrong"), "authorization"
    cert = tmp_path / "not-the-ca.pem"
    cert.write_text("not a certificate")
    return (
        url.replace("nats://", "tls://"),
        Credentials(tls_ca=str(cert)),
        "cannot use the tls files",
    )


def end_jobs(jobs: list[tuple[subprocess.Popen[Any], Any]]) -> None:
    """Wait for each (process, its open log) to end (killed after 20 s), close the log."""
    for proc, log in jobs:
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
