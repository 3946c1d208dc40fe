"""Statistics-only compare: the per-tensor statistics CSVs of ``dump_data: "stats"``.

Tensor dumps cost several times a step and terabytes; with ``dump_data:
"stats"`` CANN writes one small CSV per operator instead (a row per tensor:
max, min, mean, NaN/Inf counts, and with ``dump_stats`` the L2 norm). This
compares such CSVs with a golden run's, as msprobe's statistics mode does:
per statistic the difference ``NPU - Bench`` and its relative form
``|diff / Bench| x 100`` written with a ``%`` (``0`` when the two texts are
equal, ``inf`` when the bench is 0, ``Nan`` when either is NaN, ``N/A`` when a
side lacks the statistic). A tensor fails when one of its relative differences
is over the stats line (default 50 %, ``--threshold stats=0.2``) or it holds
more NaN/Inf than the golden; the first divergent operator follows the same
rule as for tensors. Both sides may also be MindSpore's merged
``statistic.csv`` (``Op Type, Op Name, Task ID, ...``).
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TextIO

from aclmon.dump.compare.divergence import Divergence, first_divergent
from aclmon.dump.compare.matching import DumpDirectory, index_dump_directory
from aclmon.dump.compare.rows import NONFINITE, CompareRow, guarded, order_key
from aclmon.dump.compare.thresholds import FAIL, PASS, SKIP, Thresholds
from aclmon.dump.naming import parse_dump_name, sanitize_name
from aclmon.errors import AclmonError

STATISTICS = ("max", "min", "mean", "l2norm")
DIFF_COLUMNS = ("Max diff", "Min diff", "Mean diff", "L2norm diff")
RELATIVE_COLUMNS = ("MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr")
HEADER = (
    "NPU Name",
    "Bench Name",
    "NPU Dtype",
    "Bench Dtype",
    "NPU Tensor Shape",
    "Bench Tensor Shape",
    *DIFF_COLUMNS,
    *RELATIVE_COLUMNS,
    "NPU max",
    "NPU min",
    "NPU mean",
    "NPU l2norm",
    "Bench max",
    "Bench min",
    "Bench mean",
    "Bench l2norm",
    "Result",
    "Err_message",
)
NOT_AVAILABLE = "N/A"
#: the CSV column (host-side, device-side, MindSpore spellings) of each statistic
_SOURCES = {
    "max": ("Max Value", "Max"),
    "min": ("Min Value", "Min"),
    "mean": ("Avg Value", "Avg"),
    "l2norm": ("L2Norm Value", "L2norm", "L2Norm"),
}
_NAN_COUNTS = ("Nan Count", "Nan")
_INF_COUNTS = (("Negative Inf Count", "Negative Inf"), ("Positive Inf Count", "Positive Inf"))


@dataclass(frozen=True)
class TensorStats:
    op_key: str
    op_type: str
    role: str  # "input" | "output"
    index: int
    dtype: str
    shape: str
    values: dict[str, str]  # statistic -> its text in the CSV ("" when the CSV has none)
    nonfinite: int
    file: str
    order: tuple[int, int]


def _cell(row: dict[str, Any], names: Iterable[str]) -> Any:
    for name in names:
        if name in row:
            return row[name]
    return None


def _count(row: dict[str, Any], names: Iterable[str]) -> int:
    value = _cell(row, names)
    return value if isinstance(value, int) else 0


def _text(value: Any) -> str:
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value).strip()


def _shape(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ",".join(str(d) for d in value) + "]"
    return str(value) if value not in (None, "") else "[]"


def read_stats_file(path: str) -> list[TensorStats]:
    """The tensors of one statistics CSV (raises :class:`AclmonError` for a bad file)."""
    from aclmon.dump.statscsv import read_stats_csv

    rows = read_stats_csv(path)
    base = os.path.basename(path)
    name = parse_dump_name(base[: -len(".csv")] if base.lower().endswith(".csv") else base)
    out = []
    for number, row in enumerate(rows):
        direction = str(_cell(row, ("Input/Output", "IO")) or "").strip().lower()
        index = _cell(row, ("Index", "Slot"))
        if direction not in ("input", "output") or not isinstance(index, int):
            raise AclmonError(f"{base}: row {number + 1}: no Input/Output and index")
        if "Op Name" in row:  # MindSpore's merged statistic.csv: the op is in the row
            key = sanitize_name(str(row["Op Name"]))
            op_type = str(row.get("Op Type", ""))
            order = (_int(row.get("Timestamp")), _int(row.get("Task ID")))
        elif name is not None:
            key, op_type, order = name.op_name, name.op_type, (name.timestamp, name.task_id)
        else:
            raise AclmonError(f"{base}: the file name does not name an operator")
        nonfinite = _count(row, _NAN_COUNTS) + sum(_count(row, n) for n in _INF_COUNTS)
        out.append(
            TensorStats(
                key,
                op_type,
                direction,
                index,
                str(row.get("Data Type", "")),
                _shape(row.get("Shape")),
                {s: _text(_cell(row, _SOURCES[s])) for s in STATISTICS},
                nonfinite,
                path,
                order,
            )
        )
    return out


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


@dataclass
class StatsSide:
    """Every tensor's statistics of one side: (op, role, index) -> the last ones."""

    root: str
    tensors: dict[tuple[str, str, int], TensorStats] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def ops(self) -> list[list[TensorStats]]:
        """The tensors grouped by operator, operators in execution order."""
        by_op: dict[str, list[TensorStats]] = {}
        for tensor in self.tensors.values():
            by_op.setdefault(tensor.op_key, []).append(tensor)
        groups = sorted(by_op.values(), key=lambda g: (max(t.order for t in g), g[0].op_key))
        return [sorted(g, key=lambda t: (t.role != "input", t.index)) for g in groups]


