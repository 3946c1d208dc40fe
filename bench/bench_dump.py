"""Benchmark aclmon.dump: decode throughput against plain np.fromfile, and convert files/s.

Writes a directory of >= 1 GB of operator dumps (2.0 format, float32 tensors),
then, in alternating rounds so both arms see the same page-cache state:

* ceiling: ``np.fromfile`` of each tensor's bytes (offset/count known in
  advance, no header parsing) and a sum over the array;
* decode:  ``aclmon.dump.read_dump`` (header parsed by our wire decoder,
  payload sliced from a memory map) and the same sum over every tensor.

Then ``aclmon convert`` (the CLI handler, 2 workers) over a directory of small
dumps, reported as files per second, and over the 1 GB directory in MiB/s;
and ``summarize`` (what the agent runs per new dump file) in files per second.

Convert against its floor: a directory of 64 operator dumps (~256 MiB; ND
float32, NC1HWC0 and FRACTAL_NZ float16, 2 tensors a file) converted by
``aclmon convert`` (the CLI handler, one worker per core, as a user runs it)
beside a single-thread ``np.fromfile`` + ``np.save`` of the same tensors (the
offsets known in advance: no header parsing), in alternating rounds;
``convert_over_copy`` is the copy's time over convert's (target >= 1.5 on 2
cores), ``convert_j1_over_copy`` the same with one process (``-j 1``), and
``two_core_speedup`` what a second worker process gains on the machine at the
time (2.0 on two idle cores). ``convert_cli_s`` is the whole command in a fresh interpreter
(start-up included), once per round. All files are deleted afterwards.
The last line is one JSON object with the figures.

Run: python bench/bench_dump.py [--mb 1024] [--rounds 3] [--convert-mb 256]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from aclmon.dump import read_dump, summarize
from aclmon.dump.commands import configure_convert

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILE_MB = 32
TENSORS_PER_FILE = 4


def _dump_data_class() -> type:
    """A minimal DumpData schema (fields per dump_formats.md §1.3) for writing headers."""
    fd = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="bench_dump.proto", package="bench", syntax="proto3"
    )
    shape = proto.message_type.add(name="Shape")
    shape.field.add(name="dim", number=1, type=fd.TYPE_UINT64, label=fd.LABEL_REPEATED)
    out = proto.message_type.add(name="OpOutput")
    out.field.add(name="data_type", number=1, type=fd.TYPE_INT32, label=fd.LABEL_OPTIONAL)
    out.field.add(name="format", number=2, type=fd.TYPE_INT32, label=fd.LABEL_OPTIONAL)
    out.field.add(
        name="shape",
        number=3,
        type=fd.TYPE_MESSAGE,
        type_name=".bench.Shape",
        label=fd.LABEL_OPTIONAL,
    )
    out.field.add(name="size", number=6, type=fd.TYPE_UINT64, label=fd.LABEL_OPTIONAL)
    dump = proto.message_type.add(name="DumpData")
    dump.field.add(name="version", number=1, type=fd.TYPE_STRING, label=fd.LABEL_OPTIONAL)
    dump.field.add(name="dump_time", number=2, type=fd.TYPE_UINT64, label=fd.LABEL_OPTIONAL)
    dump.field.add(
        name="output",
        number=3,
        type=fd.TYPE_MESSAGE,
        type_name=".bench.OpOutput",
        label=fd.LABEL_REPEATED,
    )
    dump.field.add(name="op_name", number=6, type=fd.TYPE_STRING, label=fd.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.DumpData"))


def write_dumps(
    directory: str, total_mb: int, file_mb: int, tensors: int
) -> list[tuple[str, list[tuple[int, int]]]]:
    """Write the files; return (path, [(offset, element count)]) for the ceiling arm."""
    DumpData = _dump_data_class()
    rng = np.random.default_rng(0)
    files = []
    elements = file_mb * (1 << 20) // 4 // tensors
    block = rng.standard_normal(elements).astype("<f4")
    for i in range(max(1, total_mb // file_mb)):
        msg = DumpData(version="2.0", dump_time=1700000000000000 + i, op_name=f"net/layer{i}")
        for _ in range(tensors):
            o = msg.output.add(data_type=1, format=2, size=elements * 4)
            o.shape.dim.extend([elements // 256, 256])
        header = msg.SerializeToString()
        path = os.path.join(directory, f"MatMul.layer{i}.{i}.0.{1700000000000000 + i}")
        with open(path, "wb") as handle:
            handle.write(struct.pack("<Q", len(header)))
            handle.write(header)
            for _ in range(tensors):
                handle.write(block.data)
        start = 8 + len(header)
        files.append((path, [(start + t * elements * 4, elements) for t in range(tensors)]))
    return files


def ceiling_pass(files) -> tuple[float, float]:
    total = 0.0
    t0 = time.perf_counter()
    for path, tensors in files:
        for offset, count in tensors:
            total += float(np.fromfile(path, dtype="<f4", count=count, offset=offset).sum())
    return time.perf_counter() - t0, total


def decode_pass(files) -> tuple[float, float]:
    total = 0.0
    t0 = time.perf_counter()
    for path, _ in files:
        dump = read_dump(path)
        for tensor in dump.outputs:
            total += float(tensor.array.sum())
    return time.perf_counter() - t0, total


def convert_bench(directory: str, count: int) -> tuple[float, int]:
    src = os.path.join(directory, "small")
    out = os.path.join(directory, "converted")
    os.makedirs(src)
    DumpData = _dump_data_class()
    payload = np.arange(4096, dtype="<f4").tobytes()
    for i in range(count):
        msg = DumpData(version="2.0", dump_time=1700000000000000 + i, op_name=f"op{i}")
        for _ in range(2):
            o = msg.output.add(data_type=1, format=2, size=len(payload))
            o.shape.dim.extend([64, 64])
        header = msg.SerializeToString()
        with open(os.path.join(src, f"Add.op{i}.{i}.0.{1700000000000000 + i}"), "wb") as handle:
            handle.write(struct.pack("<Q", len(header)) + header + payload + payload)
    elapsed = run_convert(src, out)
    written = len(os.listdir(out))
    assert written == 2 * count, written
    return elapsed, written


def run_convert(src: str, out: str, jobs: int = 2) -> float:
    """``aclmon convert -d src -out out -j jobs`` through its CLI handler; seconds taken."""
    parser = argparse.ArgumentParser()
    configure_convert(parser)
    args = parser.parse_args(["-d", src, "-out", out, "-j", str(jobs)])
    t0 = time.perf_counter()
    code = args.handler(args)
    elapsed = time.perf_counter() - t0
    assert code == 0, code
    return elapsed


#: (proto data type, proto format, shape, numpy dtype) of the tensors of the convert directory
_CONVERT_KINDS = (
    (1, 2, (512, 1024), "<f4"),  # DT_FLOAT, ND
    (2, 3, (16, 4, 16, 64, 16), "<f2"),  # DT_FLOAT16, NC1HWC0 (N, C1, H, W, C0)
    (2, 29, (4, 64, 16, 16, 16), "<f2"),  # DT_FLOAT16, FRACTAL_NZ (B, C1, No, Ni, C0)
)


def write_convert_dir(
    directory: str, total_mb: int, files: int = 64
) -> list[tuple[str, list[tuple[int, str, tuple[int, ...]]]]]:
    """``files`` dumps of 2 tensors each (~``total_mb`` in all); returns, per file, each
    tensor's (offset, numpy dtype, shape) for the copy arm."""
    DumpData = _dump_data_class()
    rng = np.random.default_rng(1)
    per_tensor = total_mb * (1 << 20) // files // 2
    written = []
    for i in range(files):
        data_type, fmt, shape, dtype = _CONVERT_KINDS[i % len(_CONVERT_KINDS)]
        scale = per_tensor // (math.prod(shape) * np.dtype(dtype).itemsize) or 1
        shape = (shape[0] * scale, *shape[1:])
        values = rng.standard_normal(math.prod(shape)).astype(dtype)
        msg = DumpData(version="2.0", dump_time=1700000000000000 + i, op_name=f"net/op{i}")
        for _ in range(2):
            o = msg.output.add(data_type=data_type, format=fmt, size=values.nbytes)
            o.shape.dim.extend(shape)
        header = msg.SerializeToString()
        path = os.path.join(directory, f"MatMul.op{i}.{i}.0.{1700000000000000 + i}")
        with open(path, "wb") as handle:
            handle.write(struct.pack("<Q", len(header)) + header)
            handle.write(values.data)
            handle.write(values.data)
        start = 8 + len(header)
        tensors = [(start + k * values.nbytes, dtype, shape) for k in range(2)]
        written.append((path, tensors))
    return written


