"""Failures are counted where they surface, and stay counted: a model run whose
error surfaces at the next synchronize of its stream, an exception attributed
to a run, errors of streams the job destroyed since; a failed set_device is a
failed call, not a device."""

from __future__ import annotations

from aclmon import events as ev
from aclmon.acl_constants import ACL_ERROR_RT_AICORE_EXCEPTION as AICORE
from aclmon.acl_constants import ACL_ERROR_RT_INVALID_DEVICEID
from aclmon.store import Store

T0 = 1_700_000_000_000_000_000
MS = 1_000_000


def _setup() -> list:
    return [
        ev.DeviceSet(1, T0, 0, 0),
        ev.ContextCreated(2, T0, 0, 0xA0, True),
        ev.ContextCurrent(3, T0, 0xA0, 100),
        ev.StreamCreated(4, T0, 0, 0xA0, 0xB0, 3, 0, 0),
        ev.ModelLoaded(5, T0, 1, 0, "resnet", 10),
    ]


def _job_loop(steps: int, failing: set[int], *, with_exceptions: bool) -> tuple[list, int]:
    """What the agent sends for a job that runs execute_async + synchronize_stream
    ``steps`` times and, when a synchronize fails, destroys the stream and makes a
    new one (recovery code); returns the events and the job's own failure count."""
    events: list = []
    seq = 6
    stream, stream_id = 0xB0, 3
    job_failures = 0
    for step in range(steps):
        t = T0 + step * 10 * MS
        events.append(ev.ExecuteEnd(seq, t, 1, stream, MS, 0))
        seq += 1
        ret = AICORE if step in failing else 0
        if ret and with_exceptions:
            events.append(ev.AclException(seq, t + MS, 0, stream_id, 7, 100, AICORE, "mm", "",
                                          (), ()))  # fmt: skip
            seq += 1
        events.append(ev.StreamSynchronized(seq, t + 2 * MS, stream, MS, ret, -1))
        seq += 1
        if ret:
            job_failures += 1
            events.append(ev.StreamDestroyed(seq, t + 3 * MS, stream, 0))
            stream, stream_id = stream + 0x10, stream_id + 1
            events.append(ev.StreamCreated(seq + 1, t + 4 * MS, 0, 0xA0, stream, stream_id, 0, 0))
            seq += 2
    return events, job_failures


def test_a_run_whose_error_surfaces_at_the_synchronize_is_a_failed_run():
    for with_exceptions in (False, True):
        store = Store()
        events, job_failures = _job_loop(12, {2, 5, 9}, with_exceptions=with_exceptions)
        store.apply_many([*_setup(), *events])
        model = store.state.models[1]
        assert (model.executions, model.failures) == (12, job_failures), with_exceptions
        assert store.to_json()["models"][0]["failures"] == job_failures


def test_errors_of_destroyed_streams_stay_on_their_device():
    store = Store()
    events, _ = _job_loop(12, {2, 5, 9}, with_exceptions=True)
    store.apply_many([*_setup(), *events])
    s = store.state
    live = [st for st in s.streams.values() if st.state != "destroyed"]
    assert not any(st.errors for st in live)  # the failing streams are all gone
    device = s.devices[0]
    assert (device.errors, device.exceptions, device.failed_streams) == (3, 3, 3)
    data = store.to_json()["devices"][0]
    assert (data["errors"], data["exceptions"], data["failed_streams"]) == (3, 3, 3)


def test_a_late_viewer_gets_the_device_figures_from_the_history():
    store = Store()
    store.apply_many([
        ev.DeviceSet(0, T0, 0, 0),
        ev.History(0, T0, T0, (), (), (), 3, 0, 3, (0, 3, 3, 3), 40),
    ])  # fmt: skip
    device = store.state.devices[0]
    assert (device.errors, device.exceptions, device.failed_streams) == (3, 3, 3)