def load_stats(files: Iterable[str], root: str) -> StatsSide:
    side = StatsSide(root)
    for path in files:
        try:
            tensors = read_stats_file(path)
        except AclmonError as exc:
            side.errors.append(str(exc))
            continue
        for tensor in tensors:
            key = (tensor.op_key, tensor.role, tensor.index)
            held = side.tensors.get(key)
            if held is None or held.order <= tensor.order:
                side.tensors[key] = tensor
    return side


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def stat_difference(npu: str, bench: str) -> tuple[str, str, float]:
    """(diff text, relative text, relative as a fraction; nan when it cannot say)."""
    if not npu or not bench:
        return NOT_AVAILABLE, NOT_AVAILABLE, math.nan
    if npu == bench:
        return "0", "0%", 0.0
    a, b = _number(npu), _number(bench)
    if a is None or b is None:
        return NOT_AVAILABLE, NOT_AVAILABLE, math.nan
    if math.isnan(a) or math.isnan(b):
        return "Nan", "Nan", math.nan
    diff = a - b
    if math.isinf(diff) or math.isnan(diff):
        text = "inf" if diff > 0 else ("-inf" if diff < 0 else "Nan")
        return text, "inf" if text != "Nan" else "Nan", math.inf if text != "Nan" else math.nan
    if b == 0:
        return repr(diff), "inf", math.inf
    relative = abs(diff / b)
    return repr(diff), f"{relative * 100:.6g}%", relative


def _row(
    npu: TensorStats, bench: TensorStats | None, index: int, sequence: int, line: float
) -> CompareRow:
    values: dict[str, str] = {f"NPU {s}": npu.values[s] or NOT_AVAILABLE for s in STATISTICS}
    common: dict[str, Any] = dict(
        index=index,
        sequence=sequence,
        order=npu.order,
        op_type=npu.op_type,
        op_name=npu.op_key,
        npu_dump=npu.op_key,
        role=npu.role,
        tensor=npu.index,
        my_dtype=npu.dtype,
        my_file=npu.file,
    )
    if bench is None:
        values.update({c: NOT_AVAILABLE for c in (*DIFF_COLUMNS, *RELATIVE_COLUMNS)})
        values.update({f"Bench {s}": NOT_AVAILABLE for s in STATISTICS})
        return CompareRow(
            ground_truth="*",
            values=values,
            reasons=("No bench data matched.",),
            status=SKIP,
            **common,
        )
    failing: list[str] = []
    judged = False
    for stat, diff_column, rel_column in zip(
        STATISTICS, DIFF_COLUMNS, RELATIVE_COLUMNS, strict=True
    ):
        diff, relative, fraction = stat_difference(npu.values[stat], bench.values[stat])
        values[diff_column], values[rel_column] = diff, relative
        values[f"Bench {stat}"] = bench.values[stat] or NOT_AVAILABLE
        if not math.isnan(fraction):
            judged = True
            if fraction > line:
                failing.append(rel_column)
    reasons = []
    if npu.nonfinite > bench.nonfinite:
        failing.append(NONFINITE)
        reasons.append(f"NaN/Inf count {npu.nonfinite} against {bench.nonfinite} in the bench.")
    if npu.dtype != bench.dtype:
        reasons.append(f"The data types differ ({npu.dtype} vs {bench.dtype}).")
    if npu.shape != bench.shape:
        reasons.append(f"The shapes differ ({npu.shape} vs {bench.shape}).")
    status = FAIL if failing else (PASS if judged else SKIP)
    return CompareRow(
        ground_truth=bench.op_key,
        golden_dtype=bench.dtype,
        values=values,
        reasons=tuple(reasons),
        status=status,
        failing=tuple(failing),
        golden_file=bench.file,
        shape=None,
        **common,
    )


