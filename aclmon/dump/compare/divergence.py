"""The first divergent operator, and the overflows at or before it.

In execution order (dump timestamp, then task id), the first divergent
operator is the earliest whose output fails the pass lines while none of its
compared inputs does: where the error starts rather than where it shows up
downstream. When the dumps hold no inputs (``dump_mode: output``) there is
nothing to clear the inputs with, but they are outputs of earlier operators,
all of which passed, or the model's own inputs. The same rule applies to the
rows of a statistics-only compare (their verdicts are made there).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from aclmon.dump.compare.rows import NONFINITE, CompareRow
from aclmon.dump.compare.thresholds import FAIL, Thresholds


@dataclass(frozen=True)
class Divergence:
    row: CompareRow  # the first failing output of the operator
    inputs_compared: int  # how many of its inputs were compared (and passed)
    described: tuple[str, ...]  # "CosineSimilarity 0.912345 < 0.99", ...

    @property
    def op_name(self) -> str:
        return self.row.op_name

    def to_json(self) -> dict[str, Any]:
        row = self.row
        return {
            "op_name": row.op_name,
            "npu_dump": row.npu_dump,
            "op_type": row.op_type,
            "index": row.index,
            "sequence": row.sequence,
            "tensor_index": row.tensor_index,
            "failing": {
                name: row.values.get(name, "") for name in row.failing if name != NONFINITE
            },
            "nonfinite": NONFINITE in row.failing,
            "described": list(self.described),
            "inputs_compared": self.inputs_compared,
            "my_file": row.my_file,
            "golden_file": row.golden_file,
        }

    def text(self) -> str:
        row = self.row
        why = "; ".join(self.described)
        count = self.inputs_compared
        inputs = (
            f"its {count} compared input{'s pass' if count > 1 else ' passes'}"
            if count
            else "its inputs were not compared (no input dumps)"
        )
        return (
            f"first divergent operator: {row.op_name} ({row.op_type or 'unknown type'}), "
            f"{row.tensor_index}: {why}; {inputs}\n"
            f"  my dump:     {row.my_file}\n  golden dump: {row.golden_file}"
        )


def describe(row: CompareRow, thresholds: Thresholds) -> tuple[str, ...]:
    out = []
    for name in row.failing:
        if name == NONFINITE:
            out.append("NaN/Inf values that the golden does not have")
        elif name in thresholds.lines:
            out.append(thresholds.describe(name, row.values.get(name, "")))
        else:
            out.append(name)
    return tuple(out)


def first_divergent(rows: Sequence[CompareRow], thresholds: Thresholds) -> Divergence | None:
    """The earliest operator whose output fails while its compared inputs pass;
    ``rows`` in execution order (an operator's rows together)."""
    by_op: dict[int, list[CompareRow]] = {}
    for row in rows:
        by_op.setdefault(row.sequence, []).append(row)
    for op_rows in by_op.values():
        inputs = [r for r in op_rows if r.role == "input" and r.values]
        outputs = [r for r in op_rows if r.role == "output"]
        failed = [r for r in outputs if r.status == FAIL]
        if not failed or any(r.status == FAIL for r in inputs):
            continue
        compared = sum(1 for r in inputs if r.status != "skip")
        return Divergence(failed[0], compared, describe(failed[0], thresholds))
    return None


@dataclass(frozen=True)
class OverflowNote:
    """An overflow record that points at an operator at or before the first divergent one."""

    file: str
    op_name: str
    op_type: str
    task_id: int
    position: str  # "at" | "before"

    def text(self) -> str:
        where = (
            "the first divergent operator itself"
            if self.position == "at"
            else ("an operator before the first divergent one")
        )
        return (
            f"overflow: {self.file} reports an overflow in {self.op_name} ({self.op_type}, "
            f"task {self.task_id}), {where}"
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def overflow_notes(links: Iterable[Any], divergence: Divergence | None) -> list[OverflowNote]:
    """The overflow links (``aclmon.dump.index.OverflowLink``) whose operator ran at or
    before the first divergent operator, earliest first."""
    if divergence is None:
        return []
    limit = divergence.row.order
    notes: list[tuple[tuple[int, int], OverflowNote]] = []
    seen: set[tuple[str, str]] = set()
    for link in links:
        target = link.op_dump
        if target is None or target.name is None:
            continue
        order = (target.name.timestamp, target.name.task_id)
        if order > limit:
            continue
        key = (link.overflow.path, target.path)
        if key in seen:
            continue
        seen.add(key)
        same = target.name.op_name == divergence.row.npu_dump
        note = OverflowNote(
            link.overflow.path,
            target.name.op_name,
            target.name.op_type,
            target.name.task_id,
            "at" if same else "before",
        )
        notes.append((order, note))
    return [note for _, note in sorted(notes, key=lambda item: item[0])]
