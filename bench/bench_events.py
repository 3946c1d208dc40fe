"""Realistic event instances shared by the bus benchmarks (not a benchmark)."""

from __future__ import annotations

import random
import time
from typing import Any

from aclmon import events as ev

#: kinds the agent sends at high rates, a few fields each
SMALL_KINDS = (
    ev.DeviceSample,
    ev.HostSample,
    ev.StreamSyncBegin,
    ev.StreamSynchronized,
    ev.ExecuteBegin,
    ev.ExecuteEnd,
    ev.OpTiming,
)


def _tensor(rng: random.Random, name: str) -> ev.TensorDesc:
    dims = (
        32,
        rng.choice((3, 64, 128, 256)),
        rng.choice((56, 112, 224)),
        rng.choice((56, 112, 224)),
    )
    size = 2
    for d in dims:
        size *= d
    return ev.TensorDesc(
        1, rng.choice((0, 2, 29)), dims, 0x12C000000 + rng.randrange(1 << 30), size, name
    )


def make_event(cls: type, seq: int, rng: random.Random) -> Any:
    """One event of ``cls`` with field values like the agent's."""
    ts = time.time_ns()
    stream = 0xFFFF8000_1234_0000 + rng.randrange(64) * 0x100
    model = rng.randrange(1, 8)
    if cls is ev.DeviceSample:
        fields: tuple[Any, ...] = (
            rng.randrange(8),
            rng.randrange(101),
            rng.randrange(101),
            -1,
            rng.randrange(1 << 34),
            64 * (1 << 30),
            "OK",
            40.0 + rng.random() * 30,
            250.5,
        )
    elif cls is ev.HostSample:
        fields = (rng.random() * 800, rng.randrange(1 << 33), rng.randrange(10, 200))
    elif cls is ev.StreamSyncBegin:
        fields = (stream, 140_000_000_000_000 + rng.randrange(1 << 16))
    elif cls is ev.StreamSynchronized:
        fields = (stream, rng.randrange(10**7), 0, -1)
    elif cls is ev.ExecuteBegin:
        fields = (model, stream, rng.randrange(8))
    elif cls is ev.ExecuteEnd:
        fields = (model, stream, rng.randrange(10**8), 0)
    elif cls is ev.OpTiming:
        start = rng.randrange(1 << 40)
        fields = (
            model,
            f"resnet50/layer{rng.randrange(4)}/conv{rng.randrange(30)}/Conv2D",
            "Conv2D",
            start,
            start + 850,
            850,
            rng.randrange(8),
            {},  # live timings from model subscription carry no metrics
            rng.randrange(16),  # stream and task as msprof's exported files name them
            rng.randrange(1 << 16),
            "AI_CORE",
        )
    elif cls is ev.AclException:
        fields = (
            rng.randrange(8),
            rng.randrange(64),
            rng.randrange(1 << 16),
            140_000_000_000_000,
            507015,
            "resnet50/layer3/conv12/Conv2D",
            "Conv2D",
            (_tensor(rng, "x"), _tensor(rng, "filter")),
            (_tensor(rng, "y"),),
            "resnet50_bs32",
            rng.randrange(1, 10_000),
            "train.py:212 forward_step",
        )
    elif cls is ev.Hello:
        fields = ev.hello_fields("sim", "Ascend910B1", 8)
    elif cls in (ev.DeviceSet, ev.DeviceReset):
        fields = (rng.randrange(8), 0)
    elif cls is ev.ContextCreated:
        fields = (0, 0xFFFF9000_0000_0000 + rng.randrange(1 << 20), True)
    elif cls is ev.ContextDestroyed:
        fields = (0xFFFF9000_0000_0000 + rng.randrange(1 << 20), 0)
    elif cls is ev.ContextCurrent:
        fields = (0xFFFF9000_0000_0000 + rng.randrange(1 << 20), 140_000_000_000_000)
    elif cls is ev.StreamCreated:
        fields = (0, 0xFFFF9000_0000_0000, stream, rng.randrange(64), 0, 0)
    elif cls is ev.StreamDestroyed:
        fields = (stream, 0)
    elif cls is ev.ModelLoaded:
        fields = (model, 0, "/models/resnet50_bs32.om", 312)
    elif cls is ev.ModelUnloaded:
        fields = (model, 0)
    elif cls is ev.ProfilingState:
        fields = (True, True, 0x7D, 1, (0, 1), "/tmp/prof", "aclmon", True, 0x7D, 1, (0, 1))
    elif cls is ev.TxMark:
        fields = ("epoch 3 step 120", 140_213_408_118_592)
    elif cls is ev.TxRange:
        fields = ("forward", ts - 5_000_000, ts, 140_213_408_118_592, 140_213_399_725_888)
    elif cls is ev.DumpFileSeen:
        fields = (
            "/var/dump/20260101/0/resnet50/1/0/Conv2D.resnet50_layer3_conv12_Conv2D.5.1005.1767225600000000",
            "op-dump",
            25_690_112,
            {
                "op_type": "Conv2D",
                "op_name": "resnet50/layer3/conv12/Conv2D",
                "inputs": 2,
                "outputs": 1,
            },
        )
    elif cls is ev.LogLine:
        fields = (
            "error",
            "[stream.cc:1204] 4171 SynchronizeStream: Stream synchronize failed, "
            "stream_id=5, retCode=0x7150050",
            "RUNTIME",
            4171,
            "python3",
            ts - 2_000_000,
            "stream.cc:1204",
            "/root/ascend/log/debug/plog/plog-4171_20260101000000000.log",
        )
    elif cls is ev.CallFailed:
        fields = (
            "rt.synchronize_stream",
            507011,
            "EZ9999: Inner Error!\nEZ9999: The error from device(chipId:0, dieId:0), "
            "serial number is 3, there is an aivec error exception, core id is 0",
            140_000_000_000_000 + rng.randrange(1 << 16),
            stream,
        )
    elif cls is ev.History:
        fields = (
            ts - 3_600_000_000_000,
            tuple(v for m in range(1, 5) for v in (m, rng.randrange(10**5), rng.randrange(3))),
            tuple(
                v
                for s in range(8)
                for v in (0xFFFF8000_1234_0000 + s * 0x100, rng.randrange(10**5), 0, 0, 0)
            ),
            (0, 5, 4),
            4,
            1_024,
            12,
            (0, 7, 4, 2),
            rng.randrange(1, 10**7),
        )
    elif cls is ev.Goodbye:
        fields = (0, True, "exit")
    elif cls is ev.Triage:
        fields = (
            rng.randrange(8),
            rng.randrange(64),
            rng.randrange(1 << 16),
            ts - 800_000_000,
            {
                "verdict": "out-of-bounds access: Conv2D input[0] (x) runs 256 bytes past the"
                " end of its 802816-byte allocation (rt.malloc at train.py:88 load_batch)",
                "cause": "out_of_bounds",
                "bits": (23,),
                "error_bits": ("bit 23 MTE_BIU_RDWR_RESP: the MTE touched an invalid GM address",),
                "address_findings": (
                    {
                        "role": "input",
                        "index": 0,
                        "status": "out_of_range",
                        "overrun": 256,
                        "offending": True,
                    },
                ),
                "nan_inf_inputs": (),
                "repro": "/job/extra-info/aclmon-repro/Conv2D_conv12_5/repro.py",
            },
        )
    elif cls is ev.ClockOffset:
        fields = ("node07", -4_812_331, 181_000)
    elif cls is ev.Drops:
        fields = (1024, "publisher queue", "queue full")
    elif cls is ev.SetProfilingConfig:
        fields = (rng.getrandbits(63), 0x7D, 1, (0, 1), 100)
    elif cls in (ev.StartProfiling, ev.StopProfiling, ev.RequestSnapshot, ev.Ping):
        fields = (rng.getrandbits(63),)
    elif cls is ev.Reply:
        fields = (rng.getrandbits(63), 0, "ok", {"flags": 0x7D})
    elif cls is ev.HostNpuSample:
        fields = ("node-a", _host_snapshot(rng), (4242,))
    else:
        raise AssertionError(f"no sample for {cls.__name__}: add one to bench/bench_events.py")
    if len(fields) != len(cls._fields) - 2:
        # a field left at its default would make the figures of newer fields silently wrong
        missing = cls._fields[2 + len(fields) :]
        raise AssertionError(f"the sample for {cls.__name__} does not set {', '.join(missing)}")
    return cls(seq, ts, *fields)


