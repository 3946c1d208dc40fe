"""tensor_stats (chunked), stats CSV, classify/summarize and the directory index."""

from __future__ import annotations

import json
import math
import struct

import ml_dtypes
import numpy as np
import pytest
from dumpfixtures import T, dump_bytes, nano_bytes, opdebug_new, opdebug_old, write

from aclmon.dump import DumpIndex, classify, read_stats_csv, summarize, tensor_stats
from aclmon.errors import DecodeError


def f32(*values):
    return struct.pack(f"<{len(values)}f", *values)


def test_stats_match_numpy_and_do_not_depend_on_chunking():
    rng = np.random.default_rng(7)
    x = rng.normal(3.0, 2.0, size=10_001).astype(np.float32)
    x[[5, 9]] = np.nan
    x[11] = np.inf
    x[12] = -np.inf
    x[13:20] = 0
    finite = x[np.isfinite(x)].astype(np.float64)
    whole = tensor_stats(x, bins=10)
    chunked = tensor_stats(x, bins=10, chunk_elements=333)
    for stats in (whole, chunked):
        assert (stats["nan"], stats["pos_inf"], stats["neg_inf"], stats["zeros"]) == (2, 1, 1, 7)
        assert stats["finite"] == finite.size and stats["count"] == x.size
        assert stats["min"] == finite.min() and stats["max"] == finite.max()
        assert math.isclose(stats["mean"], finite.mean(), rel_tol=1e-12)
        assert math.isclose(stats["std"], finite.std(), rel_tol=1e-9)
        assert stats["histogram"]["counts"] == np.histogram(finite, bins=10)[0].tolist()
        assert stats["first"][:5] == [
            float(v) if i not in (5,) else "nan" for i, v in enumerate(x[:5])
        ]
    assert whole == chunked or all(
        whole[k] == chunked[k] for k in whole if k not in ("mean", "std")
    )
    json.dumps(whole)  # plain values only


def test_stats_of_integers_bools_bf16_and_empty():
    ints = tensor_stats(np.array([[-3, 0], [5, 0]], dtype=np.int8), bins=2)
    assert (ints["min"], ints["max"], ints["zeros"], ints["nan"]) == (-3, 5, 2, 0)
    big = tensor_stats(np.array([2**63 - 1, -(2**63)], dtype=np.int64))
    assert (big["min"], big["max"]) == (-(2**63), 2**63 - 1)
    assert ints["shape"] == [2, 2] and ints["first"] == [-3, 0, 5, 0]
    assert sum(ints["histogram"]["counts"]) == 4
    bools = tensor_stats(np.array([True, False, True]))
    assert bools["mean"] == pytest.approx(2 / 3) and bools["first"] == [True, False, True]
    bf = tensor_stats(np.array([1, 2, np.nan], dtype=ml_dtypes.bfloat16))
    assert (bf["min"], bf["max"], bf["nan"]) == (1.0, 2.0, 1)
    empty = tensor_stats(np.zeros((0, 3), np.float32))
    assert empty["min"] is None and empty["histogram"] == {"edges": [], "counts": []}
    constant = tensor_stats(np.full(4, 2.5, np.float32), bins=3)
    assert constant["histogram"] == {"edges": [2.5, 2.5], "counts": [4]}
    complex_stats = tensor_stats(np.array([3 + 4j], np.complex64))
    assert complex_stats["of"] == "magnitude" and complex_stats["max"] == 5.0


STATS_CSV = (
    "Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,Avg Value,Count,"
    "Nan Count,Negative Inf Count,Positive Inf Count\n"
    "Input,0,16,DT_FLOAT,NCHW,1x2x2x1,4,1,2.5,4,0,0,0\n"
    "Output,0,4,DT_FLOAT,ND,-,7.5,7.5,7.5,1,0,0,1\n"
)


def test_stats_csv(tmp_path):
    path = write(tmp_path, "Add.add.1.2.1700000000000000.csv", STATS_CSV.encode())
    rows = read_stats_csv(path)
    assert (
        rows[0]["Shape"] == [1, 2, 2, 1]
        and rows[0]["Max Value"] == 4.0
        and rows[0]["Data Size"] == 16
    )
    assert rows[1]["Shape"] == [] and rows[1]["Positive Inf Count"] == 1
    assert classify(path) == "stats"
    summary = summarize(path)
    assert summary["kind"] == "stats" and summary["row_count"] == 2


