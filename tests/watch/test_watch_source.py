"""aclmon watch PID: a process without the agent, its plog files in CANN's layouts,
its dumps, its end, the host's view of its chips, and the command's answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_watch_plog_events import plog_text

from aclmon import events as ev
from aclmon.errors import AclmonError
from aclmon.events.host import DeviceReading, HostSnapshot, ProcessReading
from aclmon.sim.dumpfile import encode_dump
from aclmon.sources.watch import DevicesFromHost, WatchSource, device_samples, find_target
from aclmon.store import Store

SLEEPER = "import sys, time; print('ready', flush=True); time.sleep(120)"


@pytest.fixture
def start_process(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Starts a process that runs no agent (and no acl): the job whose files we write."""
    started: list[subprocess.Popen[str]] = []

    def start(env: dict[str, str], cwd: Path | None = None, *argv: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-c", SLEEPER, *argv], env=env, cwd=cwd or tmp_path,
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        started.append(process)
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        return process

    yield start
    for process in started:
        process.kill()
        process.wait()


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_", "NPU_"))}
    return {**env, **extra}


def collect(source: WatchSource, until: Callable[[Store], bool], timeout: float = 20.0) -> Store:
    store = Store()
    source.start()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            store.apply_many(source.poll(10_000))
            if until(store):
                return store
            time.sleep(0.05)
    finally:
        source.close()
    raise AssertionError(f"not seen in {timeout} s: {store.to_json()['counters']}")


def write_log(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_plog_files_in_the_newer_layout_under_home(
    tmp_path: Path, start_process: Callable[..., subprocess.Popen[str]]
) -> None:
    home = tmp_path / "home"
    job = start_process(clean_env(HOME=str(home)))
    log = home / "ascend" / "log"
    # debug/ and run/ trees of CANN 7+, and the device's log sent back for the process
    write_log(log / "debug" / "plog" / f"plog-{job.pid}_20251215113010420.log", plog_text())
    write_log(
        log / "run" / "plog" / f"plog-{job.pid}_20251215113010421.log",
        "[WARNING] GE(1,python3):2025-12-15-11:30:11.000.000 [graph.cc:9]1 Build: slow build\n",
    )
    write_log(log / "debug" / "plog" / "plog-1_20251215113010420.log", plog_text())  # another pid
    store = collect(WatchSource(find_target(job.pid)), lambda s: s.state.exceptions_total >= 1)
    data = store.to_json()
    (exception,) = data["exceptions"]["recent"]
    assert (exception["op_name"], exception["op_type"]) == ("dequant_nf4", "DequantizeNf4")
    assert exception["error_code"] == 507035 and exception["task_id"] == 31025
    assert exception["triage"]["cause"]  # triaged from the device lines, offline
    assert data["target"]["pid"] == job.pid and data["target"]["runtime"] == "no agent"
    assert data["call_failures"]["total"] == 1


def test_a_log_written_after_the_watch_started_and_the_process_end(
    tmp_path: Path, start_process: Callable[..., subprocess.Popen[str]]
) -> None:
    logs = tmp_path / "logs"
    job = start_process(clean_env(ASCEND_PROCESS_LOG_PATH=str(logs)))
    source = WatchSource(find_target(job.pid))
    store = Store()
    source.start()
    try:
        store.apply_many(source.poll(1000))
        # the older layout: plog/ directly under the root, written in two bursts
        path = logs / "plog" / f"plog-{job.pid}_20251215113010420.log"
        text = plog_text()
        cut = text.index("[ERROR] GE")
        write_log(path, text[:cut])
        deadline = time.monotonic() + 20
        while store.state.counters.per_kind.get("log", 0) < 2:
            assert time.monotonic() < deadline
            store.apply_many(source.poll(1000))
            time.sleep(0.05)
        with open(path, "a") as handle:
            handle.write(text[cut:])
        job.kill()
        job.wait()
        while store.state.goodbye is None:
            assert time.monotonic() < deadline
            store.apply_many(source.poll(1000))
            time.sleep(0.05)
        store.apply_many(source.poll(1000))
    finally:
        source.close()
    assert store.state.exceptions_total == 1  # the lines of its end published as it ended
    assert source.state == "ended"
    assert store.state.goodbye is not None and not store.state.goodbye.status_known


def test_dumps_named_by_the_acl_json_on_its_command_line(
    tmp_path: Path, start_process: Callable[..., subprocess.Popen[str]]
) -> None:
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "config.json").write_text(json.dumps({"dump": {"dump_path": "out"}}))
    dump = tmp_path / "job" / "out" / "20251215113010" / "0" / "net" / "1" / "0"
    dump.mkdir(parents=True)
    (dump / "Add.add_1.3.2.1765800000000000").write_bytes(encode_dump("add_1", 1, [], []))
    job = start_process(clean_env(), tmp_path / "job", "config.json")
    target = find_target(job.pid)
    assert str(tmp_path / "job" / "out") in target.dump_dirs  # relative to the job's cwd
    store = collect(WatchSource(target), lambda s: len(s.state.dumps) >= 1)
    (seen,) = store.state.dumps
    assert seen.kind == ev.OP_DUMP and seen.path.endswith("Add.add_1.3.2.1765800000000000")


def test_msprof_files_in_its_profiling_directory_as_they_appear(
    tmp_path: Path, start_process: Callable[..., subprocess.Popen[str]]
) -> None:
    import msprof_exports as fx

    profiling = tmp_path / "prof"
    profiling.mkdir()
    job = start_process(clean_env())
    source = WatchSource(find_target(job.pid, profiling=str(profiling)))
    store = Store()
    source.start()
    try:
        store.apply_many(source.poll(1000))
        assert not store.state.ops
        # msprof --export writes the session's files after the job started
        output = fx.write_session(profiling)
        deadline = time.monotonic() + 30
        while len(store.state.ops) < 5 or not store.state.tx_ranges:
            assert time.monotonic() < deadline, store.state.ops
            store.apply_many(source.poll(1000))
            time.sleep(0.05)
        # a file that changes is read again for what is new only
        summary = next(output.glob("op_summary_*.csv"))
        row = fx.OP_SUMMARY_ROWS[0].replace(
            ",11,2,resnet/conv1/Conv2D,", ",21,2,resnet/conv1/Conv2D,"
        )
        row = row.replace("1733212345678901.234", "1733212345689901.234")
        summary.write_text(fx.op_summary_text() + row + "\n")
        while store.state.op_timings_total < 6:
            assert time.monotonic() < deadline
            store.apply_many(source.poll(1000))
            time.sleep(0.05)
        time.sleep(0.3)
        store.apply_many(source.poll(1000))
    finally:
        source.close()
    assert store.state.op_timings_total == 6  # 5 tasks, then the one new row
    conv = next(o for o in store.state.ops.values() if o.op_name == "resnet/conv1/Conv2D")
    assert conv.count == 2 and conv.op_type == "Conv2D" and conv.device_id == 0
    assert store.state.tx_ranges == 1 and store.state.tx_marks == 1
    said = [line.text for line in store.state.logs if "without a start" in line.text]
    assert len(said) == 1  # said once, though the file was read twice


def test_a_pid_that_does_not_exist_or_is_not_ours_is_one_clear_message(
    start_process: Callable[..., subprocess.Popen[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    with pytest.raises(AclmonError, match=f"no process {gone.pid}"):
        find_target(gone.pid)
    with pytest.raises(AclmonError, match="not a process id"):
        find_target(0)
    job = start_process(clean_env())
    monkeypatch.setattr(os, "getuid", lambda: os.geteuid() + 4321)
    with pytest.raises(AclmonError, match="not to you"):
        find_target(job.pid)


def test_the_command_refuses_a_missing_pid_in_one_line() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    result = subprocess.run(
        [sys.executable, "-m", "aclmon", "watch", str(gone.pid), "--once", "--json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"aclmon watch: no process {gone.pid} (it has ended, or never ran)"
    )
    assert result.stdout == ""


def test_the_host_readings_of_its_chips_are_its_device_samples() -> None:
    chips = (
        DeviceReading(0, 0, logic_id=0, health="OK", aicore_pct=40, hbm_used_mb=1024,
                      hbm_total_mb=65536, temp_c=40, power_w=90.5),
        DeviceReading(1, 0, logic_id=1, health="Alarm", memory_used_mb=100, memory_total_mb=200),
        DeviceReading(2, 0, logic_id=2),
    )  # fmt: skip
    processes = (ProcessReading(0, 0, 77, "python", 500), ProcessReading(1, 0, 77, "python", 1))
    snapshot = HostSnapshot("sim", "ok", devices=chips, processes=processes)
    sample = ev.HostNpuSample(0, 5, "host", snapshot.to_plain(), ())
    first, second = device_samples(sample, 77)
    assert (first.device_id, first.cube_util, first.vector_util) == (0, 40, -1)
    assert (first.hbm_used, first.hbm_total) == (1024 << 20, 65536 << 20)
    assert (first.temperature_c, first.power_w, first.health) == (40.0, 90.5, "OK")
    assert (second.device_id, second.hbm_used, second.health) == (1, 100 << 20, "Alarm")
    assert second.temperature_c is None and second.power_w is None  # unknown, not 0
    assert device_samples(sample, 78) == []
    broken = ev.HostNpuSample(0, 5, "host", {"devices": "no"}, ())
    assert device_samples(broken, 77) == []

    class Host:
        readonly = True
        description = title = ""
        recording = False
        state = "connected"

        def poll(self, n: int) -> list[Any]:
            return [sample]

    wrapped = DevicesFromHost(Host(), 77)  # type: ignore[arg-type]
    assert [type(e) for e in wrapped.poll(10)] == [
        ev.HostNpuSample,
        ev.DeviceSample,
        ev.DeviceSample,
    ]


def test_a_sim_job_started_without_the_agent(tmp_path: Path) -> None:
    """A pyACL job on the sim that never heard of aclmon's agent (no `aclmon run`), with
    injected faults: `aclmon watch PID --once --json` shows its exceptions with their
    operators, its failed calls, its dumps and its overflow."""
    from agenthelpers import SIM_JOB  # type: ignore[import-not-found]

    model = Path(__file__).parents[2] / "aclmon" / "sim" / "models" / "resnet_tiny.json"
    (tmp_path / "acl.json").write_text(
        json.dumps({"dump": {"dump_path": "dumps", "dump_mode": "output", "dump_debug": "on"}})
    )
    faults = [
        {"kind": "aicore_exception", "op_type": "MatMul", "nth": 2, "times": 1},
        {"kind": "overflow", "op_type": "Add", "nth": 3, "times": 1},
    ]
    env = clean_env(
        ACLMON_SIM_CONFIG=json.dumps({"time_scale": 0}),
        ACLMON_SIM_FAULTS=json.dumps(faults),
        ASCEND_PROCESS_LOG_PATH=str(tmp_path / "logs"),
        NPU_COLLECT_PATH=str(tmp_path / "collect"),
    )
    stop = tmp_path / "stop"
    runner = "import aclmon.sim, sys; aclmon.sim.run_script(sys.argv[1], sys.argv[2:])"
    job = subprocess.Popen(
        [sys.executable, "-c", runner, SIM_JOB, str(model), "acl.json", "--iterations", "5",
         "--idle-until", str(stop), "--max-seconds", "120"],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert job.stdout is not None and job.stdout.readline().startswith("iterations 5")
        result = subprocess.run(
            [sys.executable, "-m", "aclmon", "watch", str(job.pid), "--once", "--json"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        stop.touch()
        job.wait(60)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    (exception,) = data["exceptions"]["recent"]
    assert (exception["op_name"], exception["op_type"]) == ("fc", "MatMul")
    assert exception["error_code"] == 507015
    assert exception["triage"]["dump_file"].startswith(str(tmp_path / "collect"))
    (failure,) = data["call_failures"]["recent"]
    assert (failure["api"], failure["ret"]) == ("rt.synchronize_stream", 507015)
    kinds = sorted(d["file_kind"] for d in data["dumps"]["recent"])
    assert kinds == ["exception-dump", "op-dump", "overflow"]
    assert data["target"] == {**data["target"], "pid": job.pid, "runtime": "no agent"}
