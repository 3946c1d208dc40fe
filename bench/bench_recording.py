"""Recording index build and seeks on a 1,000,000-event recording.

Writes a realistic event mix to a temporary recording, then times:

- building the index (frame offsets + timestamps) from a cold reader;
- a seek by time to the middle and to the end, each including reading the
  event found there (``seek_time`` + ``read_events``);
- a seek by number to the middle (``read_events(N // 2, 100)``);
- peak RSS while indexing, in a fresh child process that does nothing else
  (this process holds the million events): ``peak_rss_mb`` is that child's
  high-water mark (interpreter and imports included), ``index_rss_mb`` how
  far indexing raised it above the RSS just before opening the reader.

    python bench/bench_recording.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_events import event_mix

from aclmon.bus.recording import RecordingReader, RecordingWriter

COUNT = 1_000_000
RUNS = 3


def _status_mb(key: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {key} in /proc/self/status")


def _index_rss_child(path: str) -> None:
    """Index ``path`` and print RSS figures (run in a fresh process)."""
    before = _status_mb("VmRSS")
    try:
        # Reset the high-water mark so it covers indexing only (Linux >= 4.0).
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        pass  # the peak then also covers start-up, which is below `before`
    reader = RecordingReader(path, background=False)
    peak = _status_mb("VmHWM")
    frames = len(reader)
    reader.close()
    print(json.dumps({"before_mb": before, "peak_mb": peak, "frames": frames}))


def index_rss(path: Path) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, __file__, "--index-rss", str(path)],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    figures: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    directory = tempfile.mkdtemp(prefix="aclmon-bench-")
    path = Path(directory) / "million.aclrec"
    events = event_mix(COUNT)
    start = time.perf_counter()
    with RecordingWriter(path, {"bench": "recording"}) as writer:
        writer.write_many(events)
    write_s = time.perf_counter() - start
    size = path.stat().st_size
    print(f"wrote {COUNT:,} events, {size / 2**20:.1f} MiB, in {write_s:.2f} s")

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
    rss = index_rss(path)
    assert rss["frames"] == COUNT
    os.unlink(path)
    os.rmdir(directory)
    per_million = index_s * 1_000_000 / COUNT
    print(f"index build: {index_s:.3f} s ({per_million:.3f} s per million frames; target < 1 s)")
    print(f"seek by time (middle, end) incl. reading the event: {seek_ms:.3f} ms (target < 10 ms)")
    print(f"seek by number to the middle + read 100 events: {seek_index_ms:.3f} ms")
    file_mb = size / 2**20
    print(
        f"indexing RSS (fresh process): peak {rss['peak_mb']:.1f} MiB, "
        f"+{rss['peak_mb'] - rss['before_mb']:.1f} MiB over the {rss['before_mb']:.1f} MiB "
        f"before opening; file {file_mb:.1f} MiB (peak / file = {rss['peak_mb'] / file_mb:.2f})"
    )
    print(
        json.dumps(
            {
                "events": COUNT,
                "file_mb": round(file_mb, 1),
                "index_s_per_million": round(per_million, 3),
                "seek_ms": round(seek_ms, 3),
                "seek_index_read_100_ms": round(seek_index_ms, 3),
                "peak_rss_mb": round(rss["peak_mb"], 1),
                "index_rss_mb": round(rss["peak_mb"] - rss["before_mb"], 1),
                "peak_rss_over_file": round(rss["peak_mb"] / file_mb, 2),
            }
        )
    )


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--index-rss":
        _index_rss_child(sys.argv[2])
    else:
        main()
