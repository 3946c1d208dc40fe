"""HostNpuSample in the store: the newest reading, bounded per-chip histories, a
failed refresh that keeps the last good reading, and hostile snapshots refused."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon import events as ev
from aclmon.events.host import DeviceReading, HostSnapshot, ProcessReading
from aclmon.store import Store
from aclmon.store.state import HOST_HISTORY_LEN

T0 = 1_700_000_000_000_000_000


def reading(step: int, chips: int = 2, state: str = "ok") -> HostSnapshot:
    devices = tuple(
        DeviceReading(n, 0, name="910B3", power_w=None if n else 90.0 + step, temp_c=40,
                      aicore_pct=step % 100, hbm_used_mb=1000 + step, hbm_total_mb=65536)
        for n in range(chips)
    )  # fmt: skip
    processes = (ProcessReading(0, 0, 4242, "python", 1000, None, "ai", "python train.py"),)
    return HostSnapshot("dcmi", state, devices=devices, processes=processes,  # type: ignore[arg-type]
                        taken_ns=T0 + step)  # fmt: skip


def sample(snapshot: HostSnapshot | dict, host: str = "node-a", agents=(4242,)) -> ev.HostNpuSample:
    plain = snapshot.to_plain() if isinstance(snapshot, HostSnapshot) else snapshot
    return ev.HostNpuSample(0, T0, host, plain, tuple(agents))


def test_samples_fold_into_the_newest_reading_and_bounded_histories():
    store = Store()
    store.apply_many([sample(reading(step)) for step in range(HOST_HISTORY_LEN + 20)])
    npus = store.state.host_npus
    assert npus.host == "node-a" and npus.samples == HOST_HISTORY_LEN + 20
    assert npus.snapshot == reading(HOST_HISTORY_LEN + 19)
    assert npus.agent_pids == {4242}
    chip0, chip1 = npus.chips[(0, 0)], npus.chips[(1, 0)]
    assert len(chip0.aicore_pct) == HOST_HISTORY_LEN
    assert chip0.memory_used_mb[-1] == 1000 + HOST_HISTORY_LEN + 19
    assert set(chip1.power_w) == {None}  # unknown stays unknown, never 0
    assert store.state.counters.gaps == 0  # seq 0: outside the agent's sequence


def test_a_failed_refresh_keeps_the_last_good_reading_and_its_histories():
    store = Store()
    store.apply(sample(reading(1)))
    failed = HostSnapshot("npu-smi", "timeout", "no answer in 5 s", processes=None)
    store.apply(sample(failed))
    npus = store.state.host_npus
    assert npus.latest == failed and npus.snapshot == reading(1)
    assert len(npus.chips[(0, 0)].aicore_pct) == 1


def test_chips_that_are_gone_lose_their_history_and_another_host_starts_afresh():
    store = Store()
    store.apply(sample(reading(1, chips=4)))
    store.apply(sample(reading(2, chips=2)))
    assert set(store.state.host_npus.chips) == {(0, 0), (1, 0)}
    store.apply(sample(reading(3, chips=2), host="node-b"))
    npus = store.state.host_npus
    assert npus.host == "node-b" and len(npus.chips[(0, 0)].aicore_pct) == 1


def test_a_new_job_behind_the_same_address_keeps_the_machines_readings():
    store = Store()
    hello = ev.Hello(1, T0, 6, "0.1.0", 42, "node-a", ("a.py",), "sim", "Ascend910B3", 1)
    store.apply(hello)
    store.apply(sample(reading(1)))
    store.apply(hello._replace(pid=43))
    assert store.state.host_npus.snapshot == reading(1)


def test_copies_are_independent():
    store = Store()
    store.apply(sample(reading(1)))
    copy = store.snapshot()
    store.apply(sample(reading(2)))
    assert len(copy.host_npus.chips[(0, 0)].aicore_pct) == 1
    assert copy.host_npus.snapshot == reading(1)


def test_a_hostile_snapshot_is_refused_counted_and_changes_nothing():
    store = Store()
    store.apply(sample(reading(1)))
    bad = reading(2).to_plain()
    bad["devices"][0]["npu_id"] = "zero"
    store.apply(sample(bad))
    store.apply(sample({"state": "ok", "devices": [{}] * 5000}))
    npus = store.state.host_npus
    assert npus.refused == 2 and npus.snapshot == reading(1)
    assert "more than" in npus.refused_reason


def test_the_json_export_holds_the_reading_with_nulls():
    store = Store()
    assert store.to_json()["host_npus"] is None
    store.apply(sample(reading(1)))
    data = json.loads(json.dumps(store.to_json()))["host_npus"]
    assert data["host"] == "node-a" and data["state"] == "ok" and data["agent_pids"] == [4242]
    assert data["snapshot"]["devices"][1]["power_w"] is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=6)
    ),
    max_leaves=30,
)
#: the keys a device reading has (and one it does not)
DEVICE_KEYS = ["npu_id", "chip_id", "power_w", "name", "fault_codes", "temp_c", "other"]
#: dicts that look like snapshots: the real keys, any values
near_snapshots = st.fixed_dictionaries(
    {},
    optional={
        "source": st.sampled_from(["dcmi", "sim", "npu-smi", None, 3]),
        "state": st.sampled_from(["ok", "failed", "bogus", None]),
        "devices": st.lists(st.dictionaries(st.sampled_from(DEVICE_KEYS), json_values), max_size=3),
        "processes": st.none() | st.lists(st.dictionaries(st.text(max_size=8), json_values)),
        "taken_ns": json_values,
        "warnings": json_values,
    },
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(json_values, near_snapshots))
def test_any_value_is_either_a_snapshot_or_refused_with_a_reason(data):
    store = Store()
    store.apply(ev.HostNpuSample(0, T0, "h", data if isinstance(data, dict) else {"x": data}, ()))
    npus = store.state.host_npus
    assert npus.samples + npus.refused == 1
    if npus.refused:
        assert npus.refused_reason
    else:
        assert isinstance(npus.latest, HostSnapshot)
        assert HostSnapshot.from_plain(npus.latest.to_plain()) == npus.latest


def test_a_chip_without_hbm_keeps_the_history_of_its_ddr():
    ddr = DeviceReading(1, 0, name="310P3", memory_used_mb=5000, memory_total_mb=44280)
    store = Store()
    store.apply(sample(HostSnapshot("npu-smi", "ok", devices=(ddr,), processes=None)))
    assert list(store.state.host_npus.chips[(1, 0)].memory_used_mb) == [5000]
