"""Synthetic recordings: a deterministic mix of every kind the store folds."""

from __future__ import annotations

from pathlib import Path

from aclmon import events as ev
from aclmon.acl_constants import ACL_ERROR_RT_AICORE_EXCEPTION, ACL_FLOAT16, ACL_FORMAT_ND
from aclmon.bus.recording import RecordingWriter

T0 = 1_764_669_600_000_000_000
STEP_NS = 1_000_000  # 1 ms between events


def tensor() -> ev.TensorDesc:
    return ev.TensorDesc(ACL_FLOAT16, ACL_FORMAT_ND, (4, 8), 0x1000, 64, "x")


def session_events(count: int, *, exception_every: int = 97, overflow_every: int = 211):
    """``count`` events: setup, then executions, syncs, samples, timings,
    exceptions and dump files (every ``*_every`` events), streams recreated now and then."""
    out: list = []
    seq = 0

    def add(cls, *fields):
        nonlocal seq
        seq += 1
        out.append(cls(seq, T0 + seq * STEP_NS, *fields))

    add(ev.Hello, ev.SCHEMA_VERSION, "0.1.0", 4242, "node", ("job.py",), "sim", "Ascend910B1", 2)
    add(ev.DeviceSet, 0, 0)
    add(ev.ContextCreated, 0, 0xA0, True)
    add(ev.StreamCreated, 0, 0xA0, 0xB0, 3, 0, 0)
    add(ev.ModelLoaded, 1, 0, "resnet", 12)
    i = 0
    while len(out) < count:
        i += 1
        if i % exception_every == 0:
            add(ev.AclException, 0, 3, i, 7, ACL_ERROR_RT_AICORE_EXCEPTION, f"op{i % 13}",
                "Conv2D", (tensor(),), (tensor(),))  # fmt: skip
        elif i % overflow_every == 0:
            add(ev.DumpFileSeen, f"/d/Opdebug.Node_OpDebug.{i}.3.1", "overflow", 2099,
                {"kind": "overflow", "task_id": i, "records": []})  # fmt: skip
        elif i % 53 == 0:
            add(ev.DumpFileSeen, f"/d/Add.add{i}.{i}.3.1", "op-dump", 100, {"kind": "op-dump"})
        elif i % 31 == 0:
            add(ev.StreamDestroyed, 0xB0, 0)
            add(ev.StreamCreated, 0, 0xA0, 0xB0, 3, 0, 0)
        elif i % 7 == 0:
            add(ev.DeviceSample, i % 2, i % 100, 5, 0, i * 1024, 1 << 34, "OK", 40.0, 70.5)
        elif i % 5 == 0:
            add(ev.OpTiming, 1, f"op{i % 17}", "Conv2D", i, i + 9, 9)
        elif i % 2:
            add(ev.ExecuteBegin, 1, 0xB0, 0)
        else:
            add(ev.ExecuteEnd, 1, 0xB0, 1000 + i, 0)
    return out[:count]


def write_recording(path: Path, events, *, garbage_every: int = 0) -> Path:
    """Write ``events``; with ``garbage_every``, a malformed frame after every n-th event."""
    with RecordingWriter(path, {"source": "test"}) as writer:
        for n, event in enumerate(events, start=1):
            writer.write(event)
            if garbage_every and n % garbage_every == 0:
                writer.write_payload(b"\x93\x11\xc1")  # a kind number with junk fields
    return path
