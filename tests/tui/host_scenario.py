"""A fixed host for the Host view's tests and snapshots: eight 910B3 chips read
through DCMI over a few minutes, four processes (two running aclmon's agent, one
of them the scenario's job, pid 4242), one chip that reports no power, one in
Warning with ECC errors. Deterministic: the same screen on every run."""

from __future__ import annotations

import math

from tui_scenario import T0

from aclmon import events as ev
from aclmon.events.host import DeviceReading, HostSnapshot, ProcessReading
from aclmon.host.source import HostStatus

HOST = "node-a"  # the scenario job's host
CHIPS = 8
SAMPLES = 90
#: the scenario job (its Hello's pid) and another job with an agent
JOB_PID = 4242
OTHER_AGENT_PID = 5151
PROCESSES = (
    (0, JOB_PID, "ai", "python train.py --config resnet50.yaml", 31_000),
    (1, JOB_PID, "ai", "python train.py --config resnet50.yaml", 30_500),
    (2, OTHER_AGENT_PID, "ai", "python infer.py --batch 64", 12_800),
    (3, 6161, "bob", "python -m vllm.entrypoints.api_server --tp 2", 55_844),
    (4, 6161, "bob", "python -m vllm.entrypoints.api_server --tp 2", 55_844),
)


def snapshot_at(
    step: int, pids: tuple[tuple[int, int, str, str, int], ...] = PROCESSES
) -> HostSnapshot:
    devices = []
    for chip in range(CHIPS):
        busy = chip in (0, 1, 2, 3, 4)
        wave = 0.5 + 0.5 * math.sin((step + chip * 7) / 6)
        aicore = round(wave * (90 if busy else 3)) if busy else 0
        devices.append(
            DeviceReading(
                npu_id=chip, chip_id=0, logic_id=chip, phy_id=chip, name="910B3",
                health="Warning" if chip == 5 else "OK",
                power_w=None if chip == 6 else round(92.0 + aicore * 2.1 + chip, 1),
                temp_c=36 + aicore // 6 + chip % 3,
                aicore_pct=aicore, aicpu_pct=0, vector_pct=aicore // 3, ctrlcpu_pct=3,
                hbm_used_mb=3_380 + sum(m for c, _p, _u, _c, m in pids if c == chip),
                hbm_total_mb=65_536, bus_id=f"0000:{0xC1 + chip:02X}:00.0",
                aicore_mhz=1_800 if busy else 800, aicore_max_mhz=1_800,
                ecc_single_bit=3 if chip == 5 else 0, ecc_double_bit=1 if chip == 5 else 0,
                fault_codes=(),
            )
        )  # fmt: skip
    processes = tuple(
        ProcessReading(chip, 0, pid, command.split()[0], memory, None, user, command)
        for chip, pid, user, command, memory in pids
    )
    return HostSnapshot(
        source="dcmi", state="ok", devices=tuple(devices), processes=processes,
        version="/usr/local/dcmi/libdcmi.so", taken_ns=T0 + step * 1_000_000_000,
        refresh_ms=1.9,
    )  # fmt: skip


def host_events(samples: int = SAMPLES) -> list[ev.Event]:
    """The host's samples as the viewer's host feed makes them (``seq`` 0)."""
    snapshots = [snapshot_at(step) for step in range(samples)]
    agents = (JOB_PID, OTHER_AGENT_PID)
    return [ev.HostNpuSample(0, s.taken_ns, HOST, s.to_plain(), agents) for s in snapshots]


class FixedHost:
    """Stands in for a host feed's reader: these samples once, and a status the
    test sets (None: the readings are not live, as in a replay)."""

    def __init__(self, samples: list[ev.Event], status: HostStatus | None) -> None:
        self.samples = list(samples)
        self.state = status

    def take(self) -> list[ev.Event]:
        samples, self.samples = self.samples, []
        return samples

    def status(self) -> HostStatus | None:
        return self.state


LIVE = HostStatus("ok", None, 0.0)


def host_app(
    samples: list[ev.Event] | None = None,
    *,
    status: HostStatus | None = LIVE,
    readonly: bool = False,
    **kwargs,
):
    """The scenario app with its Host view fed like attach's (a live host, by default)."""
    from tui_helpers import FakeAgent, over_the_wire
    from tui_scenario import build_events

    from aclmon.sources.base import ListSource
    from aclmon.sources.host import WithHost
    from aclmon.tui.app import AclmonApp

    job = ListSource(over_the_wire(build_events()), agent=FakeAgent(), readonly=readonly)
    host = FixedHost(over_the_wire(host_events() if samples is None else samples), status)
    kwargs.setdefault("clock", lambda: 0.0)
    return AclmonApp(WithHost(job, host), **kwargs)  # type: ignore[arg-type]


def samples_with(processes: tuple[tuple[int, int, str, str, int], ...]) -> list[ev.Event]:
    """Two samples of the fixed host holding just these processes (chip, pid, user,
    command, MB), none with an agent."""
    return [
        ev.HostNpuSample(
            0, snapshot_at(step).taken_ns, HOST, snapshot_at(step, processes).to_plain(), ()
        )
        for step in range(2)
    ]