def test_stats_csv_errors(tmp_path):
    with pytest.raises(DecodeError, match="not a stats CSV"):
        read_stats_csv(write(tmp_path, "a.csv", b"x,y\n1,2\n"))
    with pytest.raises(DecodeError, match="fields"):
        read_stats_csv(write(tmp_path, "b.csv", b"Input/Output,Data Type\nInput\n"))
    with pytest.raises(DecodeError, match="empty"):
        read_stats_csv(write(tmp_path, "c.csv", b""))


def test_classify(tmp_path):
    op = write(tmp_path, "Add.add.1.2.1700000000000000", dump_bytes(outputs=[T(f32(1), shape=[1])]))
    over = write(
        tmp_path,
        "Opdebug.Node_OpDebug.1.2.1700000000000000",
        dump_bytes(outputs=[T(opdebug_old({}), dtype=4)]),
    )
    over_ci = write(tmp_path, "OpDebug.Node_Opdebug.1.2.1700000000000000", over.read_bytes())
    nano = write(tmp_path, "Add.n.1.2.1700000000000000", nano_bytes([], []))
    v1 = write(tmp_path, "Add.v1.1.2.1700000000000000", b"\x0a\x032.0\x10\x01\x32\x01a")
    assert [classify(p) for p in (op, over, over_ci, nano, v1)] == [
        "op-dump",
        "overflow",
        "overflow",
        "nano",
        "op-dump",
    ]
    assert classify(write(tmp_path, "x.npy", b"\x93NUMPY" + b"\x00" * 20)) is None
    assert classify(write(tmp_path, "short", b"\x01")) is None
    assert classify(tmp_path / "missing") is None
    assert classify(tmp_path) is None


def test_summarize_op_dump_overflow_and_bad_file(tmp_path):
    op = write(
        tmp_path,
        "Add.add.1.2.1700000000000000",
        dump_bytes(outputs=[T(f32(1, 2), shape=[2])], op_name="a/add"),
    )
    summary = summarize(op)
    assert (
        summary["kind"] == "op-dump"
        and summary["op_type"] == "Add"
        and summary["op_name"] == "a/add"
    )
    assert (summary["task_id"], summary["stream_id"], summary["timestamp"]) == (
        1,
        2,
        1700000000000000,
    )
    assert summary["tensors"] == [
        {"role": "output", "index": 0, "dtype": "DT_FLOAT", "format": "ND", "shape": [2],
         "original_shape": [], "size": 8}
    ]  # fmt: skip
    json.dumps(summary)
    over = write(
        tmp_path,
        "Opdebug.Node_OpDebug.9.2.1700000000000001",
        dump_bytes(outputs=[T(opdebug_new(1, [0, 2, 7, 0, 0, 0, 0, 0, 0, 0, 0x20]), dtype=4)]),
    )
    summary = summarize(over)
    assert summary["kind"] == "overflow"
    assert summary["records"][0]["record"]["acc_list"]["data"]["task_id"] == 7
    assert summary["records"][0]["explained"] == [
        "AIV status: floating-point computation overflow (0x020)"
    ]
    json.dumps(summary)
    bad = write(tmp_path, "Add.bad.1.2.1700000000000000", struct.pack("<Q", 4) + b"\x0a\x09ab")
    summary = summarize(bad)
    assert "error" in summary and "Add.bad" in summary["error"]
    assert "error" in summarize(tmp_path / "missing")