@dataclass
class StatsResult:
    my_root: str
    golden_root: str
    rows: list[CompareRow]
    first_divergent: Divergence | None
    notes: list[str]
    shapes: dict[tuple[int, str, int], tuple[str, str]]  # (sequence, role, index) -> shapes

    def lines(self) -> list[str]:
        fails = sum(1 for r in self.rows if r.status == FAIL)
        out = [
            f"compared the statistics of {len({r.sequence for r in self.rows})} operators of "
            f"{self.my_root} against {self.golden_root}: {len(self.rows)} tensors, {fails} fail"
        ]
        if self.first_divergent is not None:
            out.append(self.first_divergent.text())
        else:
            out.append("no divergent operator found in the statistics")
        return out

    def to_json(self, path: str) -> dict[str, Any]:
        return {
            "mode": "stats",
            "result_file": path,
            "my_dump": self.my_root,
            "golden": self.golden_root,
            "header": list(HEADER),
            "first_divergent": self.first_divergent.to_json() if self.first_divergent else None,
            "notes": self.notes,
            "rows": [r.to_json() for r in self.rows],
        }


def run_stats_compare(mine: DumpDirectory, golden_root: str, thresholds: Thresholds) -> StatsResult:
    golden_dir = index_dump_directory(golden_root)
    if not golden_dir.stats_files:
        raise AclmonError(
            f"{golden_root}: no statistics CSVs to compare {mine.root}'s statistics with "
            "(run the golden with dump_data: stats too)"
        )
    npu = load_stats(mine.stats_files, mine.root)
    bench = load_stats(golden_dir.stats_files, golden_root)
    rows: list[CompareRow] = []
    shapes: dict[tuple[int, str, int], tuple[str, str]] = {}
    for position, group in enumerate(npu.ops()):
        for tensor in group:
            other = bench.tensors.get((tensor.op_key, tensor.role, tensor.index))
            rows.append(_row(tensor, other, position, position + 1, thresholds.stats_line))
            shapes[(position + 1, tensor.role, tensor.index)] = (
                tensor.shape,
                other.shape if other is not None else NOT_AVAILABLE,
            )
    rows.sort(key=order_key)
    notes = [*npu.errors, *bench.errors]
    return StatsResult(
        mine.root, golden_root, rows, first_divergent(rows, thresholds), notes, shapes
    )


def compare_stats_file(
    path: str, bench: StatsSide, position: Callable[[str], int], line: float
) -> list[CompareRow]:
    """The rows of one operator's statistics CSV (a live compare, file by file);
    ``position`` numbers operators in the order they are first seen."""
    rows = []
    for tensor in read_stats_file(path):
        index = position(tensor.op_key)
        other = bench.tensors.get((tensor.op_key, tensor.role, tensor.index))
        rows.append(_row(tensor, other, index, index + 1, line))
    return rows


def write_stats_csv(
    out: TextIO,
    rows: Iterable[CompareRow],
    shapes: dict[tuple[int, str, int], tuple[str, str]] | None = None,
) -> None:
    writer = csv.writer(out)
    writer.writerow(HEADER)
    for row in rows:
        npu_shape, bench_shape = (shapes or {}).get((row.sequence, row.role, row.tensor), ("", ""))
        result = {FAIL: "error", PASS: "pass"}.get(row.status, NOT_AVAILABLE)
        cells = [
            row.tensor_index,
            f"{row.ground_truth}:{row.role}:{row.tensor}"
            if row.ground_truth != "*"
            else NOT_AVAILABLE,
            row.my_dtype,
            row.golden_dtype if row.ground_truth != "*" else NOT_AVAILABLE,
            npu_shape,
            bench_shape,
            *(row.values[c] for c in (*DIFF_COLUMNS, *RELATIVE_COLUMNS)),
            *(row.values[f"NPU {s}"] for s in STATISTICS),
            *(row.values[f"Bench {s}"] for s in STATISTICS),
            result,
            row.reason,
        ]
        writer.writerow([guarded(c) for c in cells])
