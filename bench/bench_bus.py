"""Events through the whole bus vs the msgpack ceiling, side by side.

Path measured: a Publisher in a child process (as in the job) packs and
writes a realistic event mix -> Unix socket -> a Subscriber in this process
(as in the viewer) reads, frames, unpacks and validates -> decoded events
returned by ``poll()``. Throughput is events decoded per second at the
subscriber, from the first event to the last.

Ceiling: ``msgpack`` pack + unpack of the same events in one process, no
framing, sockets or validation.

Also measured: the same path with publisher and subscriber threads in one
process (they then share one GIL), and the payload bytes of each kind.

This process runs with the garbage collector set as in the viewer's
(``aclmon.collector.tune_for_viewer``, as the ``aclmon`` command sets it); the
publisher's child keeps the interpreter's own settings, as a job does.

    python bench/bench_bus.py
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgpack

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_events import MIX, SMALL_KINDS, event_mix

from aclmon import events as ev
from aclmon.bus.publisher import Publisher
from aclmon.bus.subscriber import Subscriber
from aclmon.collector import tune_for_viewer

#: the collector's settings of a job (the interpreter's own), for the publisher
JOB_THRESHOLDS = gc.get_threshold()

COUNT = 300_000
RUNS = 3


def ceiling(events: list[Any]) -> float:
    """Events per second for msgpack pack + unpack alone."""
    packb = msgpack.Packer(use_bin_type=True, autoreset=True).pack
    unpackb = msgpack.unpackb
    start = time.perf_counter()
    for event in events:
        unpackb(packb((event.KIND, *event)), use_list=False, raw=False)
    return len(events) / (time.perf_counter() - start)


def _produce(publisher: Publisher, events: list[Any]) -> None:
    queue = publisher.ring
    publish = publisher.publish
    for start in range(0, len(events), 1000):
        # Keep below the queue bound: this measures throughput, not drops.
        while len(queue) > 200_000:
            time.sleep(0.0005)
        for event in events[start : start + 1000]:
            publish(event)


def _publisher_process(address: str, mix: str, count: int, ready: Any, go: Any, done: Any) -> None:
    gc.set_threshold(*JOB_THRESHOLDS)  # forked from the viewer's side: a job's settings
    kinds = MIX if mix == "mix" else tuple((cls, 1) for cls in SMALL_KINDS)
    events = event_mix(count, kinds)
    with Publisher(address, queue_size=1 << 20, subscriber_buffer=256 << 20) as publisher:
        ready.set()
        go.wait(30)
        _produce(publisher, events)
        # Open until the subscriber has it all: on a busy machine it may be seconds
        # behind (closing after a fixed second lost the end of the stream).
        done.wait(120)


def _consume(subscriber: Subscriber, count: int) -> tuple[float, int]:
    received = 0
    first = 0.0
    while received < count:
        batch = subscriber.poll(1_000_000, 5.0)
        if not batch:
            raise RuntimeError(f"stalled after {received} events ({subscriber.state})")
        if not first:
            first = time.perf_counter()
        received += len(batch)
    return time.perf_counter() - first, subscriber.gaps


def through_processes(mix: str, count: int) -> float:
    with tempfile.TemporaryDirectory(prefix="aclmon-bench-") as directory:
        return _through_processes(os.path.join(directory, "bus.sock"), mix, count)


def _through_processes(address: str, mix: str, count: int) -> float:
    ctx = multiprocessing.get_context("fork")
    ready, go, done = ctx.Event(), ctx.Event(), ctx.Event()
    child = ctx.Process(target=_publisher_process, args=(address, mix, count, ready, go, done))
    child.start()
    try:
        ready.wait(30)
        with Subscriber(address, readonly=True) as subscriber:
            subscriber.wait_connected(10)
            go.set()
            elapsed, gaps = _consume(subscriber, count)
            assert gaps == 0 and subscriber.malformed == 0, (gaps, subscriber.malformed)
    finally:
        done.set()
        child.join(30)
    return count / elapsed


def through_threads(events: list[Any]) -> float:
    with tempfile.TemporaryDirectory(prefix="aclmon-bench-") as directory:
        return _through_threads(os.path.join(directory, "bus.sock"), events)


def _through_threads(address: str, events: list[Any]) -> float:
    with (
        Publisher(address, queue_size=1 << 20, subscriber_buffer=256 << 20) as publisher,
        Subscriber(address, readonly=True) as subscriber,
    ):
        subscriber.wait_connected(10)
        import threading

        producer = threading.Thread(target=_produce, args=(publisher, events))
        producer.start()
        elapsed, gaps = _consume(subscriber, len(events))
        producer.join()
        assert gaps == 0 and subscriber.malformed == 0, (gaps, subscriber.malformed)
    return len(events) / elapsed


def main() -> None:
    tune_for_viewer()
    mix = event_mix(COUNT)
    small = event_mix(COUNT, tuple((cls, 1) for cls in SMALL_KINDS))
    packb = msgpack.Packer(use_bin_type=True, autoreset=True).pack
    print("bytes per event (payload + 4-byte length):")
    sizes: dict[str, float] = {}
    for cls, _ in MIX:
        sample = [e for e in mix if type(e) is cls][:200]
        sizes[ev.KIND_NAMES[cls]] = round(
            sum(len(packb((e.KIND, *e))) + 4 for e in sample) / len(sample), 1
        )
        print(f"  {ev.KIND_NAMES[cls]:<22}{sizes[ev.KIND_NAMES[cls]]:>7.1f}")

    # Best of RUNS for the bus as for the ceiling, interleaved so that both
    # see the same machine load.
    ceiling_mix = ceiling_small = mix_rate = small_rate = 0.0
    for _ in range(RUNS):
        ceiling_mix = max(ceiling_mix, ceiling(mix))
        mix_rate = max(mix_rate, through_processes("mix", COUNT))
        ceiling_small = max(ceiling_small, ceiling(small))
        small_rate = max(small_rate, through_processes("small", COUNT))
    threads_rate = through_threads(mix)
    print(
        f"mix:    bus {mix_rate:,.0f} ev/s   ceiling {ceiling_mix:,.0f} ev/s   ratio {mix_rate / ceiling_mix:.2f}"
    )
    print(
        f"small:  bus {small_rate:,.0f} ev/s   ceiling {ceiling_small:,.0f} ev/s   "
        f"ratio {small_rate / ceiling_small:.2f}"
    )
    print(f"mix, publisher and subscriber in one process: {threads_rate:,.0f} ev/s")
    print(
        json.dumps(
            {
                "events_per_s": round(mix_rate),
                "ceiling_events_per_s": round(ceiling_mix),
                "ratio": round(mix_rate / ceiling_mix, 3),
                "small_kinds_events_per_s": round(small_rate),
                "small_kinds_ceiling_events_per_s": round(ceiling_small),
                "small_kinds_ratio": round(small_rate / ceiling_small, 3),
                "one_process_events_per_s": round(threads_rate),
                "bytes_per_event": sizes,
            }
        )
    )


if __name__ == "__main__":
    main()