def copy_pass(files, out: str) -> float:
    """Single thread: read each tensor's bytes and ``np.save`` them (the floor of convert)."""
    os.makedirs(out)
    t0 = time.perf_counter()
    for path, tensors in files:
        base = os.path.join(out, os.path.basename(path))
        for k, (offset, dtype, shape) in enumerate(tensors):
            count = math.prod(shape)
            array = np.fromfile(path, dtype=dtype, count=count, offset=offset).reshape(shape)
            np.save(f"{base}.output.{k}.npy", array, allow_pickle=False)
    return time.perf_counter() - t0


def convert_cli(src: str, out: str) -> float:
    """The whole ``aclmon convert`` command in a fresh interpreter (start-up included)."""
    env = {**os.environ, "PYTHONPATH": REPO}
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "aclmon", "convert", "-d", src, "-out", out],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - t0


def _spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


def two_core_speedup(rounds: int = 3, n: int = 2_000_000) -> float:
    """How much a second worker process gains on this machine right now: two
    pure-Python loops one after the other over the same two side by side
    (2.0 on two idle cores; less when other work holds a core)."""
    from concurrent.futures import ProcessPoolExecutor

    ratios = []
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_spin, [1, 1]))
        for _ in range(rounds):
            t0 = time.perf_counter()
            _spin(n)
            _spin(n)
            serial = time.perf_counter() - t0
            t0 = time.perf_counter()
            list(pool.map(_spin, [n, n]))
            ratios.append(serial / (time.perf_counter() - t0))
    return statistics.median(ratios)


