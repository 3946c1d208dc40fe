"""The first anomaly of a fleet, on the server's clock: a fleet store fed the events
four ranks would send, their hosts' clocks skewed by up to ±5 ms and their offsets
measured by their relays (with the error a measurement has)."""

from __future__ import annotations

import random

import pytest

from aclmon import events as ev
from aclmon.store.fleet import FleetStore

T0 = 1_800_000_000_000_000_000
MS = 1_000_000


def hello(rank: int) -> ev.Hello:
    fields = ev.hello_fields("sim", "Ascend910B1", 1)
    return ev.Hello(1, T0, *fields)._replace(pid=100 + rank, host=f"node{rank}", rank=rank)


def overflow_file(ns: int, op: str) -> ev.DumpFileSeen:
    summary = {"kind": "overflow", "timestamp": ns // 1000, "op_type": "MatMul", "op_name": op}
    return ev.DumpFileSeen(3, ns + 800 * MS, f"/dump/Opdebug.Node_OpDebug.9.2.{ns // 1000}",
                           "overflow", 4096, summary)  # fmt: skip


@pytest.mark.parametrize("seed", range(20))
def test_the_rank_that_went_bad_first_is_named_whatever_the_skews(seed):
    rng = random.Random(seed)
    first = rng.randrange(4)
    gap = rng.uniform(2, 8) * MS  # the others follow this much later (true time)
    fleet = FleetStore()
    for rank in range(4):
        skew = int(rng.uniform(-5, 5) * MS)
        if rank == first:
            skew = 5 * MS  # the worst case: the first rank's clock reads late
        true_ns = T0 + 5 * 100 * MS + (0 if rank == first else int(gap))
        measured = -skew + int(rng.uniform(-0.5, 0.5) * MS)  # the relay's error
        fleet.apply(
            (f"node{rank}", 100 + rank),
            [
                hello(rank),
                ev.ClockOffset(0, T0, f"node{rank}", measured, MS // 2),
                ev.DeviceSample(2, T0, 0, 0, 0, 0, 0, 0, "OK", None, None),
                overflow_file(true_ns + skew, "mm1"),
            ],
        )
    anomaly = fleet.first_anomaly()
    assert anomaly is not None
    assert (anomaly.rank, anomaly.kind, anomaly.op_name, anomaly.device_id) == (
        first, "overflow", "mm1", 0,
    )  # fmt: skip
    data = fleet.to_json()
    assert data["first_anomaly"]["operator"] == "MatMul mm1"
    assert data["anomaly_order"][0]["rank"] == first
    assert len(data["clock_offsets"]) == 4


def test_exceptions_and_their_triage_count_and_no_offset_compares_host_times():
    fleet = FleetStore()
    exception = ev.AclException(4, T0 + 10 * MS, 0, 2, 7, 1, 507015, "conv1", "Conv2D", (), ())
    triage = ev.Triage(5, T0 + 11 * MS, 0, 2, 7, exception.ts_ns,
                       {"verdict": "invalid input data", "nan_inf_inputs": [{"index": 0}]})  # fmt: skip
    fleet.apply(("node0", 100), [hello(0), exception, triage])
    fleet.apply(("node1", 101), [hello(1)])
    anomaly = fleet.first_anomaly()
    assert anomaly is not None and anomaly.kind == "nan_inf" and anomaly.offset_ns is None
    assert anomaly.detail == "invalid input data"
    assert fleet.to_json()["first_anomaly"]["clock_offset_ns"] is None
    assert FleetStore().to_json()["first_anomaly"] is None


def test_each_source_is_looked_at_again_only_when_its_store_changed():
    fleet = FleetStore()
    late = ev.AclException(4, T0 + 30 * MS, 0, 2, 7, 1, 507015, "conv1", "Conv2D", (), ())
    fleet.apply(("node0", 100), [hello(0), late])
    fleet.apply(("node1", 101), [hello(1)])
    first = fleet.first_anomaly()
    assert first is not None and first.item is late
    assert fleet.first_anomaly() is first  # nothing changed: the same one, not found again
    early = overflow_file(T0 + 10 * MS, "mm1")
    fleet.apply(("node1", 101), [early])
    now = fleet.first_anomaly()
    assert now is not None and (now.rank, now.kind, now.item) == (1, "overflow", early)
    assert [a.rank for a in fleet.anomaly_order()] == [1, 0]
