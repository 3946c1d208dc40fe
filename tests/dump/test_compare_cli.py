"""``aclmon compare`` on hand-made dump directories: every row with metrics or a reason,
msaccucmp's optional columns, -op detail files, and one clear error for bad arguments."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pytest
from dumpfixtures import T, dump_bytes, run_cli, write
from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon import cli
from aclmon.dump import proto_enums as pe
from aclmon.dump.compare.command import configure_compare
from aclmon.dump.compare.fusionrule import read_fusion_rule
from aclmon.errors import AclmonError

TS = 1_700_000_000_000_000


def main(argv: list[str]) -> int:
    """cli.main for this subcommand only (other packages' work cannot break these tests)."""
    return run_cli(argv, {"compare": configure_compare})


def test_registered_with_the_dispatcher():
    registered = {name: module for name, module, _help in cli.COMMANDS}
    assert registered["compare"] == "aclmon.dump.compare.command"


def f32(values, shape=None) -> T:
    array = np.asarray(values, dtype="<f4")
    return T(array.tobytes(), dtype=pe.DT_FLOAT, fmt=pe.FORMAT_ND, shape=shape or array.shape)


def f16(values) -> T:
    array = np.asarray(values, dtype="<f2")
    return T(array.tobytes(), dtype=pe.DT_FLOAT16, fmt=pe.FORMAT_ND, shape=array.shape)


def op(directory: Path, op_type: str, name: str, task: int, inputs=(), outputs=(), ts=None) -> Path:
    file_name = f"{op_type}.{name.replace('/', '_')}.{task}.0.{ts or TS + task}"
    return write(directory, file_name, dump_bytes(inputs, outputs, op_name=name))


def run(tmp_path: Path, capsys, *args: str) -> tuple[int, dict, list[dict[str, str]], list[str]]:
    code = main(["compare", "-m", os.fspath(tmp_path / "mine"), "-g", os.fspath(tmp_path / "gold"),
                 "-out", os.fspath(tmp_path / "out"), "--json", *args])  # fmt: skip
    captured = capsys.readouterr()
    if code:
        return code, {"error": captured.err}, [], []
    result = json.loads(captured.out)
    with open(result["result_file"], newline="", encoding="utf-8") as handle:
        records = list(csv.reader(handle))
    # the second DataType/Address columns are the golden's: keep both apart
    keys = [
        f"Golden{name}" if name in records[0][:position] else name
        for position, name in enumerate(records[0])
    ]
    return code, result, [dict(zip(keys, r, strict=True)) for r in records[1:]], records[0]


def row_of(rows: list[dict[str, str]], tensor: str) -> dict[str, str]:
    return next(r for r in rows if r["TensorIndex"] == tensor)


def test_every_mismatch_is_a_row_that_says_why(tmp_path, capsys):
    mine, gold = tmp_path / "mine", tmp_path / "gold"
    same = f32([1, 2, 3, 4])
    op(mine, "Add", "ok", 1, [same], [same])
    op(gold, "Add", "ok", 1, [same], [same])
    op(mine, "Relu", "lonely", 2, [], [same])  # no golden operator
    op(gold, "Relu", "only_golden", 9, [], [same])  # no NPU operator
    op(mine, "Mul", "shapes", 3, [], [f32([1, 2, 3])])  # msaccucmp drops this silently
    op(gold, "Mul", "shapes", 3, [], [f32([1, 2, 3, 4])])
    op(mine, "Cast", "dtypes", 4, [], [f16([1, 2, 3])])
    op(gold, "Cast", "dtypes", 4, [], [f32([1, 2, 3])])
    op(mine, "Split", "counts", 5, [], [same, same])
    op(gold, "Split", "counts", 5, [], [same])
    op(mine, "Zero", "zeros", 6, [], [f32([0, 0, 0])])
    op(gold, "Zero", "zeros", 6, [], [f32([0, 0, 1])])
    op(mine, "Nothing", "empty_op", 10, [], [])
    op(mine, "Bad", "nan", 7, [], [f32([1, np.nan, np.inf])])
    op(gold, "Bad", "nan", 7, [], [f32([1, 2, 3])])
    truncated = dump_bytes([], [same], op_name="cut")
    write(mine, f"Cut.cut.8.0.{TS + 8}", truncated[:-6])  # cut in the middle of its tensor
    op(gold, "Cut", "cut", 8, [], [same])
    code, result, rows, header = run(tmp_path, capsys)
    assert code == 0
    for row in rows:
        metrics = [row[k] for k in header[10:20]]
        assert all(v != "NaN" for v in metrics) or row["CompareFailReason"], row
    lonely = next(r for r in rows if r["NPUDump"] == "lonely")
    assert lonely["GroundTruth"] == "*" and lonely["TensorIndex"] == "NaN"
    assert (
        'There is no the ground truth dump file for the op "lonely"' in lonely["CompareFailReason"]
    )
    golden_only = next(r for r in rows if r["GroundTruth"] == "only_golden")
    assert (
        golden_only["NPUDump"] == "*"
        and "no the my output dump file" in golden_only["CompareFailReason"]
    )
    shapes = row_of(rows, "shapes:output:0")
    assert shapes["CosineSimilarity"] == "NaN"
    assert "Due to the different shapes on the left and right" in shapes["CompareFailReason"]
    dtypes = row_of(rows, "dtypes:output:0")
    assert dtypes["DataType"] == "float16" and dtypes["CosineSimilarity"] == "1.000000"
    assert "data types differ (float16 vs float32)" in dtypes["CompareFailReason"]
    extra = row_of(rows, "counts:output:1")
    assert "The number of output does not match (2 vs 1)" in extra["CompareFailReason"]
    assert "no the ground truth dump file for counts:output:1" in extra["CompareFailReason"]
    assert "All the data is zero in" in row_of(rows, "zeros:output:0")["CompareFailReason"]
    nan = row_of(rows, "nan:output:0")
    assert "my output has 1 NaN and 1 Inf" in nan["CompareFailReason"]
    status = {r["tensor_index"]: r["status"] for r in result["rows"]}
    assert status["nan:output:0"] == "fail" and status["ok:output:0"] == "pass"
    assert (
        "no input or output tensor"
        in next(r for r in rows if r["NPUDump"] == "empty_op")["CompareFailReason"]
    )
    cut = next(r for r in rows if r["NPUDump"] == "cut")
    assert "Cut.cut.8.0." in cut["CompareFailReason"]  # the reader's message names the file
    assert "the file ends" in cut["CompareFailReason"] or "needs" in cut["CompareFailReason"]
    assert result["first_divergent"]["tensor_index"] == "zeros:output:0"  # the earliest failure


def test_optional_columns_and_algorithm_choice(tmp_path, capsys):
    mine, gold = tmp_path / "mine", tmp_path / "gold"
    for task in range(1, 6):
        op(mine, "Add", f"op{task}", task, [], [f16([1.0, 65504.0 if task == 2 else 2.0])])
        op(gold, "Add", f"op{task}", task, [], [f16([1.0, 2.0])])
    code, _result, rows, header = run(tmp_path, capsys, "-alg", "3,0", "-r", "2,-1,2", "--overflow")
    assert code == 0
    assert header == [
        "Index", "OpSequence", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType",
        "Address", "TensorIndex", "Shape", "OverFlow", "RelativeEuclideanDistance", "CosineSimilarity",
        "CompareFailReason",
    ]  # fmt: skip
    assert [r["OpSequence"] for r in rows] == ["2", "4", "5"]
    assert [r["OverFlow"] for r in rows] == ["YES", "NO", "NO"]
    code, _result, rows, header = run(tmp_path, capsys, "-s", "1,3", "-max", "1")
    assert [r["NPUDump"] for r in rows] == ["op1", "op3"]
    assert all(r["MaxAbsoluteError"] == "0.000000" for r in rows)


def test_single_operator_detail_writes_msaccucmp_files(tmp_path, capsys):
    mine, gold = tmp_path / "mine", tmp_path / "gold"
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    y = x.copy()
    y[1, 2, 3] += 5
    y[0, 0, 1] -= 0.5
    op(mine, "Conv2D", "net/conv", 1, [f32(x)], [f32(x * 2)])
    op(gold, "Conv2D", "net/conv", 1, [f32(y)], [f32(x * 2)])
    code, result, _rows, _header = run(tmp_path, capsys, "-op", "net/conv", "-i", "0", "-n", "2")
    assert code == 0
    (detail,) = result["details"]
    assert detail["worst"][0]["position"] == [1, 2, 3] and detail["worst"][0]["abs_error"] == 5.0
    assert detail["worst"][1]["position"] == [0, 0, 1]
    out = tmp_path / "out"
    assert (out / "net_conv_input_0_summary.txt").read_text().startswith("TotalCount:24\n")
    topn = (out / "net_conv_input_0_absolute_error_topn.csv").read_text().splitlines()
    assert (
        topn[0] == "Index,N C D H W,NPUDump,GroundTruth,AbsoluteError,RelativeError"
        or topn[0] == "Index,N C H W,NPUDump,GroundTruth,AbsoluteError,RelativeError"
    )
    assert topn[1].startswith("23,1 2 3 0,23.000000\t,28.000000\t,5.000000\t")
    np.testing.assert_array_equal(np.load(out / "net_conv_input_0.npy"), x)
    code = main(["compare", "-m", os.fspath(mine), "-g", os.fspath(gold), "-op", "nope",
                 "-out", os.fspath(out)])  # fmt: skip
    assert code == 1 and "-op nope: no operator of that name" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args,message",
    [
        (["-alg", "12"], "-alg 12: no algorithm"),
        (["-r", "0,-1,1"], "-r: start 0 is out of range"),
        (["-r", "1,2"], "expected"),
        (["-r", "1,-1,1", "-s", "1"], "-r and -s cannot be used together"),
        (["-o", "0"], "-o is allowed only together with -op"),
        (["--threshold", "cos"], "expected NAME=NUMBER"),
        (["--threshold", "speed=1"], "unknown metric"),
        (["-n", "0"], "-n 0: must be in [1, 10000]"),
    ],
)
def test_bad_arguments_get_one_clear_message(tmp_path, capsys, args, message):
    for side in ("mine", "gold"):
        op(tmp_path / side, "Add", "a", 1, [], [f32([1, 2])])
        op(tmp_path / side, "Add", "b", 2, [], [f32([1, 2])])
    code, result, _rows, _header = run(tmp_path, capsys, *args)
    assert code == 1 and message in result["error"]
    assert "Traceback" not in result["error"]


