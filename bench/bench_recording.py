"""Recording index build and seeks on a 1,000,000-event recording.

Writes a realistic event mix to a temporary recording, then times:

- building the index (frame offsets + timestamps) from a cold reader;
- a seek by time to the middle and to the end, each including reading the
  event found there (``seek_time`` + ``read_events``);
- a seek by number to the middle (``read_events(N // 2, 100)``).

    /work/venv/bin/python bench/bench_recording.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_events import event_mix

from aclmon.bus.recording import RecordingReader, RecordingWriter

COUNT = 1_000_000
RUNS = 3


def main() -> None:
    directory = tempfile.mkdtemp(prefix="aclmon-bench-")
    path = Path(directory) / "million.aclrec"
    events = event_mix(COUNT)
    start = time.perf_counter()
    with RecordingWriter(path, {"bench": "recording"}) as writer:
        writer.write_many(events)
    write_s = time.perf_counter() - start
    size = path.stat().st_size
    print(f"wrote {COUNT:,} events, {size / 1e6:.1f} MB, in {write_s:.2f} s")

    index_s = float("inf")
    seek_ms = float("inf")
    seek_index_ms = float("inf")
    for _ in range(RUNS):
        start = time.perf_counter()
        reader = RecordingReader(path, background=False)
        index_s = min(index_s, time.perf_counter() - start)
        assert len(reader) == COUNT and reader.cut is None
        middle_ts = events[COUNT // 2].ts_ns
        end_ts = events[-1].ts_ns
        worst = 0.0
        for target, expected in ((middle_ts, events[COUNT // 2]), (end_ts, events[-1])):
            start = time.perf_counter()
            found = reader.seek_time(target)
            first = reader.read_events(found, 1)[0]
            worst = max(worst, time.perf_counter() - start)
            assert first.ts_ns >= target and first.seq <= expected.seq
        seek_ms = min(seek_ms, worst * 1000)
        start = time.perf_counter()
        batch = reader.read_events(COUNT // 2, 100)
        seek_index_ms = min(seek_index_ms, (time.perf_counter() - start) * 1000)
        assert batch == events[COUNT // 2 : COUNT // 2 + 100]
        reader.close()
    os.unlink(path)
    os.rmdir(directory)
    per_million = index_s * 1_000_000 / COUNT
    print(f"index build: {index_s:.3f} s ({per_million:.3f} s per million frames; target < 1 s)")
    print(f"seek by time (middle, end) incl. reading the event: {seek_ms:.3f} ms (target < 10 ms)")
    print(f"seek by number to the middle + read 100 events: {seek_index_ms:.3f} ms")
    print(
        json.dumps(
            {
                "events": COUNT,
                "file_mb": round(size / 1e6, 1),
                "index_s_per_million": round(per_million, 3),
                "seek_ms": round(seek_ms, 3),
                "seek_index_read_100_ms": round(seek_index_ms, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
