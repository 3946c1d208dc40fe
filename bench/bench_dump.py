"""Benchmark aclmon.dump: decode throughput against plain np.fromfile, and convert files/s.

Writes a directory of >= 1 GB of operator dumps (2.0 format, float32 tensors),
then, in alternating rounds so both arms see the same page-cache state:

* ceiling: ``np.fromfile`` of each tensor's bytes (offset/count known in
  advance, no header parsing) and a sum over the array;
* decode:  ``aclmon.dump.read_dump`` (header parsed by our wire decoder,
  payload sliced from a memory map) and the same sum over every tensor.

Then ``aclmon convert`` (the CLI handler, 2 workers) over a directory of small
dumps, reported as files per second, and over the 1 GB directory in MiB/s;
and ``summarize`` (what the agent runs per new dump file) in files per second. All files are deleted afterwards.
The last line is one JSON object with the figures.

Run: /work/venv/bin/python bench/bench_dump.py [--mb 1024] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import struct
import sys
import tempfile
import time

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from aclmon.dump import read_dump, summarize
from aclmon.dump.commands import configure_convert

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


def run_convert(src: str, out: str) -> float:
    """``aclmon convert -d src -out out -j 2`` through its CLI handler; seconds taken."""
    parser = argparse.ArgumentParser()
    configure_convert(parser)
    args = parser.parse_args(["-d", src, "-out", out, "-j", "2"])
    t0 = time.perf_counter()
    code = args.handler(args)
    elapsed = time.perf_counter() - t0
    assert code == 0, code
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024, help="size of the dump directory in MiB")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--convert-files", type=int, default=400)
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
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