def _host_snapshot(rng: random.Random) -> dict[str, Any]:
    """One reading of an eight-chip Atlas A2 host with a job on four chips (the plain
    dict a HostNpuSample carries; sequences as tuples, as a subscriber decodes them)."""
    from aclmon.events.host import DeviceReading, HostSnapshot, ProcessReading

    devices = tuple(
        DeviceReading(n, 0, n, n, "910B3", "OK", 90.0 + rng.random() * 200, 40 + n,
                      rng.randrange(101), 0, rng.randrange(50), 3, None, 12, 30_000 + n,
                      65_536, None, None, 0, 0, f"0000:{0xC1 + n:02X}:00.0", 1_800, 1_800,
                      0, 0, ())
        for n in range(8)
    )  # fmt: skip
    processes = tuple(
        ProcessReading(n, 0, 4242, "python", 26_000, None, "ai", "python train.py")
        for n in range(4)
    )
    snapshot = HostSnapshot("dcmi", "ok", None, devices, processes, "/usr/local/dcmi/libdcmi.so",
                            1_760_000_000 * 10**9, 1.9)  # fmt: skip
    return ev.unpack_payload(ev.encode(ev.HostNpuSample(0, 0, "", snapshot.to_plain(), ())))[4]  # type: ignore[no-any-return]


def realistic_events() -> list[Any]:
    """One event of every kind."""
    rng = random.Random(7)
    return [make_event(cls, i + 1, rng) for i, cls in enumerate(ev.KINDS.values())]


#: (kind, weight): what a busy inference job's agent sends
MIX = (
    (ev.ExecuteBegin, 20),
    (ev.ExecuteEnd, 20),
    (ev.StreamSyncBegin, 15),
    (ev.StreamSynchronized, 15),
    (ev.OpTiming, 20),
    (ev.DeviceSample, 4),
    (ev.HostSample, 2),
    (ev.LogLine, 2),
    (ev.TxRange, 1),
    (ev.AclException, 1),
)


def event_mix(count: int, kinds: tuple[tuple[type, int], ...] = MIX, seed: int = 1) -> list[Any]:
    rng = random.Random(seed)
    classes = [cls for cls, _ in kinds]
    weights = [w for _, w in kinds]
    return [
        make_event(cls, i + 1, rng) for i, cls in enumerate(rng.choices(classes, weights, k=count))
    ]
