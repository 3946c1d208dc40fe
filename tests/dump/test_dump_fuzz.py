"""Hypothesis fuzzing of every reader: only DecodeError escapes, naming file and offset,
and nothing is allocated beyond a small multiple of the file's size."""

from __future__ import annotations

import struct
import tracemalloc

import numpy as np
from dumpfixtures import T, dump_bytes, header_message, nano_bytes, opdebug_new, opdebug_old
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aclmon.dump import (
    ConvertOptions,
    classify,
    convert_file,
    decode_opdebug,
    read_dump,
    read_stats_csv,
    summarize,
    tensor_stats,
)
from aclmon.dump import proto_enums as pe
from aclmon.errors import AclmonError, DecodeError

FUZZ = settings(
    deadline=None, max_examples=120, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
NAME = "Add.fuzz.1.2.1700000000000000"
# unpacking int4/uint1 may legitimately expand bytes up to 8x; the rest is fixed overhead
ALLOWED_GROWTH = 16
OVERHEAD = 2 << 20


def f32(*values):
    return struct.pack(f"<{len(values)}f", *values)


SEEDS = [
    dump_bytes(
        inputs=[T(f32(1, 2), shape=[2]), T(bytes([0x21, 0x43]), dtype=28, shape=[4])],
        outputs=[
            T(
                np.arange(8, dtype="<f2").tobytes(),
                dtype=2,
                fmt=3,
                shape=[1, 1, 2, 2, 2],
                original_shape=[1, 2, 2, 2],
            )
        ],
        buffers=[b"\x01"],
        spaces=[b"log"],
        dfx_message="m",
    ),
    dump_bytes(
        outputs=[
            T(opdebug_new(0, [0, 2, 7, 0, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0], version=1), dtype=4)
        ]
    ),
    dump_bytes(outputs=[T(opdebug_old({1040: 0x20}), dtype=4)]),
    header_message(inputs=[T(f32(5), shape=[1])], embed=True).SerializeToString(),
    nano_bytes([(1, 2, [2], b"\x00\x3c\x00\x40")], [(3, 2, [1], b"\x07\x00\x00\x00", "o")]),
    dump_bytes(outputs=[T(bytes([0b1010_0000]), dtype=29, shape=[3])]),
]


def exercise(path, size: int) -> None:
    """Everything a user can do with a file; only DecodeError may escape."""
    tracemalloc.start()
    try:
        try:
            dump = read_dump(path)
        except DecodeError as exc:
            check_error(exc)
        else:
            for tensor in dump.tensors:
                try:
                    decoded = tensor.decode()
                except DecodeError as exc:
                    check_error(exc)
                    continue
                if decoded.array.size <= 4096:
                    tensor_stats(decoded.array, bins=4)
                if tensor.role == "output":
                    try:
                        decode_opdebug(bytes(tensor.raw), path.name, tensor.offset)
                    except DecodeError as exc:
                        check_error(exc)
        try:
            head = read_dump(path, header_only=True)
            assert all(t.size >= 0 for t in head.tensors)
        except DecodeError as exc:
            check_error(exc)
        summary = summarize(path)
        assert isinstance(summary, dict)
        classify(path)
        out = path.parent / "converted"
        out.mkdir(exist_ok=True)
        for options in (ConvertOptions(), ConvertOptions(pe.FORMAT_NCHW, file_type="bin")):
            result = convert_file(path, out, options)  # never raises: errors are in the result
            if result.error:
                assert NAME in result.error
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= ALLOWED_GROWTH * size + OVERHEAD, (peak, size)


def check_error(exc: DecodeError) -> None:
    assert exc.source == NAME
    assert isinstance(exc.offset, int) and exc.offset >= 0
    assert f"{NAME}: at byte {exc.offset}: " in str(exc)


@FUZZ
@given(data=st.binary(max_size=512))
def test_random_bytes(tmp_path, data):
    path = tmp_path / NAME
    path.write_bytes(data)
    exercise(path, len(data))


@FUZZ
@given(seed=st.sampled_from(SEEDS), cut=st.integers(min_value=0, max_value=4096))
def test_truncation(tmp_path, seed, cut):
    data = seed[: min(cut, len(seed))]
    path = tmp_path / NAME
    path.write_bytes(data)
    exercise(path, len(data))


@FUZZ
@given(
    seed=st.sampled_from(SEEDS),
    flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 7)), min_size=1, max_size=6),
)
def test_bit_flips(tmp_path, seed, flips):
    data = bytearray(seed)
    for position, bit in flips:
        data[position % len(data)] ^= 1 << bit
    path = tmp_path / NAME
    path.write_bytes(bytes(data))
    exercise(path, len(data))


