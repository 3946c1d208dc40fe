"""Start-up benchmark: wall time of ``aclmon decode FILE`` and ``aclmon --help``
beside ``python -c "import numpy"``, each a fresh interpreter, in one run.

``decode`` needs numpy, so importing numpy is its floor; ``--help`` needs
neither numpy nor anything else heavy. The three commands run in turns
(decode, help, numpy; then the next round), so the machine's load touches all
three alike; the figures are medians of ``--rounds`` rounds (at least 5).
The dump file is a small 2.0 operator dump (one float32 tensor of 64
elements) written by hand here.

Target (issue #15): ``decode_over_numpy_import`` <= 2.

    python bench/bench_cli.py [--rounds 9]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes | int) -> bytes:
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def small_dump(directory: str) -> str:
    """A 2.0 dump: u64 header length, DumpData header, one float32 (8, 8) output."""
    data = struct.pack("<64f", *range(64))
    shape = _field(1, b"".join(_varint(d) for d in (8, 8)))  # packed repeated dims
    # DT_FLOAT, FORMAT_ND, shape, size
    output = _field(1, 1) + _field(2, 2) + _field(3, shape) + _field(6, len(data))
    header = (
        _field(1, b"2.0") + _field(2, 1700000000000000) + _field(3, output) + _field(6, b"net/add1")
    )
    path = os.path.join(directory, "Add.add1.1.0.1700000000000000")
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(header)) + header + data)
    return path


def timed(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, cwd=REPO)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    rounds = max(5, args.rounds)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="aclmon-bench-cli-") as directory:
        dump = small_dump(directory)
        arms = {
            "decode": [py, "-m", "aclmon", "decode", dump],
            "help": [py, "-m", "aclmon", "--help"],
            "numpy_import": [py, "-c", "import numpy"],
        }
        for argv in arms.values():  # once each, so every arm starts with warm caches
            timed(argv, env)
        times: dict[str, list[float]] = {name: [] for name in arms}
        for _ in range(rounds):
            for name, argv in arms.items():
                times[name].append(timed(argv, env))
    med = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(
            f"{name:13s} median {med[name] * 1000:7.1f} ms  "
            f"(min {min(values) * 1000:.1f}, max {max(values) * 1000:.1f}, {rounds} runs)"
        )
    ratio = med["decode"] / med["numpy_import"]
    print(f"decode / import numpy: {ratio:.2f} (target <= 2)")
    print(f"--help / import numpy: {med['help'] / med['numpy_import']:.2f}")
    figures = {
        "decode_s": round(med["decode"], 4),
        "help_s": round(med["help"], 4),
        "numpy_import_s": round(med["numpy_import"], 4),
        "decode_over_numpy_import": round(ratio, 2),
        "help_over_numpy_import": round(med["help"] / med["numpy_import"], 2),
        "rounds": rounds,
    }
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
