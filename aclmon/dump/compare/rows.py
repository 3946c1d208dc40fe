"""One row of a compare: a tensor pair (or an operator that could not be paired),
its metrics, its verdict and why; and the CSV msaccucmp writes from such rows.

The CSV is msaccucmp's ``result_{YYYYmmddHHMMSS}.csv``: the same header and
column order (``OpSequence`` after ``Index`` with ``-r``/``-s``, ``OverFlow``
after ``Shape`` with ``--overflow``, no golden ``Address`` when the golden is
``.npy`` data), the same cell spellings (``NaN``, ``*``, ``[d0,d1]``,
``op:output:0``, reasons joined by ``,``), the same excel dialect of Python's
csv module (``\\r\\n`` line ends, quoted cells where a comma is), rows sorted by
``Index``. A cell that is not a number and starts like a spreadsheet formula
gets a leading space, as msaccucmp's own guard does in its lenient mode.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from aclmon.dump.compare import metrics as m

NAN = "NaN"
#: not a metric: the tensor's own values hold NaN/Inf where the golden's do not
NONFINITE = "NaN/Inf"
_FORMULA = re.compile(r"^[＝＋－+\-=%@]|;[＝＋－+\-=%@]")


@dataclass(frozen=True)
class CompareRow:
    index: int  # the Index cell: the operator's position in execution order, from 0
    sequence: int  # 1-based position (the OpSequence cell of -r/-s)
    order: tuple[int, int]  # (dump timestamp, task id) of the NPU dump; golden-only ops last
    op_type: str
    op_name: str  # the operator (the header's name when the dump was read)
    npu_dump: str  # the NPUDump cell ("*": no NPU dump)
    ground_truth: str  # the GroundTruth cell ("*": no golden)
    role: str = ""  # "input" | "output" | "" (a row for the whole operator)
    tensor: int = -1
    my_dtype: str = NAN
    my_address: str = NAN
    golden_dtype: str = NAN
    golden_address: str = NAN
    shape: tuple[int, ...] | None = None  # the NPU tensor's shape as its dump states it
    overflow: str = NAN  # the OverFlow cell (float16 only)
    values: dict[str, str] = field(default_factory=dict)  # metric column -> printed text
    reasons: tuple[str, ...] = ()
    status: str = "skip"  # thresholds.PASS | FAIL | SKIP
    failing: tuple[str, ...] = ()  # metrics over their line (and NONFINITE)
    my_file: str = ""
    golden_file: str = ""

    @property
    def tensor_index(self) -> str:
        """The TensorIndex cell: ``op:output:0``."""
        if not self.role:
            return NAN
        return f"{self.npu_dump}:{self.role}:{self.tensor}"

    @property
    def shape_text(self) -> str:
        return NAN if self.shape is None else "[" + ",".join(str(d) for d in self.shape) + "]"

    @property
    def reason(self) -> str:
        """The CompareFailReason cell."""
        return ",".join(self.reasons)

    def metric(self, name: str) -> str:
        return self.values.get(name, NAN)

    def number(self, name: str) -> float:
        """A metric as a number (``nan`` when it is not one): what a view sorts by."""
        return m.metric_number(self.metric(name))

    def cells(self, layout: CsvLayout) -> list[str]:
        out = [str(self.index)]
        if layout.sequence:
            out.append(str(self.sequence))
        out += [self.op_type or NAN, self.npu_dump, self.my_dtype, self.my_address]
        out += [self.ground_truth, self.golden_dtype]
        if layout.golden_address:
            out.append(self.golden_address)
        out += [self.tensor_index, self.shape_text]
        if layout.overflow:
            out.append(self.overflow)
        out += [self.metric(name) for name in layout.algorithms]
        out.append(self.reason)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "sequence": self.sequence,
            "op_type": self.op_type,
            "op_name": self.op_name,
            "npu_dump": self.npu_dump,
            "ground_truth": self.ground_truth,
            "tensor_index": self.tensor_index,
            "my_dtype": self.my_dtype,
            "my_address": self.my_address,
            "golden_dtype": self.golden_dtype,
            "golden_address": self.golden_address,
            "shape": self.shape_text,
            "overflow": self.overflow,
            "metrics": dict(self.values),
            "reason": self.reason,
            "status": self.status,
            "failing": list(self.failing),
            "my_file": self.my_file,
            "golden_file": self.golden_file,
        }


@dataclass(frozen=True)
class CsvLayout:
    """Which optional columns a result file has."""

    algorithms: tuple[str, ...] = m.ALGORITHMS
    sequence: bool = False  # -r / -s
    overflow: bool = False  # --overflow
    golden_address: bool = True  # False for .npy goldens

    def header(self) -> list[str]:
        out = ["Index"]
        if self.sequence:
            out.append("OpSequence")
        out += ["OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType"]
        if self.golden_address:
            out.append("Address")
        out += ["TensorIndex", "Shape"]
        if self.overflow:
            out.append("OverFlow")
        return out + list(self.algorithms) + ["CompareFailReason"]


def guarded(cell: str) -> str:
    """A cell that a spreadsheet would run as a formula gets a leading space."""
    if not _FORMULA.search(cell):
        return cell
    try:
        float(cell)
    except ValueError:
        return " " + cell
    return cell


def write_rows(out: TextIO, rows: Iterable[CompareRow], layout: CsvLayout) -> int:
    """The result CSV to ``out`` (opened with ``newline=""``), sorted by Index; returns
    the number of rows."""
    writer = csv.writer(out)
    writer.writerow(layout.header())
    count = 0
    for row in sorted(rows, key=lambda r: r.index):
        writer.writerow([guarded(cell) for cell in row.cells(layout)])
        count += 1
    return count


def nonfinite_counts(array: Any) -> tuple[int, int]:
    """(NaN count, Inf count) of a float array (0, 0 for other kinds)."""
    import numpy as np

    if array.dtype.kind not in "fcV":
        return 0, 0
    with np.errstate(all="ignore"):
        values = np.asarray(array, dtype=np.float32) if array.dtype.kind == "V" else array
        nan = int(np.count_nonzero(np.isnan(values)))
        inf = int(np.count_nonzero(np.isinf(values)))
    return nan, inf


def has_nonfinite_text(values: dict[str, str]) -> bool:
    return any(text in ("nan", "inf", "-inf") for text in values.values())


def order_key(row: CompareRow) -> tuple[tuple[int, int], int, int, int]:
    """Execution order: the operator's dump time and task id, then inputs before
    outputs, then the tensor index."""
    return (row.order, row.sequence, 0 if row.role == "input" else 1, row.tensor)


def shape_words(shape: Sequence[int]) -> str:
    """msaccucmp's spelling of a shape in messages: ``(1, 8, 16, 16)``."""
    return "(" + ", ".join(str(d) for d in shape) + ")"


def finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None