def test_missing_and_empty_directories(tmp_path, capsys):
    (tmp_path / "mine").mkdir()
    (tmp_path / "gold").mkdir()
    code, result, _, _ = run(tmp_path, capsys)
    assert code == 1 and "no operator dumps" in result["error"]
    op(tmp_path / "mine", "Add", "a", 1, [], [f32([1])])
    code, result, _, _ = run(tmp_path, capsys)
    assert (
        code == 1 and "no operator dumps, statistics CSVs or golden .npy files" in result["error"]
    )
    code = main(["compare", "-m", os.fspath(tmp_path / "nope"), "-g", os.fspath(tmp_path)])
    assert code == 1 and "-m" in capsys.readouterr().err


def test_npy_goldens_through_a_fusion_rule(tmp_path, capsys):
    """A fused NPU operator (conv + bn) against framework goldens of the original ops."""
    mine, gold = tmp_path / "mine", tmp_path / "gold"
    data = np.linspace(-1, 1, 8, dtype=np.float32)
    out = np.tanh(data)
    op(mine, "Conv2D", "fused/conv_bn", 1, [f32(data)], [f32(out)])
    gold.mkdir()
    np.save(gold / f"input_data.0.{TS}.npy", data)
    np.save(gold / f"bn.0.{TS}.npy", out * 1.5)  # the golden says bn went wrong
    (gold / "bad.0.1.npy").write_bytes(b"not a numpy file")
    rule = {"graph": [{"op": [
        {"name": "fused/conv_bn", "type": "Conv2D", "input": ["input_data:0", "w:0", "x:-1"],
         "attr": [{"key": "_datadump_original_op_names", "value": {"list": {"s": ["conv", "bn"]}}}],
         "output_desc": [{"attr": [{"key": "_datadump_origin_name", "value": {"s": "bn"}},
                                   {"key": "_datadump_origin_output_index", "value": {"i": 0}}]}]},
    ]}]}  # fmt: skip
    rule_path = tmp_path / "fusion.json"
    rule_path.write_text(json.dumps(rule))
    code, result, rows, _header = run(tmp_path, capsys, "-f", os.fspath(rule_path))
    assert code == 0
    inp, outp = rows
    assert inp["GroundTruth"] == "conv,bn" and inp["NPUDump"] == "fused/conv_bn"
    assert inp["CosineSimilarity"] == "1.000000"
    assert outp["TensorIndex"] == "fused/conv_bn:output:0"
    assert float(outp["RelativeEuclideanDistance"]) == pytest.approx(1 / 3, abs=1e-5)
    assert result["first_divergent"]["tensor_index"] == "fused/conv_bn:output:0"
    rule_path.write_text('{"graph": [{"op": [{"name": 3}]}]}')
    code, result, _, _ = run(tmp_path, capsys, "-f", os.fspath(rule_path))
    assert code == 1 and "fusion.json: not a fusion rule" in result["error"]


