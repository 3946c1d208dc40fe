"""Map vs positional msgpack encodings of aclmon's events, kind by kind.

For each event kind (realistic field values), measures the payload size and
the time to pack + unpack one event with

- positional: ``[kind, seq, ts_ns, field3, ...]`` (what aclmon uses), and
- map: ``{"kind": k, "seq": ..., "<field>": value, ...}``,

and, for positional, the full decode our subscribers do (unpack + schema
validation by ``EventDecoder``). Prints a table, then one JSON line.

    python bench/bench_event_encoding.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import msgpack

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_events import realistic_events

from aclmon import events as ev

REPEAT = 20_000


def _time_per_op(fn: Any, arg: Any, repeat: int = REPEAT) -> float:
    """Best of 3 runs, seconds per call."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeat):
            fn(arg)
        best = min(best, (time.perf_counter() - start) / repeat)
    return best


def main() -> None:
    packb = msgpack.Packer(use_bin_type=True, autoreset=True).pack

    def unpackb(data: bytes) -> Any:
        return msgpack.unpackb(data, use_list=False, raw=False)

    def positional(event: Any) -> Any:
        return unpackb(packb((event.KIND, *event)))

    def as_map(event: Any) -> Any:
        return unpackb(packb({"kind": event.KIND, **event._asdict()}))

    decoder = ev.EventDecoder()

    def positional_decoded(event: Any) -> Any:
        return decoder.decode(unpackb(packb((event.KIND, *event))))

    rows = {}
    print(f"{'kind':<22}{'pos B':>7}{'map B':>7}{'pos us':>9}{'map us':>9}{'pos+validate us':>17}")
    for event in realistic_events():
        name = ev.KIND_NAMES[type(event)]
        if name in rows:
            continue
        pos_bytes = len(packb((event.KIND, *event)))
        map_bytes = len(packb({"kind": event.KIND, **event._asdict()}))
        pos_s = _time_per_op(positional, event)
        map_s = _time_per_op(as_map, event)
        full_s = _time_per_op(positional_decoded, event)
        rows[name] = {
            "positional_bytes": pos_bytes,
            "map_bytes": map_bytes,
            "positional_us": round(pos_s * 1e6, 3),
            "map_us": round(map_s * 1e6, 3),
            "positional_validated_us": round(full_s * 1e6, 3),
        }
        print(
            f"{name:<22}{pos_bytes:>7}{map_bytes:>7}{pos_s * 1e6:>9.2f}{map_s * 1e6:>9.2f}"
            f"{full_s * 1e6:>17.2f}"
        )
    assert decoder.malformed == decoder.unknown == 0
    total_pos = sum(r["positional_bytes"] for r in rows.values())
    total_map = sum(r["map_bytes"] for r in rows.values())
    time_pos = sum(r["positional_us"] for r in rows.values())
    time_map = sum(r["map_us"] for r in rows.values())
    print(
        f"all kinds: positional {total_pos} B vs map {total_map} B "
        f"({total_map / total_pos:.2f}x); pack+unpack {time_pos:.1f} us vs {time_map:.1f} us "
        f"({time_map / time_pos:.2f}x)"
    )
    print(
        json.dumps(
            {
                "bytes_ratio_map_over_positional": round(total_map / total_pos, 3),
                "time_ratio_map_over_positional": round(time_map / time_pos, 3),
                "kinds": rows,
            }
        )
    )


if __name__ == "__main__":
    main()
