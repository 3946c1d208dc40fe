"""Benchmark ``aclmon compare``: its time over the time of just reading the tensors.

Writes two dump directories of ``--mb`` MiB each (default 512) in a temporary
directory: ``--ops`` operators, each with one input and one output tensor
(``--dtype``, ND), the golden's outputs a little off the NPU side's. Warms the
page cache, then in alternating rounds (both arms see the same cache):

* read: ``aclmon.dump.read_dump`` of every file of both directories and the
  values of every tensor (``Tensor.array``): what any compare must read;
* compare: what ``aclmon compare -m MY -g GOLDEN`` does (index both
  directories, read, convert, compute all ten metrics, judge, first divergent,
  write the CSV), in this process, one worker per core as the command runs.

``compare_over_read`` is the compare's median time over the read's with the
files in the page cache (target <= 1.5); ``compare_cpu_over_read_cpu`` the same
in CPU time of this process (all its threads), which a busy shared machine
disturbs far less than the wall clock; ``compare_over_read_cold`` the same
with both arms reading from storage (the files' cached pages dropped with
``posix_fadvise(DONTNEED)`` before each arm), as a dump directory larger than
memory is read. ``tensors_per_s`` (tensor pairs compared per second) and
``mb_per_s`` (MiB of both directories per second of compare) are the warm
figures. Each round prints the load average beside its figures. Everything is
deleted afterwards. The last line is one JSON object with the figures.

Run: python bench/bench_compare.py [--mb 512] [--ops 64] [--rounds 3] [--dtype float32]
[-j N] [-alg 0,3] (the metric columns, as ``aclmon compare -alg``; default all ten)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time

import numpy as np

from aclmon import acl_constants as C
from aclmon.dump import read_dump
from aclmon.dump.compare.engine import CompareOptions, run_compare
from aclmon.dump.compare.matching import Golden
from aclmon.dump.compare.metrics import parse_algorithms
from aclmon.dump.compare.rows import write_rows
from aclmon.sim import dumpfile

ACL_DTYPES = {"float32": C.ACL_FLOAT, "float16": C.ACL_FLOAT16}


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:
        return os.cpu_count() or 1


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f} {five:.2f}"


def write_pair(root: str, mb: int, ops: int, dtype: str) -> tuple[str, str, int]:
    """(my dir, golden dir, bytes of both): ``ops`` operators of two tensors each."""
    np_dtype = np.dtype(dtype)
    elements = max(1, (mb << 20) // (ops * 2 * np_dtype.itemsize))
    rng = np.random.default_rng(7)
    base = rng.standard_normal(elements, dtype=np.float32)
    noise = rng.standard_normal(elements, dtype=np.float32) * np.float32(1e-3)
    mine, gold = os.path.join(root, "mine"), os.path.join(root, "gold")
    total = 0
    for directory in (mine, gold):
        os.makedirs(directory)
    acl_dtype = ACL_DTYPES[dtype]
    for n in range(ops):
        x = np.roll(base, n).astype(np_dtype)
        y_mine = (x * np.float32(1.5)).astype(np_dtype)
        y_gold = (y_mine * (np.float32(1) + np.roll(noise, n))).astype(np_dtype)
        name = dumpfile.dump_file_name("Mul", f"net/mul{n}", n + 1, 0, 1_700_000_000_000_000 + n)

        def tensor(values: np.ndarray) -> dumpfile.DumpTensor:
            return dumpfile.DumpTensor(
                acl_dtype, C.ACL_FORMAT_ND, values.shape, values.shape, values.tobytes()
            )

        for directory, y in ((mine, y_mine), (gold, y_gold)):
            data = dumpfile.encode_dump(
                f"net/mul{n}", 1_700_000_000_000_000 + n, [tensor(x)], [tensor(y)]
            )
            with open(os.path.join(directory, name), "wb") as handle:
                handle.write(data)
            total += len(data)
    return mine, gold, total


def drop_cache(directories: list[str]) -> None:
    """Let the kernel forget the files' cached pages (clean pages of our own files)."""
    for directory in directories:
        for name in os.listdir(directory):
            fd = os.open(os.path.join(directory, name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def read_all(directories: list[str]) -> int:
    tensors = 0
    for directory in directories:
        for name in sorted(os.listdir(directory)):
            dump = read_dump(os.path.join(directory, name))
            for tensor in dump.tensors:
                tensor.array  # noqa: B018 -- the read is what is measured
                tensors += 1
    return tensors


def compare_all(
    mine: str, gold: str, out_dir: str, workers: int, algorithms: tuple[str, ...]
) -> int:
    options = CompareOptions(algorithms=algorithms, workers=workers)
    result = run_compare(mine, Golden(gold), options)
    with open(os.path.join(out_dir, "result.csv"), "w", encoding="utf-8", newline="") as out:
        return write_rows(out, result.rows, result.layout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=512, help="MiB per directory (>= 500 MB)")
    parser.add_argument("--ops", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dtype", choices=sorted(ACL_DTYPES), default="float32")
    parser.add_argument(
        "-j", "--jobs", type=int, default=0, help="compare workers (default: cores)"
    )
    parser.add_argument("-alg", dest="algorithms", default="all", help="as aclmon compare -alg")
    args = parser.parse_args()
    workers = args.jobs or _cores()
    algorithms = parse_algorithms([args.algorithms])
    root = tempfile.mkdtemp(prefix="aclmon-bench-compare-")
    try:
        started = time.perf_counter()
        mine, gold, total = write_pair(root, args.mb, args.ops, args.dtype)
        print(f"wrote 2 x {total / 2 / 2**20:.0f} MiB in {time.perf_counter() - started:.1f} s")
        both = [mine, gold]
        read_all(both)  # warm the page cache
        times: dict[str, list[float]] = {
            "read": [],
            "compare": [],
            "cold_read": [],
            "cold_compare": [],
            "read_cpu": [],
            "compare_cpu": [],
        }
        pairs = 0
        for round_number in range(args.rounds):
            for prefix in ("", "cold_"):
                if prefix:
                    drop_cache(both)
                c0, t0 = time.process_time(), time.perf_counter()
                tensors = read_all(both)
                c1, t1 = time.process_time(), time.perf_counter()
                if prefix:
                    drop_cache(both)
                c2, t2 = time.process_time(), time.perf_counter()
                pairs = compare_all(mine, gold, root, workers, algorithms)
                c3, t3 = time.process_time(), time.perf_counter()
                times[prefix + "read"].append(t1 - t0)
                times[prefix + "compare"].append(t3 - t2)
                if not prefix:
                    times["read_cpu"].append(c1 - c0)
                    times["compare_cpu"].append(c3 - c2)
                print(
                    f"round {round_number + 1} {'cold' if prefix else 'warm'}: read {tensors} "
                    f"tensors {t1 - t0:.3f} s, compare {pairs} pairs {t3 - t2:.3f} s, "
                    f"ratio {(t3 - t2) / (t1 - t0):.2f}, cpu ratio {(c3 - c2) / (c1 - c0):.2f}"
                    f"  ({_load()})"
                )
        median = {key: statistics.median(values) for key, values in times.items()}
        figures = {
            "dump_mb": round(total / 2**20),
            "dtype": args.dtype,
            "algorithms": len(algorithms),
            "workers": workers,
            "read_s": round(median["read"], 3),
            "compare_s": round(median["compare"], 3),
            "tensors_per_s": round(pairs / median["compare"], 1),
            "mb_per_s": round(total / 2**20 / median["compare"], 1),
            "compare_over_read": round(median["compare"] / median["read"], 3),
            "cold_read_s": round(median["cold_read"], 3),
            "cold_compare_s": round(median["cold_compare"], 3),
            "compare_over_read_cold": round(median["cold_compare"] / median["cold_read"], 3),
            "read_cpu_s": round(median["read_cpu"], 3),
            "compare_cpu_s": round(median["compare_cpu"], 3),
            "compare_cpu_over_read_cpu": round(median["compare_cpu"] / median["read_cpu"], 3),
            "load": _load(),
        }
        print(json.dumps(figures))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
