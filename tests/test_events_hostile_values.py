"""Values that pass validation can be shown and written as JSON; the ones that
cannot (NaN where a number is needed, absurd nesting) do not pass."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest

from aclmon import events as ev
from aclmon.bus.recording import RecordingWriter
from aclmon.events.codec import MAX_NESTING

REPO = Path(__file__).parents[1]


def _nested(depth: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"inner": value}
    return value


def _decode_both_ways(array: tuple) -> tuple[ev.Event | None, ev.Event | None, int]:
    decoder = ev.EventDecoder()
    many = decoder.decode_many([array])
    single = decoder.decode(array)
    return (many[0] if many else None), single, decoder.malformed


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_neutralised_or_refused(bad: float) -> None:
    host = (ev.HostSample.KIND, 1, 2)
    many, single, malformed = _decode_both_ways((*host, bad, 1024, 3))
    assert many is None and single is None and malformed == 2  # cpu_percent must be a number
    device = (ev.DeviceSample.KIND, 1, 2, 0, 10, 20, 30, 1, 2, "OK")
    many, single, malformed = _decode_both_ways((*device, bad, 1.5))
    assert malformed == 0
    for event in (many, single):
        assert event is not None
        assert event.temperature_c is None  # "not known", like a device without a sensor
        assert event.power_w == 1.5


def test_summaries_nested_too_deep_are_refused_and_real_ones_pass() -> None:
    kind = ev.DumpFileSeen.KIND
    sample = _a_dump_file_seen()
    deep = sample._replace(summary=_nested(MAX_NESTING + 1))
    fine = sample._replace(summary=_nested(MAX_NESTING))
    for event, passes in ((deep, False), (fine, True)):
        array = ev.unpack_payload(ev.encode(event))
        assert array[0] == kind
        many, single, malformed = _decode_both_ways(array)
        assert (many is not None, single is not None) == (passes, passes)
        assert malformed == (0 if passes else 2)


def _a_dump_file_seen() -> ev.DumpFileSeen:
    values = []
    for name in ev.DumpFileSeen._fields:
        if name in ("seq", "ts_ns"):
            values.append(1)
        elif name == "summary":
            values.append({})
        else:
            annotation = ev.DumpFileSeen.__annotations__[name]
            values.append(0 if "int" in str(annotation) else "x")
    return ev.DumpFileSeen(*values)


def test_events_json_survives_a_deeply_nested_summary(tmp_path: Path) -> None:
    path = tmp_path / "deep.aclmon"
    deep = _a_dump_file_seen()._replace(summary=_nested(400))
    with RecordingWriter(path, {"source": "test"}) as writer:
        writer.write(ev.Clock().make(ev.LogLine, "info", "before"))
        writer.write_payload(msgpack.packb((ev.DumpFileSeen.KIND, 2, *deep[1:])))
        writer.write(ev.LogLine(3, 3, "info", "after"))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-m", "aclmon", "events", str(path), "--json"],
                            env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert "Traceback" not in result.stderr and "RecursionError" not in result.stderr
    texts = [json.loads(line).get("text") for line in result.stdout.splitlines()]
    assert "before" in texts and "after" in texts


@pytest.mark.parametrize(
    ("metrics", "passes"),
    [
        ({}, True),
        ({"aic_mac_ratio": 0.5, "cycles": 12, "unit": "us", "ok": True, "x": None}, True),
        ({"raw": b"\x00\x01", "ratio": 0.25}, True),
        ({"ratio": 0.5, "nested": _nested(MAX_NESTING - 1)}, True),
        ({"ratio": 0.5, "nested": _nested(MAX_NESTING)}, False),
        ({"ratio": 0.5, "deep": (_nested(MAX_NESTING),)}, False),
    ],
)
def test_a_map_of_scalars_passes_at_once_and_one_with_containers_is_walked(
    metrics: dict, passes: bool
) -> None:
    timing = ev.OpTiming(1, 2, 0, "conv1", "Conv2D", 10, 20, 10, 0, metrics, 3, 4, "AI_CORE")
    array = ev.unpack_payload(ev.encode(timing))
    many, single, malformed = _decode_both_ways(array)
    assert (many is not None, single is not None) == (passes, passes)
    assert malformed == (0 if passes else 2)
    if passes:
        assert many == single == timing
