"""The store joins each Triage to its exception, bounded, and shows it in the JSON form."""

from __future__ import annotations

from aclmon import events as ev
from aclmon.store import Store


def exception(ts: int, task: int) -> ev.AclException:
    return ev.AclException(ts, 1_000 + ts, 0, 2, task, 7, 507015, "conv1", "Conv2D", (), ())


def test_a_triage_joins_its_exception_in_the_json():
    store = Store()
    first, second = exception(1, 11), exception(2, 12)
    store.apply_many([first, second])
    verdict = {"verdict": "out-of-bounds access: ...", "cause": "out_of_bounds"}
    store.apply(ev.Triage(3, 5_000, 0, 2, 12, second.ts_ns, verdict))
    recent = store.to_json()["exceptions"]["recent"]
    assert [e["triage"] for e in recent] == [None, verdict]
    assert recent[0]["launch_site"] == ""


def test_triages_are_bounded_like_the_exceptions():
    store = Store(exception_limit=3)
    for n in range(10):
        store.apply(exception(n + 1, n))
        store.apply(ev.Triage(0, 0, 0, 2, n, 1_000 + n + 1, {"cause": str(n)}))
    assert len(store.state.triages) == 3
    assert [e["triage"]["cause"] for e in store.to_json()["exceptions"]["recent"]] == [
        "7",
        "8",
        "9",
    ]


def test_the_clock_offset_of_the_source_is_kept():
    store = Store()
    store.apply(ev.ClockOffset(0, 1, "hostA", -5_000_000, 200_000))
    assert store.state.clock_offset is not None
    assert store.state.clock_offset.offset_ns == -5_000_000
