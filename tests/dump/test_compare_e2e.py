"""End to end: two simulator runs, one perturbed at a known operator; ``aclmon compare``
names that operator as the first divergent one, in msaccucmp's CSV."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
from goldenpair import PERTURBED_OP, golden_pair, npy_golden, sim_run

from aclmon.cli import main

HEADER = (
    "Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,Address,TensorIndex,Shape,"
    "CosineSimilarity,MaxAbsoluteError,AccumulatedRelativeError,RelativeEuclideanDistance,"
    "KullbackLeiblerDivergence,StandardDeviation,MeanAbsoluteError,RootMeanSquareError,"
    "MaxRelativeError,MeanRelativeError,CompareFailReason"
)


def compare(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["compare", *args])
    return code, capsys.readouterr().out


def read_csv(path: str) -> tuple[bytes, list[dict[str, str]], list[list[str]]]:
    raw = Path(path).read_bytes()
    with open(path, newline="", encoding="utf-8") as handle:
        records = list(csv.reader(handle))
    return raw, [dict(zip(records[0], r, strict=True)) for r in records[1:]], records


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return golden_pair(tmp_path_factory.mktemp("pair"))


def test_compare_names_the_perturbed_operator_first_divergent(pair, tmp_path, capsys):
    perturbed, clean = pair
    code, out = compare(capsys, "-m", os.fspath(perturbed), "-g", os.fspath(clean),
                        "-out", os.fspath(tmp_path), "--json")  # fmt: skip
    assert code == 0
    result = json.loads(out)
    first = result["first_divergent"]
    assert first["op_name"] == PERTURBED_OP and first["op_type"] == "Conv2D"
    assert first["tensor_index"] == "layer1_conv2:output:0"
    assert first["inputs_compared"] == 2  # its inputs were dumped too, and pass
    assert "CosineSimilarity" in first["failing"] or "RelativeEuclideanDistance" in first["failing"]
    assert os.path.basename(first["my_file"]).startswith("Conv2D.layer1_conv2.")
    assert first["golden_file"].startswith(os.fspath(clean))
    # downstream operators fail too, but they are not the first
    failing_ops = {r["npu_dump"] for r in result["rows"] if r["status"] == "fail"}
    assert {"layer1_conv2", "layer1_add", "layer1_relu"} <= failing_ops
    raw, rows, records = read_csv(result["result_file"])
    assert os.path.basename(result["result_file"]).startswith("result_")
    assert raw.split(b"\r\n", 1)[0].decode() == HEADER  # the csv module's excel dialect
    assert ",".join(records[0]) == HEADER
    assert len(rows) == len(result["rows"]) == 29
    for row in rows:  # every row has metrics or says why not
        metrics = [row[k] for k in records[0][10:20]]
        assert all(v not in ("NaN", "") for v in metrics) or row["CompareFailReason"]
    upstream = [r for r in rows if r["NPUDump"] in ("trans_image", "conv1", "relu1")]
    assert upstream and all(r["CosineSimilarity"] == "1.000000" for r in upstream)
    assert [int(r["Index"]) for r in rows] == sorted(int(r["Index"]) for r in rows)


def test_text_output_names_it_too(pair, tmp_path, capsys):
    perturbed, clean = pair
    code, out = compare(capsys, "-m", os.fspath(perturbed), "-g", os.fspath(clean),
                        "-out", os.fspath(tmp_path))  # fmt: skip
    assert code == 0
    assert f"first divergent operator: {PERTURBED_OP} (Conv2D)" in out
    assert "result: " in out


def test_without_input_dumps_and_against_npy_goldens(tmp_path, capsys):
    perturbed, clean = golden_pair(tmp_path / "pair", dump_mode="output")
    code, out = compare(capsys, "-m", os.fspath(perturbed), "-g", os.fspath(clean),
                        "-out", os.fspath(tmp_path), "--json")  # fmt: skip
    first = json.loads(out)["first_divergent"]
    assert code == 0
    assert first["op_name"] == PERTURBED_OP and first["inputs_compared"] == 0
    golden = npy_golden(clean, tmp_path / "npy")
    full, _ = golden_pair(tmp_path / "full")
    _code, out = compare(capsys, "-m", os.fspath(full), "-g", os.fspath(golden),
                        "-out", os.fspath(tmp_path), "--json")  # fmt: skip
    result = json.loads(out)
    assert result["golden_kind"] == "npy"
    assert result["first_divergent"]["op_name"] == PERTURBED_OP
    # a .npy golden has no address: msaccucmp drops that column
    assert result["header"][:8] == [
        "Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType", "TensorIndex",
    ]  # fmt: skip
    conv2_input = next(r for r in result["rows"] if r["tensor_index"] == "layer1_conv2:input:0")
    assert conv2_input["metrics"]["CosineSimilarity"] == "1.000000"  # linked to relu1's output
    weight = next(r for r in result["rows"] if r["tensor_index"] == "layer1_conv2:input:1")
    assert "a weight or a model input" in weight["reason"]


def test_statistics_only_compare_finds_it_as_well(tmp_path, capsys):
    perturbed, clean = golden_pair(tmp_path, dump_data="stats", error=0.5)
    code, out = compare(capsys, "-m", os.fspath(perturbed), "-g", os.fspath(clean),
                        "-out", os.fspath(tmp_path), "--json", "--threshold", "stats=0.1")  # fmt: skip
    assert code == 0
    result = json.loads(out)
    assert result["mode"] == "stats"
    assert result["first_divergent"]["op_name"] == "layer1_conv2"
    _raw, rows, records = read_csv(result["result_file"])
    assert records[0][:8] == [
        "NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "NPU Tensor Shape",
        "Bench Tensor Shape", "Max diff", "Min diff",
    ]  # fmt: skip
    conv = next(r for r in rows if r["NPU Name"] == "layer1_conv2:output:0")
    assert conv["Result"] == "error" and conv["MaxRelativeErr"].endswith("%")
    assert all(r["Result"] == "pass" for r in rows if r["NPU Name"].startswith("conv1:"))


def test_an_overflow_at_the_first_divergent_operator_is_named(tmp_path, capsys):
    # outputs only: the sim's overflow scales what the operator reads and dumps that
    # as its inputs, which would then fail too (its inputs have no golden here)
    clean = sim_run(tmp_path / "clean", [], debug=True, dump_mode="output")
    overflow = [{"kind": "overflow", "op": PERTURBED_OP, "scale": 65504}]
    bad = sim_run(tmp_path / "bad", overflow, debug=True, dump_mode="output")
    code, out = compare(capsys, "-m", os.fspath(bad), "-g", os.fspath(clean),
                        "-out", os.fspath(tmp_path), "--json")  # fmt: skip
    assert code == 0
    result = json.loads(out)
    first = result["first_divergent"]
    assert first["op_name"] == PERTURBED_OP and first["nonfinite"]
    (note,) = result["overflows"]
    assert note["op_name"] == "layer1_conv2" and note["position"] == "at"
    assert os.path.basename(note["file"]).startswith("Opdebug.Node_OpDebug.")
    code, out = compare(
        capsys, "-m", os.fspath(bad), "-g", os.fspath(clean), "-out", os.fspath(tmp_path)
    )
    assert (
        "reports an overflow in layer1_conv2 (Conv2D" in out
        and "the first divergent operator itself" in out
    )