def test_a_corrupt_golden_npy_is_a_row_with_its_reason(tmp_path, capsys):
    op(tmp_path / "mine", "Relu", "relu", 1, [], [f32([1, 2])])
    (tmp_path / "gold").mkdir()
    (tmp_path / "gold" / f"relu.0.{TS}.npy").write_bytes(b"\x93NUMPY garbage")
    code, _result, rows, _ = run(tmp_path, capsys)
    assert code == 0
    (row,) = rows
    assert row["CosineSimilarity"] == "NaN" and "cannot read" in row["CompareFailReason"]


def test_formula_like_names_are_defused():
    from aclmon.dump.compare.rows import guarded

    assert guarded("=cmd|' /C calc'!A0") == " =cmd|' /C calc'!A0"
    assert guarded("-1.5") == "-1.5" and guarded("conv1") == "conv1"


_SCALAR = st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=6)
_ANY = st.recursive(
    _SCALAR,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
_KEYS = st.sampled_from(
    [
        "_datadump_original_op_names",
        "_datadump_origin_name",
        "_datadump_origin_output_index",
        "other",
    ]
)
_VALUE = (
    _ANY
    | st.fixed_dictionaries({"s": _ANY})
    | st.fixed_dictionaries({"i": _ANY})
    | (st.fixed_dictionaries({"list": st.fixed_dictionaries({"s": st.lists(_SCALAR, max_size=3)})}))
)
_ATTRS = st.lists(st.fixed_dictionaries({"key": _KEYS | _ANY, "value": _VALUE}), max_size=3) | _ANY
_OP = st.fixed_dictionaries(
    {"name": st.text(max_size=5) | _ANY, "type": st.text(max_size=5) | _ANY},
    optional={
        "input": st.lists(
            st.text(max_size=5) | st.sampled_from(["a:0", "b:-1", ":1", "c:x"]) | _ANY, max_size=3
        )
        | _ANY,
        "attr": _ATTRS,
        "output_desc": st.lists(st.fixed_dictionaries({"attr": _ATTRS}) | _ANY, max_size=2) | _ANY,
    },
)
#: fusion rules that are mostly well-formed, with wrong types and values anywhere
_RULES = st.fixed_dictionaries({"graph": st.lists(st.fixed_dictionaries({"op": st.lists(_OP, max_size=3) | _ANY})
                                                  | _ANY, max_size=2) | _ANY}) | _ANY  # fmt: skip


@settings(deadline=None, max_examples=400)
@given(_RULES)
def test_fusion_rule_parser_never_raises_anything_else(tmp_path_factory, value):
    path = tmp_path_factory.mktemp("rule") / "rule.json"
    path.write_text(json.dumps(value))
    try:
        rule = read_fusion_rule(path)
    except AclmonError as exc:
        assert "rule.json" in str(exc)
    else:
        assert len(rule) >= 0


@settings(deadline=None, max_examples=200)
@given(st.binary(max_size=300))
def test_fusion_rule_parser_on_random_bytes(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("rule") / "rule.json"
    path.write_bytes(data)
    with pytest.raises(AclmonError):
        read_fusion_rule(path)


def test_tensors_against_statistics_only_is_one_clear_error(tmp_path, capsys):
    op(tmp_path / "mine", "Add", "a", 1, [], [f32([1, 2])])
    (tmp_path / "gold").mkdir()
    (tmp_path / "gold" / f"Add.a.1.0.{TS}.csv").write_text(
        "Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,Avg Value,"
        "Count,Nan Count,Negative Inf Count,Positive Inf Count\nOutput,0,8,DT_FLOAT,ND,2,2,1,1.5,2,0,0,0\n"
    )
    code, result, _, _ = run(tmp_path, capsys)
    assert code == 1 and "statistics CSVs only, no operator dumps" in result["error"]


def test_the_earliest_failure_is_named_when_no_operator_qualifies(tmp_path, capsys):
    op(tmp_path / "mine", "Relu", "r", 1, [f32([5, 6])], [f32([5, 6])])
    op(tmp_path / "gold", "Relu", "r", 1, [f32([1, 2])], [f32([1, 2])])
    code = main(["compare", "-m", os.fspath(tmp_path / "mine"), "-g", os.fspath(tmp_path / "gold"),
                 "-out", os.fspath(tmp_path)])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "the earliest failure is r:input:0 (Relu)" in out