@FUZZ
@given(seed=st.sampled_from(SEEDS[:3]), header_len=st.integers(min_value=0, max_value=2**64 - 1))
def test_absurd_header_lengths(tmp_path, seed, header_len):
    data = struct.pack("<Q", header_len) + seed[8:]
    path = tmp_path / NAME
    path.write_bytes(data)
    exercise(path, len(data))


_huge = st.integers(min_value=0, max_value=2**64 - 1)


@FUZZ
@given(
    size=_huge,
    dims=st.lists(_huge, max_size=6),
    dtype=st.integers(min_value=0, max_value=45),
    fmt=st.integers(min_value=0, max_value=60),
    payload=st.binary(max_size=64),
)
def test_absurd_sizes_and_shapes(tmp_path, size, dims, dtype, fmt, payload):
    data = dump_bytes(outputs=[T(payload, dtype=dtype, fmt=fmt, shape=dims, size=size)])
    path = tmp_path / NAME
    path.write_bytes(data)
    exercise(path, len(data))


@FUZZ
@given(count=st.integers(0, 2**32 - 1), head=st.binary(max_size=64))
def test_nano_absurd_counts(tmp_path, count, head):
    body = struct.pack("<II", 0x5A5A5A5A, 1) + struct.pack("<III", 4, 8, count) + head
    data = struct.pack("<Q", len(body)) + body
    path = tmp_path / NAME
    path.write_bytes(data)
    exercise(path, len(data))


@FUZZ
@given(data=st.binary(max_size=3000))
def test_opdebug_records(data):
    try:
        record = decode_opdebug(data, NAME, 77)
    except DecodeError as exc:
        assert exc.offset >= 77 and str(exc).startswith(f"{NAME}: at byte ")
    else:
        assert set(record) in (
            {"magic", "version", "acc_list"},
            {"DHA Atomic Add", "L2 Atomic Add", "AI Core"},
        )


@FUZZ
@given(text=st.text(max_size=300))
def test_stats_csv(tmp_path, text):
    path = tmp_path / "fuzz.csv"
    path.write_text("Input/Output,Index,Data Type,Shape\n" + text, encoding="utf-8")
    try:
        read_stats_csv(path)
    except AclmonError as exc:
        assert isinstance(exc, DecodeError) and "fuzz.csv: at byte" in str(exc)
    assert isinstance(summarize(path), dict)


@FUZZ
@given(
    values=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), max_size=200),
    chunk=st.integers(1, 64),
    bins=st.integers(0, 20),
)
def test_tensor_stats_of_any_floats(values, chunk, bins):
    import json
    import math

    array = np.array(values, dtype=np.float64)
    stats = tensor_stats(array, bins=bins, chunk_elements=chunk)
    json.dumps(stats, allow_nan=False)
    finite = [v for v in values if math.isfinite(v)]
    assert stats["finite"] == len(finite)
    assert stats["nan"] + stats["pos_inf"] + stats["neg_inf"] + stats["finite"] == len(values)
    if finite:
        assert stats["min"] == min(finite) and stats["max"] == max(finite)
        if bins:
            assert sum(stats["histogram"]["counts"]) == len(finite)


@FUZZ
@given(
    values=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=100),
    chunk=st.integers(1, 16),
)
def test_tensor_stats_of_any_int64(values, chunk):
    stats = tensor_stats(np.array(values, dtype=np.int64), bins=5, chunk_elements=chunk)
    assert (stats["min"], stats["max"]) == (min(values), max(values))
    assert sum(stats["histogram"]["counts"]) == len(values)
