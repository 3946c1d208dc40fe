"""The host source refreshes off the caller's thread: reading it never blocks."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from aclmon.events.host import DeviceReading, HostSnapshot, SourceName
from aclmon.events.host import HostSnapshot as Snapshot
from aclmon.host.source import Backend, HostSource, HostUnavailable, collect_once


def snapshot(state: str = "ok", devices: int = 1) -> HostSnapshot:
    return Snapshot(
        source="npu-smi",
        state=state,  # type: ignore[arg-type]
        devices=tuple(DeviceReading(npu_id=n, chip_id=0) for n in range(devices)),
        taken_ns=time.time_ns(),
    )


class Scripted:
    """A back end whose refreshes are handed to it one by one by the test."""

    source: SourceName = "npu-smi"

    def __init__(self) -> None:
        self.answers: list[Callable[[], HostSnapshot]] = []
        self.release = threading.Event()
        self.calls = 0
        self.closed = False

    def refresh(self) -> HostSnapshot:
        self.calls += 1
        answer = self.answers.pop(0) if self.answers else (lambda: snapshot())
        return answer()

    def close(self) -> None:
        self.closed = True


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.01)


def test_snapshots_arrive_and_a_failed_refresh_keeps_the_last_good_one() -> None:
    backend = Scripted()

    def held() -> HostSnapshot:  # the third refresh waits for the test: no race
        backend.release.wait()
        return snapshot()

    backend.answers = [lambda: snapshot(devices=2), lambda: snapshot("timeout", devices=0), held]
    source = HostSource(lambda: backend, interval=0.01)
    assert source.latest() is None and source.status().state == "starting"
    source.start()
    try:
        wait_until(lambda: source.version >= 2)
        latest = source.latest()
        assert latest is not None and len(latest.devices) == 2  # what is still on screen
        assert source.status().state == "timeout"
        backend.release.set()
        wait_until(lambda: source.status().state == "ok")  # the next refresh came back
    finally:
        source.close()
    wait_until(lambda: backend.closed)


def test_a_refresh_that_never_returns_is_reported_while_reads_stay_instant() -> None:
    backend = Scripted()
    stuck = threading.Event()

    def hang() -> HostSnapshot:
        stuck.set()
        backend.release.wait()
        return snapshot()

    backend.answers = [lambda: snapshot(devices=3), hang]
    source = HostSource(lambda: backend, interval=0.01, stall_after=0.2)
    source.start()
    try:
        stuck.wait(20)
        wait_until(lambda: source.status().state == "stalled")
        status = source.status()
        assert status.message is not None and "has not returned" in status.message
        assert "showing data from" in status.line()
        latest = source.latest()
        assert latest is not None and len(latest.devices) == 3
    finally:
        backend.release.set()
        source.close()


def test_no_back_end_is_a_state_and_is_tried_again() -> None:
    attempts = []

    def unavailable() -> Backend:
        attempts.append(1)
        raise HostUnavailable("no libdcmi.so; no npu-smi on PATH")

    source = HostSource(unavailable, interval=0.01)
    source.start()
    try:
        wait_until(lambda: source.status().state == "unavailable")
        assert "no npu-smi" in (source.status().message or "")
        source.refresh_soon()
        wait_until(lambda: len(attempts) >= 2)
    finally:
        source.close()


def test_a_back_end_bug_is_a_failed_refresh_not_a_dead_thread() -> None:
    backend = Scripted()

    def broken() -> HostSnapshot:
        raise KeyError("oops")

    backend.answers = [broken]
    source = HostSource(lambda: backend, interval=0.01)
    source.start()
    try:
        wait_until(lambda: backend.calls >= 2)  # still refreshing after the bug
    finally:
        source.close()


def test_a_consumer_bug_does_not_stop_the_refreshes() -> None:
    backend = Scripted()

    def broken_consumer(snapshot: HostSnapshot) -> None:
        raise ValueError("the screen fell over")

    source = HostSource(lambda: backend, interval=0.01, on_snapshot=broken_consumer)
    source.start()
    try:
        wait_until(lambda: source.version >= 3)
    finally:
        source.close()


def test_once_gives_up_on_a_hung_back_end() -> None:
    release = threading.Event()

    class Hung(Scripted):
        def refresh(self) -> HostSnapshot:
            release.wait()
            return snapshot()

    try:
        result = collect_once(Hung, 0.2)
    finally:
        release.set()
    assert (result.source, result.state) == ("npu-smi", "timeout")
    assert result.message == "no answer from npu-smi in 0.2 s"
    assert result.to_plain()["devices"] == [] and result.to_plain()["processes"] is None


def test_once_reports_a_missing_back_end() -> None:
    def missing() -> Backend:
        raise HostUnavailable("no libdcmi.so (set ACLMON_DCMI_LIBRARY)")

    result = collect_once(missing, 5)
    assert (result.source, result.state) == (None, "unavailable")


@pytest.mark.parametrize("processes", [None, ()])
def test_a_snapshot_survives_its_plain_form(processes: tuple[()] | None) -> None:
    original = Snapshot(
        source="sim",
        state="partial",
        message="one warning",
        devices=(DeviceReading(npu_id=1, chip_id=1, power_w=None, fault_codes=(0x80E01801,)),),
        processes=processes,
        warnings=("one warning",),
        taken_ns=5,
        refresh_ms=1.5,
    )
    assert Snapshot.from_plain(original.to_plain()) == original
