"""Statistics-only compare: msprobe's difference rules, CANN's and MindSpore's CSVs,
hostile CSVs."""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon.dump.compare.matching import index_dump_directory
from aclmon.dump.compare.statsmode import read_stats_file, run_stats_compare, stat_difference
from aclmon.dump.compare.thresholds import Thresholds
from aclmon.errors import AclmonError

HOST = (
    "Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,Avg Value,"
    "Count,Nan Count,Negative Inf Count,Positive Inf Count"
)


@pytest.mark.parametrize(
    "npu,bench,diff,relative,fraction",
    [
        ("1.5", "1.5", "0", "0%", 0.0),  # textually equal
        ("3.0", "2.0", "1.0", "50%", 0.5),
        ("1.0", "0.0", "1.0", "inf", math.inf),  # zero bench
        ("nan", "2.0", "Nan", "Nan", math.nan),
        ("inf", "2.0", "inf", "inf", math.inf),
        ("", "2.0", "N/A", "N/A", math.nan),  # the statistic is not in the CSV
    ],
)
def test_difference_rules(npu, bench, diff, relative, fraction):
    got = stat_difference(npu, bench)
    assert got[:2] == (diff, relative)
    assert (math.isnan(got[2]) and math.isnan(fraction)) or got[2] == fraction


def _csv(directory, name, rows, header=HOST):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(header + "\n" + "\n".join(rows) + "\n")


def test_host_csvs_the_first_divergent_operator_and_nan_counts(tmp_path):
    def op(side, name, task, out_max, nan=0):
        _csv(tmp_path / side, f"{name}.{task}.0.{1700000000000000 + task}.csv", [
            "Input,0,8,DT_FLOAT,ND,2,1.0,0.0,0.5,2,0,0,0",
            f"Output,0,8,DT_FLOAT,ND,2,{out_max},0.0,0.5,2,{nan},0,0",
        ])  # fmt: skip

    op("mine", "Add.a", 1, "1.0")
    op("gold", "Add.a", 1, "1.0")
    op("mine", "Mul.b", 2, "3.0")  # 200 % off
    op("gold", "Mul.b", 2, "1.0")
    op("mine", "Relu.c", 3, "1.0", nan=1)
    op("gold", "Relu.c", 3, "1.0")
    result = run_stats_compare(
        index_dump_directory(os.fspath(tmp_path / "mine")),
        os.fspath(tmp_path / "gold"),
        Thresholds(),
    )
    assert [r.status for r in result.rows] == ["pass", "pass", "pass", "fail", "pass", "fail"]
    assert result.first_divergent.row.tensor_index == "b:output:0"
    assert result.first_divergent.row.failing == ("MaxRelativeErr",)
    nan_row = result.rows[-1]
    assert nan_row.failing == ("NaN/Inf",) and "NaN/Inf count 1 against 0" in nan_row.reason


def test_mindspore_merged_statistics(tmp_path):
    header = "Op Type, Op Name, Task ID, Stream ID, Timestamp, IO, Slot, Data Size, Data Type, Shape, Max Value, Min Value, L2Norm Value"
    rows = [
        "Conv2D, Default/conv1, 3, 0, 100, output, 0, 8, float32, 2x1, 2.0, 1.0, 3.0",
        "MatMul, Default/fc, 5, 0, 200, output, 0, 8, float32, 2x1, 4.0, 1.0, 9.0",
    ]
    _csv(tmp_path, "statistic.csv", rows, header)
    tensors = read_stats_file(os.fspath(tmp_path / "statistic.csv"))
    assert [(t.op_key, t.op_type, t.order) for t in tensors] == [
        ("Default_conv1", "Conv2D", (100, 3)), ("Default_fc", "MatMul", (200, 5)),
    ]  # fmt: skip
    assert tensors[0].values["l2norm"] == "3.0" and tensors[0].values["mean"] == ""


@settings(deadline=None, max_examples=300)
@given(
    st.text(alphabet=st.sampled_from(list("Input/Output,Index1.5x\nDataTypeOpNm -")), max_size=200)
)
def test_a_hostile_stats_csv_gives_rows_or_one_clear_error(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("csv") / "Add.add.1.0.1700000000000000.csv"
    path.write_text(text)
    try:
        tensors = read_stats_file(os.fspath(path))
    except AclmonError as exc:
        assert "Add.add.1.0.1700000000000000.csv" in str(exc)
    else:
        assert all(t.role in ("input", "output") for t in tensors)
