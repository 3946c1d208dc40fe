"""The fleet store trusts neither a source's word nor its last numbers: a Hello
must agree with where it was published, a quiet source or a silent relay makes
its sources stale (no executions per second), and exceptions of hosts whose
clocks differ are ordered on one clock (the NATS server's, by the offsets the
relays measured), never by a host's own."""

from __future__ import annotations

from aclmon import events as ev
from aclmon.store.fleet import (
    EXITED,
    LIVE,
    RELAY_SILENT_AFTER_S,
    STALE,
    STALE_AFTER_S,
    FleetStore,
)

S = 1_000_000_000


def hello(host: str, pid: int, rank: int = 0) -> ev.Hello:
    fields = list(ev.hello_fields("sim", "x", 1))
    fields[2], fields[3], fields[9] = pid, host, rank
    return ev.Hello(0, 1, *fields)


def exception(ts_ns: int, name: str) -> ev.AclException:
    return ev.AclException(5, ts_ns, 0, 0, 0, 0, 507011, name, "Add", (), ())


def executions(seq: int, ts_ns: int, count: int) -> list[ev.Event]:
    load = ev.ModelLoaded(seq, ts_ns, 1, 0, "m", 1)
    ends = [ev.ExecuteEnd(seq + 1 + i, ts_ns + i * S // 10, 1, 0, 0, 0) for i in range(count)]
    return [load, *ends]


def test_a_hello_that_disagrees_with_its_source_is_refused_with_everything_it_sent():
    fleet = FleetStore()
    fleet.apply(("node1", 10), [hello("node1.cluster", 10), exception(5 * S, "real")])
    fleet.apply(("node1", 11), [exception(1 * S, "sent before its hello")])
    fleet.apply(("node1", 11), [hello("node2", 11), exception(2 * S, "forged")])
    fleet.apply(("node1", 12), [hello("node1", 99)])  # another pid
    fleet.apply(("node1", 11), [exception(0, "later still")])
    data = fleet.to_json()
    assert [s["pid"] for s in data["sources"]] == [10]
    assert {r["pid"] for r in data["refused"]} == {11, 12}
    assert "'node2' pid 11" in next(r["why"] for r in data["refused"] if r["pid"] == 11)
    assert data["earliest_exception"]["op_name"] == "real"
    assert [row.pid for row in fleet.rows()] == [10]
    assert fleet.refused_events == 4


def test_a_quiet_source_and_a_silent_relay_make_sources_stale_with_no_rate():
    fleet = FleetStore()
    key = ("node1", 10)
    batch = [hello("node1", 10), *executions(1, 0, 30)]
    fleet.apply(key, batch[:12], now=99.0)
    fleet.apply(key, batch[12:], now=100.0)
    entry = fleet.sources[key]
    assert fleet.state_of(entry, now=101.0) == LIVE
    assert fleet.row(entry, now=101.0).executions_per_s > 0
    assert fleet.state_of(entry, now=100.0 + STALE_AFTER_S + 0.1) == STALE
    assert fleet.row(entry, now=100.0 + STALE_AFTER_S + 0.1).executions_per_s == 0.0
    # A relay heartbeat marks its host's sources live while it beats ...
    fleet.heard_relay("node1", now=101.0)
    assert fleet.state_of(entry, now=101.0 + RELAY_SILENT_AFTER_S - 0.1) == LIVE
    # ... and stale once it stops, though their last numbers are recent.
    assert fleet.state_of(entry, now=101.0 + RELAY_SILENT_AFTER_S + 0.1) == STALE
    fleet.mark(key, EXITED)
    row = fleet.row(entry, now=102.0)
    assert row.state == EXITED and row.executions_per_s == 0.0
    assert row.executions == 30


def test_the_first_exception_is_the_first_on_the_servers_clock():
    """node2's clock is 10 s behind: its exception says 5 s earlier than node1's,
    but happened 5 s later. Each relay's ClockOffset (in its sources' streams) puts
    both on the server's clock; heartbeats, whatever time they carry, say only
    that a relay is alive."""
    fleet = FleetStore()
    now_ns = 1_000 * S
    fleet.apply(("node1", 1), [hello("node1", 1), exception(now_ns, "first")])
    fleet.apply(("node2", 2), [hello("node2", 2), exception(now_ns - 5 * S, "later")])
    assert fleet.earliest_exception()[1].op_name == "later"  # raw clocks mislead
    fleet.heard_relay("node1")
    fleet.heard_relay("node2")
    assert fleet.earliest_exception()[1].op_name == "later"  # a heartbeat measures nothing
    fleet.apply(("node1", 1), [ev.ClockOffset(0, now_ns, "node1", 1_000_000, 200_000)])
    fleet.apply(("node2", 2), [ev.ClockOffset(0, now_ns, "node2", 10 * S, 300_000)])
    assert fleet.earliest_exception()[1].op_name == "first"
    assert fleet.to_json()["clock_offsets"] == {
        "node1": {"offset_ns": 1_000_000, "uncertainty_ns": 200_000},
        "node2": {"offset_ns": 10 * S, "uncertainty_ns": 300_000},
    }
    rows = {row.host: row for row in fleet.rows()}
    assert rows["node2"].first_exception_ns > rows["node1"].first_exception_ns
    assert rows["node1"].first_exception_ns == now_ns + 1_000_000
