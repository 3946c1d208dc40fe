"""End to end: the real agent (``aclmon run --sim``) in a subprocess, the app
attached through the bus, a profiling toggle that reaches the agent and its reply."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tui_helpers import SIZE, static_text, wait_for

from aclmon import cli
from aclmon.sources.live import LiveSource
from aclmon.tui.app import AclmonApp

JOB = """
import os, sys, time
import acl

stop = sys.argv[1]
assert acl.init() == 0
assert acl.rt.set_device(0) == 0
context, ret = acl.rt.create_context(0)
stream, ret = acl.rt.create_stream()
deadline = time.monotonic() + 60
while not os.path.exists(stop) and time.monotonic() < deadline:
    acl.rt.synchronize_stream(stream)
    time.sleep(0.02)
acl.rt.destroy_stream(stream)
acl.rt.destroy_context(context)
acl.rt.reset_device(0)
acl.finalize()
"""


@pytest.fixture
def sim_job(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(JOB)
    stop = tmp_path / "stop"
    sock = Path(f"/tmp/aclmon-test-{os.getpid()}-{time.monotonic_ns() % 10**9}.sock")
    with open(tmp_path / "job.log", "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "aclmon", "run", "--sim", "--interval", "0.1",
             "--listen", str(sock), str(script), str(stop)],
            cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not sock.exists():
            assert process.poll() is None, (tmp_path / "job.log").read_text()
            assert time.monotonic() < deadline, "the agent did not listen"
            time.sleep(0.05)
        yield str(sock)
    finally:
        stop.touch()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        with contextlib.suppress(FileNotFoundError):
            sock.unlink()


async def test_profiling_toggle_reaches_the_agent_and_the_reply_is_shown(sim_job):
    app = AclmonApp(LiveSource(sim_job), interval=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: 0 in app.store.state.devices, timeout=15)
        assert "connected" in static_text(app, "#header")
        assert "sim" in static_text(app, "#header")
        await wait_for(pilot, lambda: "stream" in static_text(app, "#device-tree-0"), timeout=10)
        await pilot.press("3", "down", "down", "down", "space", "enter")  # check ACL_PROF_AICPU
        await wait_for(pilot, lambda: app.store.state.last_reply is not None, timeout=10)
        reply = static_text(app, "#prof-reply")
        assert "last reply" in reply
        assert app.store.state.last_reply.code == 0, reply
        await pilot.press("p")  # start profiling with that configuration
        await wait_for(
            pilot,
            lambda: app.store.state.profiling is not None and app.store.state.profiling.running,
            timeout=10,
        )
        await wait_for(
            pilot, lambda: "● profiling to files" in static_text(app, "#prof-state"), timeout=5
        )
        await pilot.press("p")
        await wait_for(pilot, lambda: not app.store.state.profiling.running, timeout=10)
        # replies come both in the stream and from send_command: no false gaps
        assert app.store.state.counters.gaps == 0


def test_attach_once_json_prints_the_store(sim_job, capsys):
    assert cli.main(["attach", sim_job, "--once", "--json", "--wait", "0.5"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["target"]["runtime"] == "sim"
    assert data["devices"][0]["device_id"] == 0
    assert data["devices"][0]["contexts"], data["devices"]
    assert data["counters"]["events"] > 0


def test_attach_once_text_summary(sim_job, capsys):
    assert cli.main(["attach", sim_job, "--once", "--wait", "0.3"]) == 0
    out = capsys.readouterr().out
    assert "device 0:" in out and "runtime sim" in out


def test_attach_to_nothing_is_one_clear_error(tmp_path, capsys):
    missing = tmp_path / "none.sock"
    code = cli.main(["attach", str(missing), "--once", "--json", "--wait", "0.1"])
    assert code == 1
    err = capsys.readouterr().err
    assert "aclmon attach:" in err and "Traceback" not in err


def test_attach_once_with_dump_dir_lists_existing_files(sim_job, tmp_path, capsys):
    from tui_helpers import write_overflow_pair

    write_overflow_pair(tmp_path)
    code = cli.main(
        ["attach", sim_job, "--once", "--json", "--wait", "0.2", "--dump-dir", str(tmp_path)]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    kinds = sorted(d["file_kind"] for d in data["dumps"]["recent"])
    assert kinds == ["op-dump", "overflow"]


async def test_header_follows_disconnect_and_reconnect(tmp_path):
    from aclmon import events as ev
    from aclmon.bus import Publisher

    address = str(tmp_path / "p.sock")
    hello = ev.Hello(
        0, 1, ev.SCHEMA_VERSION, "0.1.0", 777, "node-b", ("job.py",), "sim", "Ascend910B1", 1
    )
    publisher = Publisher(address, snapshot=lambda: [hello]).start()
    app = AclmonApp(LiveSource(address), interval=0.05)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: "connected" in static_text(app, "#header"), timeout=10)
            await wait_for(pilot, lambda: "node-b:777" in static_text(app, "#header"), timeout=10)
            publisher.close()
            await wait_for(pilot, lambda: "reconnecting" in static_text(app, "#header"), timeout=10)
            publisher = Publisher(address, snapshot=lambda: [hello]).start()
            await wait_for(pilot, lambda: "● connected" in static_text(app, "#header"), timeout=15)
    finally:
        publisher.close()