def convert_vs_copy(directory: str, total_mb: int, rounds: int) -> dict[str, float]:
    src = os.path.join(directory, "convert-src")
    os.makedirs(src)
    print(f"convert: files in {directory}")
    files = write_convert_dir(src, total_mb)
    payload = sum(
        math.prod(shape) * np.dtype(dtype).itemsize for _, ts in files for _, dtype, shape in ts
    )
    out = os.path.join(directory, "convert-out")
    copy_pass(files, out)  # warm the page cache
    shutil.rmtree(out)
    copy_times, convert_times, cli_times, one_times = [], [], [], []
    for round_no in range(rounds):
        arms = [
            (copy_times, lambda: copy_pass(files, out)),
            (convert_times, lambda: run_convert(src, out, jobs=0)),
            (one_times, lambda: run_convert(src, out, jobs=1)),
            (cli_times, lambda: convert_cli(src, out)),
        ]
        if round_no % 2:
            arms.reverse()
        for times, run in arms:
            times.append(run())
            written = len(os.listdir(out))
            assert written == 2 * len(files), written
            shutil.rmtree(out)
    copy_s, convert_s = statistics.median(copy_times), statistics.median(convert_times)
    cli_s = statistics.median(cli_times)
    one_s = statistics.median(one_times)
    spare = two_core_speedup()
    mb = payload / 2**20
    print(
        f"convert directory: {len(files)} files, {mb:.0f} MiB of tensors "
        f"(ND float32, NC1HWC0 and FRACTAL_NZ float16), {os.cpu_count()} cores"
    )
    print(
        f"  single-thread np.fromfile + np.save: {copy_s:.3f} s = {mb / copy_s:.0f} MiB/s  {copy_times}"
    )
    print(
        f"  aclmon convert (handler, -j cores):  {convert_s:.3f} s = {mb / convert_s:.0f} MiB/s  {convert_times}"
    )
    print(
        f"  aclmon convert (whole command):      {cli_s:.3f} s = {mb / cli_s:.0f} MiB/s  {cli_times}"
    )
    print(
        f"  aclmon convert -j 1 (one process):   {one_s:.3f} s = {mb / one_s:.0f} MiB/s  {one_times}"
    )
    print(
        f"  convert over copy: {copy_s / convert_s:.2f} (target >= 1.5);"
        f" whole command: {copy_s / cli_s:.2f}; -j 1: {copy_s / one_s:.2f}"
    )
    return {
        "convert_mb": round(mb),
        "copy_mb_per_s": round(mb / copy_s, 1),
        "convert_mb_per_s": round(mb / convert_s, 1),
        "convert_over_copy": round(copy_s / convert_s, 2),
        "convert_cli_s": round(cli_s, 3),
        "convert_cli_over_copy": round(copy_s / cli_s, 2),
        "convert_j1_over_copy": round(copy_s / one_s, 2),
        "two_core_speedup": round(spare, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024, help="size of the dump directory in MiB")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--convert-files", type=int, default=400)
    parser.add_argument("--convert-mb", type=int, default=256)
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="aclmon-bench-dump-", dir=args.dir)
    try:
        t0 = time.perf_counter()
        files = write_dumps(directory, args.mb, FILE_MB, TENSORS_PER_FILE)
        nbytes = sum(os.path.getsize(p) for p, _ in files)
        payload = sum(c * 4 for _, ts in files for _, c in ts)
        print(
            f"wrote {len(files)} files, {nbytes / 2**20:.0f} MiB, in {time.perf_counter() - t0:.1f} s"
        )
        # warm the page cache once so neither arm pays for the first read from disk
        ceiling_pass(files)
        ceiling_times, decode_times = [], []
        for round_no in range(args.rounds):
            arms = [("ceiling", ceiling_pass, ceiling_times), ("decode", decode_pass, decode_times)]
            if round_no % 2:
                arms.reverse()
            sums = {}
            for name, run, times in arms:
                elapsed, sums[name] = run(files)
                times.append(elapsed)
            if not np.isclose(sums["ceiling"], sums["decode"], rtol=1e-6):
                print(f"checksums differ: {sums}", file=sys.stderr)
                return 1
        ceiling_s, decode_s = statistics.median(ceiling_times), statistics.median(decode_times)
        ceiling_mbps = payload / 2**20 / ceiling_s
        decode_mbps = payload / 2**20 / decode_s
        print(
            f"ceiling np.fromfile + sum: {ceiling_mbps:8.0f} MiB/s  (median of {args.rounds}: {ceiling_times})"
        )
        print(
            f"aclmon read_dump + sum:    {decode_mbps:8.0f} MiB/s  (median of {args.rounds}: {decode_times})"
        )
        print(f"ratio decode/ceiling: {decode_mbps / ceiling_mbps:.2f} (target >= 0.7)")
        convert_s, written = convert_bench(directory, args.convert_files)
        files_per_s = args.convert_files / convert_s
        small = sorted(
            os.path.join(directory, "small", n)
            for n in os.listdir(os.path.join(directory, "small"))
        )
        t0 = time.perf_counter()
        summaries = [summarize(p) for p in small]
        summarize_s = time.perf_counter() - t0
        assert all("error" not in x for x in summaries)
        print(f"summarize (the agent's DumpFileSeen): {len(small) / summarize_s:.0f} files/s")
        big_out = os.path.join(directory, "converted-big")
        big_s = run_convert(directory, big_out)
        big_mbps = payload / 2**20 / big_s
        shutil.rmtree(big_out)
        print(
            f"aclmon convert -j 2 of the {nbytes / 2**20:.0f} MiB directory: {big_s:.2f} s = {big_mbps:.0f} MiB/s"
        )
        print(
            f"aclmon convert -j 2: {args.convert_files} files ({written} .npy) in {convert_s:.2f} s = {files_per_s:.0f} files/s"
        )
        figures = {
            "dump_mb": round(nbytes / 2**20),
            "files": len(files),
            "decode_mb_per_s": round(decode_mbps, 1),
            "ceiling_mb_per_s": round(ceiling_mbps, 1),
            "ratio": round(decode_mbps / ceiling_mbps, 3),
            "convert_files_per_s": round(files_per_s, 1),
            "convert_big_mb_per_s": round(big_mbps, 1),
            "summarize_files_per_s": round(len(small) / summarize_s, 1),
        }
        # In memory when there is room (tmpfs): the disk's write-back otherwise swings
        # both arms by several times from run to run on a shared machine.
        shm = "/dev/shm"
        in_memory = args.dir is None and os.path.isdir(shm)
        if in_memory and shutil.disk_usage(shm).free > 4 * args.convert_mb * 2**20:
            convert_dir = tempfile.mkdtemp(prefix="aclmon-bench-convert-", dir=shm)
        else:
            convert_dir = os.path.join(directory, "convert")
        try:
            figures.update(convert_vs_copy(convert_dir, args.convert_mb, max(5, args.rounds)))
        finally:
            shutil.rmtree(convert_dir, ignore_errors=True)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
