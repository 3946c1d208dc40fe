"""A synthetic host of a large job: many agent-like ranks in one process.

Each rank is what the agent is to a relay: a bus :class:`~aclmon.bus.publisher.Publisher`
on a Unix socket of its own, whose snapshot is built as the agent builds it (the
agent's :class:`~aclmon.agent.state.RuntimeState` for the Hello, device, context,
streams and model, then its :class:`~aclmon.agent.history.HistoryKeeper`, which
observes every batch, for the totals and the ``History`` with ``through_seq``),
registered in the host's agent registry. The ranks of one process are one host:
``--host NAME`` is in every Hello, and the unchanged ``aclmon relay --host NAME``
with ``XDG_RUNTIME_DIR`` on the same directory follows them as it follows real
agents (subjects, routing, batching and snapshots are the relay's own).

A rank needs a process id of its own (the subjects and the Hello carry it, and
the registry keeps an entry only while ``kill(pid, 0)`` finds it): each rank is
named by the id of a thread of this process that lives as long as the rank
(Linux answers ``kill`` for a thread id too). The ranks' publishers have no
thread of their own (``Publisher.start(thread=False)``): the process's one loop
emits each rank's events of a tick and turns its publisher at once, so they
leave in the tick they were stamped, and turns every rank's publisher while it
waits (handshakes, the relay's commands, what is still queued). A thread per
rank cost each write a wake-up, a select and a hand-over of the GIL among 128
threads: 42 µs of the load's CPU per event against 17 µs, and, the load being
niced on a machine the rest of the run keeps busy, its publishers' writes were
the events' longest wait. The load runs niced (``bench_fleet.py``): it stands
for other hosts' jobs.

What each rank emits at ``--rate`` events/s (numbered by its publisher, stamped
when emitted): one :class:`DeviceSample` (utilization varying by rank and time)
and one :class:`HostSample` a second, a :class:`LogLine` every ten seconds, and
the rest in steps of five: ``ExecuteBegin``, ``ExecuteEnd``, ``OpTiming``,
``StreamSyncBegin``, ``StreamSynchronized`` on its loaded model and its stream;
the ranks listed in ``--faulty`` raise one AI Core exception ``--fault-at``
seconds in. A real rank of a busy training job emits about 2,000 events/s (the
demo about 250): on a shared 2-core machine the rate per rank is scaled down so
that 1,024 of them fit, and the benchmark says which rate it offered.

Run by ``bench_fleet.py --sources 1024``; alone::

    XDG_RUNTIME_DIR=DIR python bench/fleet_load.py --host node00 --ranks 128 \\
        --first-rank 0 --world 1024 --rate 20 --seconds 30 --start-at UNIX_TIME

prints one JSON line when it has emitted its share (``emitted`` per pid,
``dropped``, ``cpu_s``), waits for a line on stdin (the viewer has everything),
then prints the subscriber drops and exits.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from aclmon import events as ev
from aclmon.agent.history import HistoryKeeper
from aclmon.agent.state import RuntimeState
from aclmon.bus import registry
from aclmon.bus.publisher import Publisher
from aclmon.locations import runtime_dir

JOB = "bench"
#: the driving loop's period: each rank's due events go out in one burst per tick
#: (a training step's calls come in bursts too)
TICK_S = 0.1
HBM_TOTAL = 64 << 30
#: how long the ranks wait for their host's relay to follow them all
RELAY_WAIT_S = 120.0
MODEL_ID = 1
CONTEXT = 0xFFFF9000_0000_0000
STREAM = 0xFFFF8000_1234_0000


class SyntheticRank:
    """One agent-like rank: its publisher, its snapshot state, what it emits next."""

    def __init__(
        self, host: str, rank: int, world: int, local_rank: int, directory: Path, holder: Any
    ) -> None:
        self.rank = rank
        self.device = local_rank % 8
        self.pid = int(holder.native_id)
        self.holder = holder
        self.state = RuntimeState()
        self.history = HistoryKeeper()
        self.publisher = Publisher(
            f"unix:{directory / f'rank{rank}.sock'}",
            snapshot=self.snapshot,
            observer=self.history,
        ).start(thread=False)  # served by the process's one driving loop (serve())
        fields = ev.hello_fields("sim", "Ascend910B1", 1)
        self.state.hello = ev.Hello(0, time.time_ns(), *fields)._replace(
            pid=self.pid,
            host=host,
            argv=("python", "train.py"),
            job=JOB,
            rank=rank,
            rank_size=world,
            local_rank=local_rank,
            device_id=self.device,
            rank_env={"RANK_ID": str(rank), "RANK_SIZE": str(world), "DEVICE_ID": str(self.device)},
        )
        self.emitted = 0
        self.dropped = 0
        self.steps = 0
        #: seconds whose samples went out
        self.samples_sent = 0
        self.faulted = False
        registry.register(self.publisher.address, pid=self.pid, argv=["python", "train.py"])

    def snapshot(self) -> list[Any]:
        """As the agent's: its runtime state, then the history's recent items and totals."""
        return [*self.state.snapshot(), *self.history.snapshot_events()]

    def _emit(self, cls: type, *fields: Any) -> None:
        if self.publisher.emit(cls, *fields):
            self.emitted += 1
        else:
            self.dropped += 1

    def set_up(self) -> None:
        """What a job does first: its Hello, the device, a context, a stream, a model."""
        hello = self.state.hello
        assert hello is not None
        now = time.time_ns()
        device = ev.DeviceSet(0, now, self.device, 0)
        context = ev.ContextCreated(0, now, self.device, CONTEXT + self.rank, True)
        stream = ev.StreamCreated(0, now, self.device, CONTEXT + self.rank, STREAM, 3, 0, 0)
        model = ev.ModelLoaded(0, now, MODEL_ID, self.device, "resnet50_bs32", 312)
        self.state.device_set(device)
        self.state.contexts[context.context] = context
        self.state.stream_created(stream)
        self.state.models[MODEL_ID] = model
        for event in (hello, device, context, stream, model):
            self._emit(type(event), *event[2:])

    def emit_until(self, wanted: int, elapsed_s: float, fault_at: float | None) -> None:
        """Events of the mix until ``wanted`` were emitted in all (the second's samples
        first when they are due; a step of five is not split)."""
        second = int(elapsed_s)
        while self.emitted + self.dropped < wanted:
            if self.samples_sent <= second:
                util = (self.rank * 7 + second * 3) % 101
                self._emit(ev.DeviceSample, self.device, util, util // 2, -1,
                           (20 + util // 4) << 30, HBM_TOTAL, "OK", 45.0 + util / 10, 250.5)  # fmt: skip
                self._emit(ev.HostSample, 95.0, 6 << 30, 48)
                if second % 10 == 0:
                    self._emit(ev.LogLine, "warning", f"step {self.steps}: loss scale lowered",
                               "GE", self.pid, "python3", time.time_ns(), "graph.cc:88", "")  # fmt: skip
                self.samples_sent = second + 1
                continue
            if fault_at is not None and not self.faulted and elapsed_s >= fault_at:
                self.faulted = True
                self._emit(ev.AclException, self.device, 3, 4000 + self.rank, self.pid, 507015,
                           "resnet50/layer3/conv12/Conv2D", "Conv2D", (), (), "resnet50_bs32",
                           self.steps + 1, "train.py:212 forward_step")  # fmt: skip
                continue
            self.steps += 1
            now = time.time_ns()
            self._emit(ev.ExecuteBegin, MODEL_ID, STREAM, self.device)
            self._emit(ev.ExecuteEnd, MODEL_ID, STREAM, 850_000, 0)
            self._emit(ev.OpTiming, MODEL_ID, "resnet50/layer3/conv12/Conv2D", "Conv2D",
                       now // 1000 - 850, now // 1000, 850, self.device, {})  # fmt: skip
            self._emit(ev.StreamSyncBegin, STREAM, self.pid)
            self._emit(ev.StreamSynchronized, STREAM, 900_000, 0, -1)

    def close(self) -> None:
        registry.unregister(self.pid)
        self.publisher.close()


def serve(ranks: list[SyntheticRank], then_sleep: float) -> None:
    """One turn of every rank's publisher (connections, commands, what is queued),
    then a sleep: the ranks' publishers have no thread of their own."""
    for one in ranks:
        one.publisher.turn()
    time.sleep(then_sleep)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", required=True)
    parser.add_argument("--ranks", type=int, default=128)
    parser.add_argument("--first-rank", type=int, default=0)
    parser.add_argument("--world", type=int, default=1024)
    parser.add_argument("--rate", type=float, default=20.0, help="events/s per rank")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--start-at", type=float, default=0.0, help="UNIX time to begin")
    parser.add_argument("--faulty", default="", help="ranks that raise an exception (1,5,…)")
    parser.add_argument("--fault-at", type=float, default=5.0)
    args = parser.parse_args(argv)
    faulty = {int(r) for r in args.faulty.split(",") if r.strip()}
    directory = runtime_dir()
    stop = threading.Event()
    ranks: list[SyntheticRank] = []
    try:
        for local in range(args.ranks):
            holder = threading.Thread(target=stop.wait, daemon=True)
            holder.start()
            rank = args.first_rank + local
            ranks.append(SyntheticRank(args.host, rank, args.world, local, directory, holder))
        deadline = time.monotonic() + RELAY_WAIT_S
        while any(one.publisher.subscriber_count < 1 for one in ranks):  # the relay
            if time.monotonic() > deadline:
                waiting = sum(1 for one in ranks if one.publisher.subscriber_count < 1)
                print(json.dumps({"error": f"{args.host}: no relay for {waiting} ranks"}),
                      flush=True)  # fmt: skip
                return
            serve(ranks, 0.05)
        for one in ranks:
            one.set_up()
        while time.time() < args.start_at:
            serve(ranks, min(0.05, max(0.0, args.start_at - time.time())))
        begin = time.monotonic()
        # the set-up events are not in the rate
        quota = [one.emitted + one.dropped for one in ranks]
        while True:
            elapsed = time.monotonic() - begin
            if elapsed >= args.seconds:
                break
            wanted = int(elapsed * args.rate)
            for index, one in enumerate(ranks):
                fault_at = args.fault_at if one.rank in faulty else None
                one.emit_until(quota[index] + wanted, elapsed, fault_at)
                one.publisher.turn()  # what it emitted goes out now
            time.sleep(max(0.0, TICK_S - (time.monotonic() - begin - elapsed)))
        cpu = os.times()
        report = {
            "host": args.host,
            "emitted": {str(one.pid): one.emitted for one in ranks},
            "dropped": sum(one.dropped for one in ranks),
            "cpu_s": cpu.user + cpu.system,
        }
        print(json.dumps(report), flush=True)
        # Stay until the viewer has everything (or gave up): the tail may still be
        # in these publishers' buffers while the relay runs behind.
        told = threading.Event()
        threading.Thread(target=lambda: (sys.stdin.read(), told.set()), daemon=True).start()
        while not told.is_set():
            serve(ranks, TICK_S)
        drops = sum(one.publisher.dropped for one in ranks)
        print(json.dumps({"subscriber_drops": drops}), flush=True)
    finally:
        for one in ranks:
            one.close()
        stop.set()


if __name__ == "__main__":
    main()
