"""Values that mean "not known" are null in every JSON the state and events give,
never a -1 or 0 a consumer would read as a figure (`attach --once --json`, `events --json`)."""

from __future__ import annotations

import json
from typing import Any

from aclmon import events as ev
from aclmon.acl_constants import ACL_ERROR_RT_AICORE_EXCEPTION as AICORE
from aclmon.bus.recording import RecordingWriter
from aclmon.cli import main
from aclmon.store import Store


def _numbers(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """Every (path, number) in a JSON value."""
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _numbers(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [x for i, v in enumerate(value) for x in _numbers(v, f"{path}[{i}]")]
    return [(path, value)] if isinstance(value, (int, float)) else []


def _job_with_unknowns() -> list:
    """A 910A-like job launched without rank variables: every sentinel the wire carries."""
    return [
        ev.Hello(1, 1, ev.SCHEMA_VERSION, "1", 42, "h", ("job.py",), "real", "Ascend910A", 1),
        ev.DeviceSample(2, 2, 0, 37, -1, -1, 1 << 30, 32 << 30, "OK", None, None),
        ev.ContextCreated(3, 3, 0, 0xC0, False),
        ev.StreamCreated(4, 4, 0, 0xC0, 0xB0, 7, 0, 0),
        ev.StreamSyncBegin(5, 5, ev.DEVICE_SYNC, 1),
        ev.StreamSynchronized(6, 6, ev.DEVICE_SYNC, 10, 0, -1),
        ev.AclException(7, 7, 0, 7, 11, 1, AICORE, "mm1", "MatMul", (), ()),  # no model known
        ev.CallFailed(8, 8, "rt.malloc", 207001, "", 1, -1),
        ev.LogLine(9, 9, "warning", "aclmon's own line"),
        ev.OpTiming(10, 10, 99, "mm1", "MatMul", 0, 5, 5),  # schema 4: no device, model unseen
        ev.Goodbye(11, 11, 0, False, "agent stopped"),
    ]


def test_once_json_shows_unknown_as_null_and_never_a_sentinel():
    store = Store()
    store.apply_many(_job_with_unknowns())
    data = json.loads(json.dumps(store.to_json()))

    target = data["target"]
    assert [target[k] for k in ("rank", "rank_size", "local_rank", "device_id")] == [None] * 4
    sample = data["devices"][0]["sample"]
    assert (sample["cube_util"], sample["vector_util"], sample["aicpu_util"]) == (37, None, None)
    (exception,) = data["exceptions"]["recent"]
    assert exception["execution"] is None and exception["model_name"] == ""
    (failure,) = data["call_failures"]["recent"]
    assert failure["stream"] is None
    (op,) = data["ops"]
    assert op["device_id"] is None
    assert data["goodbye"]["exit_status"] is None and data["goodbye"]["status_known"] is False
    negative = [(path, n) for path, n in _numbers(data) if n < 0]
    assert negative == []


def test_known_values_stay_as_they_are():
    hello = ev.Hello(1, 1, 4, "1", 42, "h", (), "sim", "s", 1, "job", 0, 8, 0, 3)
    assert [ev.to_json(hello)[k] for k in ("rank", "rank_size", "local_rank", "device_id")] == [
        0, 8, 0, 3,
    ]  # fmt: skip
    goodbye = ev.Goodbye(1, 1, 0, True, "exit")  # a clean exit: 0 is the status
    assert ev.to_json(goodbye)["exit_status"] == 0
    synced = ev.to_json(ev.StreamSynchronized(1, 1, 0xB0, 10, 0, 500))
    assert (synced["stream"], synced["timeout_ms"]) == (0xB0, 500)
    log = ev.to_json(ev.LogLine(1, 1, "error", "x", "GE", 77, "python", 123))
    assert (log["pid"], log["logged_ns"]) == (77, 123)
    exception = ev.AclException(1, 1, 0, 7, 11, 1, AICORE, "mm1", "", (), (), "m", 25)
    assert ev.to_json(exception)["execution"] == 25


def test_events_json_of_a_recording_prints_null_for_unknown(tmp_path, capsys):
    path = tmp_path / "rec.aclmon"
    with RecordingWriter(str(path)) as writer:
        writer.write_many(_job_with_unknowns())
    assert main(["events", "--json", str(path)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {line["kind"] for line in lines} >= {"hello", "device_sample", "goodbye"}
    assert [(path, n) for line in lines for path, n in _numbers(line) if n < 0] == []
