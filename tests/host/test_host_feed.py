"""The host source as events: each snapshot a HostNpuSample with the agents joined
by pid, any number of readers, and a viewer's source with the host merged in;
the signals T and K send (only to the user's own processes, never to a reused pid)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil
import pytest
from test_host_source import Scripted, wait_until

from aclmon import events as ev
from aclmon.bus.states import CONNECTED
from aclmon.events.host import HostSnapshot, ProcessReading
from aclmon.host.feed import HostFeed
from aclmon.host.processes import SignalRefused, send_signal, signal_target
from aclmon.sources.base import KeptOpen, ListSource
from aclmon.sources.host import WithHost


def with_processes(*pids: int) -> HostSnapshot:
    readings = tuple(ProcessReading(0, 0, pid) for pid in pids)
    return HostSnapshot("dcmi", "ok", processes=readings, taken_ns=1_700_000_000 * 10**9)


def test_snapshots_become_samples_with_only_the_agents_that_hold_a_chip() -> None:
    backend = Scripted()
    backend.answers = [lambda: with_processes(10, 11)] * 3
    feed = HostFeed(lambda: backend, interval=0.01, agent_pids=lambda: [11, 12], hostname="n1")
    first = feed.reader()
    feed.start()
    try:
        wait_until(lambda: feed.source.version >= 2)
        samples = first.take()
        assert len(samples) >= 2 and first.take() == []
        s = samples[0]
        assert isinstance(s, ev.HostNpuSample) and s.seq == 0 and s.host == "n1"
        assert s.agent_pids == (11,)  # 12 runs an agent but holds no chip
        assert HostSnapshot.from_plain(s.snapshot) == with_processes(10, 11)
        assert s.ts_ns == HostSnapshot.from_plain(s.snapshot).taken_ns
        # a reader that comes later starts with what is kept
        assert len(feed.reader().take()) >= len(samples)
    finally:
        feed.close()


def test_the_ring_is_bounded_and_a_broken_registry_does_not_stop_the_readings() -> None:
    def broken() -> list[int]:
        raise OSError("registry unreadable")

    feed = HostFeed(lambda: Scripted(), interval=0.001, agent_pids=broken, kept=3)
    reader = feed.reader()
    feed.start()
    try:
        wait_until(lambda: feed.source.version >= 10)
        assert len(feed.reader().take()) == 3
        taken = reader.take()
        assert 1 <= len(taken) <= 3 and all(s.agent_pids == () for s in taken)
    finally:
        feed.close()


class FixedHost:
    def __init__(self) -> None:
        self.samples = [ev.HostNpuSample(0, 1, "n", with_processes(1).to_plain(), ())]

    def take(self) -> list[ev.HostNpuSample]:
        samples, self.samples = self.samples, []
        return samples

    def status(self) -> str:
        return "the feed's status"


def test_with_host_merges_the_samples_and_answers_the_host_status() -> None:
    job = ListSource([ev.LogLine(1, 1, "info", "hello")], description="job")
    source = WithHost(job, FixedHost())  # type: ignore[arg-type]
    assert source.description == "job" and source.state == CONNECTED
    polled = source.poll(100)
    assert [type(e) for e in polled] == [ev.HostNpuSample, ev.LogLine]
    assert source.host_status() == "the feed's status"
    assert job.host_status() is None  # a source without a host of its own


class Counting(ListSource):
    def __init__(self) -> None:
        super().__init__([])
        self.started = self.closed = 0

    def start(self) -> None:
        self.started += 1

    def close(self) -> None:
        self.closed += 1


def test_a_kept_source_starts_once_and_closes_only_when_released() -> None:
    inner = Counting()
    kept = KeptOpen(inner)
    for _screen in range(3):
        kept.start()
        kept.close()
    assert (inner.started, inner.closed) == (1, 0)
    kept.release()
    assert inner.closed == 1


# ---------------------------------------------------------------- signals
@pytest.fixture
def child():
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield process
    process.kill()
    process.wait()


def test_a_checked_process_of_ours_gets_the_signal(child: subprocess.Popen[bytes]) -> None:
    target = signal_target(child.pid)
    assert target.user and "time.sleep" in target.command
    assert send_signal(target, signal.SIGTERM).startswith(f"SIGTERM sent to pid {child.pid}")
    assert child.wait(10) == -signal.SIGTERM


def test_a_process_that_has_gone_is_not_signalled(child: subprocess.Popen[bytes]) -> None:
    target = signal_target(child.pid)
    child.kill()
    child.wait()
    with pytest.raises(SignalRefused, match="has exited"):
        send_signal(target, signal.SIGTERM)
    with pytest.raises(SignalRefused, match="has exited"):
        signal_target(child.pid)


def test_aclmon_itself_and_other_users_processes_are_refused() -> None:
    with pytest.raises(SignalRefused, match="this aclmon"):
        signal_target(os.getpid())
    if os.getuid() == 0:
        other = subprocess.Popen(["sleep", "60"], user=65534)
        pid = other.pid
    else:
        other = None
        pid = next(
            p.pid for p in psutil.process_iter(["uids"]) if p.info["uids"].real != os.getuid()
        )
    try:
        with pytest.raises(SignalRefused, match="aclmon signals only your own processes"):
            signal_target(pid)
        assert psutil.pid_exists(pid)
    finally:
        if other is not None:
            other.kill()
            other.wait()