def test_a_failed_set_device_is_a_failed_call_not_a_device():
    store = Store()
    message = "[PID: 1] Invalid_Argument(EE1001): The argument is invalid.Reason: no device 99"
    store.apply_many([
        ev.DeviceSet(1, T0, 99, ACL_ERROR_RT_INVALID_DEVICEID),
        ev.CallFailed(2, T0, "rt.set_device", ACL_ERROR_RT_INVALID_DEVICEID, message, 100, -1),
        ev.DeviceSet(3, T0, 0, 0),
        ev.DeviceSet(4, T0, 1, 0),
    ])  # fmt: skip
    s = store.state
    assert sorted(s.devices) == [0, 1]
    assert [f.event.api for f in s.call_failures] == ["rt.set_device"]
    data = store.to_json()
    assert [d["device_id"] for d in data["devices"]] == [0, 1]
    assert data["call_failures"]["total"] == 1


def test_a_stored_snapshot_then_a_replay_from_the_start_counts_each_event_once():
    """NATS --since all: the last snapshot stored (History through seq 40), then every
    event again from seq 1: what the snapshot counts is skipped, samples fold, no gap."""
    events, job_failures = _job_loop(6, {1, 4}, with_exceptions=True)
    live = [*_setup(), *events]
    direct = Store()
    direct.apply_many(live)
    last = live[-1].seq
    snapshot = [
        ev.ModelLoaded(0, T0, 1, 0, "resnet", 10),
        *[e._replace(seq=0) for e in live if type(e) is ev.AclException],
        ev.History(0, T0, T0, (1, 6, job_failures), (), (0, 3, 2), 2, 0, 0, (0, 2, 2, 2), last),
    ]
    store = Store()
    store.apply_many(snapshot)
    sample = ev.DeviceSample(3, T0, 0, 50, 10, 5, 1 << 30, 2 << 30, "OK", None, None)
    store.apply_many([*live[:3], sample, *live[3:]])  # the replay, a sample among them
    s = store.state
    assert (s.models[1].executions, s.models[1].failures) == (6, job_failures)
    assert s.exceptions_total == 2 == len(s.exceptions)
    assert s.counters.gaps == 0 and s.last_seq == last
    assert s.devices[0].sample == sample  # not restated by snapshots: folded


def test_the_agents_hello_again_after_acl_init_in_a_replay_is_covered_too():
    """A relay that follows the agent before the job's acl.init puts the Hello the
    agent sends again then into the stream: a replay after the stored snapshot must
    not take it for a new agent (which would fold every later event again)."""
    events, job_failures = _job_loop(6, {1, 4}, with_exceptions=True)
    hello = ev.Hello(1, T0, *ev.hello_fields("sim", "Ascend910B1", 1))
    live = [
        hello,
        *(e._replace(seq=e.seq + 1) for e in _setup()),
        hello._replace(seq=7, ts_ns=T0 + MS),  # after acl.init, with the device count
        *(e._replace(seq=e.seq + 2) for e in events),
    ]
    last = live[-1].seq
    snapshot = [
        hello._replace(seq=0),
        ev.ModelLoaded(0, T0, 1, 0, "resnet", 10),
        *[e._replace(seq=0) for e in live if type(e) is ev.AclException],
        ev.History(0, T0, T0, (1, 6, job_failures), (), (0, 3, 2), 2, 0, 0, (0, 2, 2, 2), last),
    ]
    store = Store()
    store.apply_many(snapshot)
    store.apply_many(live[1:])  # the replay: the relay followed after the first Hello
    s = store.state
    assert (s.models[1].executions, s.models[1].failures) == (6, job_failures)
    assert s.exceptions_total == 2 == len(s.exceptions)
    assert s.counters.gaps == 0 and s.last_seq == last
    # Another agent (restarted in the process: its Hello is numbered 1) starts afresh.
    store.apply_many([hello._replace(ts_ns=T0 + 100 * MS), ev.DeviceSet(2, T0 + 101 * MS, 0, 0)])
    assert s.covered_seq == 0 and s.last_seq == 2