def test_dump_index_links_overflow_to_op_dump(tmp_path):
    step = tmp_path / "20200808163566" / "0" / "resnet" / "11" / "0"
    other = tmp_path / "20200808163566" / "0" / "resnet" / "11" / "1"
    write(step, "Conv2D.conv1.7.2.1700000000000000", dump_bytes(outputs=[T(f32(1), shape=[1])]))
    write(other, "Conv2D.conv1.7.2.1700000000000100", dump_bytes(outputs=[T(f32(1), shape=[1])]))
    write(step, "Relu.relu.8.2.1700000000000001", dump_bytes(outputs=[T(f32(1), shape=[1])]))
    write(step, "Opdebug.Node_OpDebug.3.2.1700000000000002",
          dump_bytes(outputs=[T(opdebug_new(0, [0, 2, 7, 0, 0, 0, 0, 0, 0, 0, 0x20]), dtype=4)]))  # fmt: skip
    write(other, "Opdebug.Node_OpDebug.4.2.1700000000000102",
          dump_bytes(outputs=[T(opdebug_old({256 + 8: 2, 256 + 16: 7, 1040: 0x10}), dtype=4)]))  # fmt: skip
    write(step, "Opdebug.Node_OpDebug.5.2.1700000000000003",
          dump_bytes(outputs=[T(opdebug_new(0, [0, 2, 99, 0, 0, 0, 0, 0, 0, 0, 0x20]), dtype=4)]))  # fmt: skip
    write(tmp_path, "notes.txt", b"hello")
    write(tmp_path, "flat.Add.1.1.1700000000000000", b"\x00" * 4)
    write(tmp_path, "Flat.f.1.1.1700000000000009", dump_bytes(outputs=[T(f32(1), shape=[1])]))
    index = DumpIndex(tmp_path)
    assert len(index.op_dumps) == 4 and len(index.overflows) == 3
    assert all(f.kind != "stats" for f in index.files)
    by_name = {link.overflow.path.split("/")[-1]: link for link in index.links}
    new = by_name["Opdebug.Node_OpDebug.3.2.1700000000000002"]
    assert new.op_dump is not None and new.op_dump.path.endswith(
        "0/Conv2D.conv1.7.2.1700000000000000"
    )
    assert new.op_dump.parts == ("20200808163566", "0", "resnet", "11", "0")
    assert new.op_dump.location == {
        "time": "20200808163566", "device_id": 0, "model_name": "resnet", "model_id": 11, "step": 0,
    }  # fmt: skip
    assert next(f for f in index.files if f.parts == ()).location == {}
    old = by_name["Opdebug.Node_OpDebug.4.2.1700000000000102"]
    assert old.op_dump is not None and old.op_dump.path.endswith(
        "1/Conv2D.conv1.7.2.1700000000000100"
    )
    assert by_name["Opdebug.Node_OpDebug.5.2.1700000000000003"].op_dump is None
    assert [f.name.op_name for f in index.find(7, 2)] == ["conv1", "conv1"]


def test_dump_index_records_broken_overflow_files(tmp_path):
    write(
        tmp_path,
        "Opdebug.Node_OpDebug.3.2.1700000000000002",
        dump_bytes(outputs=[T(b"\x00" * 10, dtype=4)]),
    )
    index = DumpIndex(tmp_path)
    assert index.links == [] and len(index.errors) == 1 and "2048" in index.errors[0]


def test_fifos_are_not_opened(tmp_path):
    import os

    fifo = tmp_path / "Add.add.1.2.1700000000000000"
    os.mkfifo(fifo)
    assert classify(fifo) is None
    assert "not a regular file" in summarize(fifo)["error"]
    assert DumpIndex(tmp_path).files == []


def test_concurrent_readers_agree(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    paths = []
    for i in range(8):
        values = np.arange(1000, dtype=np.float32) * (i + 1)
        paths.append(
            write(
                tmp_path,
                f"Mul.m{i}.{i}.2.1700000000000000",
                dump_bytes(outputs=[T(values.tobytes(), shape=[1000])]),
            )
        )

    def work(path):
        from aclmon.dump import read_dump

        dump = read_dump(path)
        return summarize(path)["tensors"][0]["size"], tensor_stats(dump.outputs[0].array, bins=4)[
            "max"
        ]

    expected = [work(p) for p in paths]
    with ThreadPoolExecutor(max_workers=4) as pool:
        for _ in range(3):
            assert list(pool.map(work, paths)) == expected


def test_device_side_stats_csv_columns(tmp_path):
    text = "Input/Output,Index,Data Size,Data Type,Format,Shape,Count,Max,Min,Nan,L2norm\n" \
           "Output,0,8,DT_FLOAT16,ND,2x2,4,1.5,-1,0,2.5\n"  # fmt: skip
    (row,) = read_stats_csv(write(tmp_path, "x.csv", text.encode()))
    assert (row["Max"], row["Min"], row["Nan"], row["L2norm"], row["Shape"]) == (
        1.5,
        -1.0,
        0,
        2.5,
        [2, 2],
    )


@pytest.mark.parametrize(
    "values",
    [
        [1e300, 1e300, 1e300],
        [1e308, -1e308],
        [np.finfo(np.float64).max, -np.finfo(np.float64).max, 0.0],
        [1.0, np.nextafter(1.0, 2.0)],
        [np.finfo(np.float64).tiny, 0.0],
    ],
)
def test_stats_of_extreme_values_stay_valid_json(values):
    stats = tensor_stats(np.array(values), bins=4)
    json.loads(json.dumps(stats, allow_nan=False))
    assert sum(stats["histogram"]["counts"]) == len(values)


def test_merged_stats_csv_with_op_columns(tmp_path):
    text = "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value\n" \
           "Add,add,1,2,1700000000000000,output,0,4,float32,1,3.5\n"  # fmt: skip
    path = write(tmp_path, "statistic.csv", text.encode())
    assert classify(path) == "stats"
    (row,) = read_stats_csv(path)
    assert (row["Task ID"], row["Slot"], row["Max Value"], row["IO"]) == (1, 0, 3.5, "output")
