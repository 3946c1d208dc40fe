"""Compare a dump directory with a golden: rows in execution order, the verdicts, the
first divergent operator.

:func:`compare_op` makes the rows of one operator (the live comparer calls it
for each dump file as it lands); :func:`run_compare` does a whole directory,
operators in parallel threads (numpy and the file reads release the GIL), and
finds the first divergent operator. Nothing here prints or raises for bad
data: a file that cannot be read, a tensor without golden, shapes that differ,
are rows whose CompareFailReason says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from aclmon.dump import proto_enums as pe
from aclmon.dump.compare import metrics as m
from aclmon.dump.compare.divergence import Divergence, OverflowNote, first_divergent, overflow_notes
from aclmon.dump.compare.fusionrule import FusionRule
from aclmon.dump.compare.matching import (
    INPUT,
    OUTPUT,
    DumpDirectory,
    Golden,
    NpyGolden,
    OpDump,
    Producers,
    TensorSource,
    address_text,
    dump_tensors,
    index_dump_directory,
)
from aclmon.dump.compare.rows import (
    NAN,
    NONFINITE,
    CompareRow,
    CsvLayout,
    has_nonfinite_text,
    nonfinite_counts,
    order_key,
    shape_words,
)
from aclmon.dump.compare.thresholds import FAIL, PASS, SKIP, Thresholds
from aclmon.errors import AclmonError

#: float16's largest finite value: the OverFlow column's line
FLOAT16_MAX = 65504.0
_HOST_4D = (pe.FORMAT_NCHW, pe.FORMAT_NHWC, pe.FORMAT_HWCN)


@dataclass(frozen=True)
class CompareOptions:
    algorithms: tuple[str, ...] = m.ALGORITHMS
    thresholds: Thresholds = field(default_factory=Thresholds)
    overflow: bool = False  # the OverFlow column
    max_elements: int = 0  # -max: compare only the first N elements
    fusion_rule: FusionRule | None = None
    workers: int = 1


# ---------------------------------------------------------------- one operator
@dataclass(frozen=True)
class _Op:
    dump: OpDump
    index: int
    sequence: int


def _base_row(op: _Op, **fields: Any) -> CompareRow:
    values = fields.pop("values", None)
    return CompareRow(
        index=op.index,
        sequence=op.sequence,
        order=op.dump.order,
        op_type=op.dump.op_type,
        op_name=fields.pop("op_name", op.dump.key),
        npu_dump=fields.pop("npu_dump", op.dump.key),
        ground_truth=fields.pop("ground_truth", "*"),
        values=values if values is not None else {},
        my_file=op.dump.path,
        **fields,
    )


def _nan_values(options: CompareOptions) -> dict[str, str]:
    return dict.fromkeys(options.algorithms, NAN)


def compare_op(
    dump: OpDump,
    index: int,
    sequence: int,
    golden: Golden,
    options: CompareOptions,
    producers: Producers | None = None,
    *,
    register: bool = True,
) -> list[CompareRow]:
    """The rows of one NPU operator: its inputs, then its outputs. With a ``.npy``
    golden, ``producers`` links its inputs to the outputs that made them; with
    ``register`` its own outputs are added to it (a live compare learns as dumps land)."""
    op = _Op(dump, index, sequence)
    try:
        my_inputs, my_outputs, header_name = dump_tensors(dump.path)
    except AclmonError as exc:
        return [_base_row(op, values=_nan_values(options), reasons=(f"[{dump.key}] {exc}",))]
    if producers is not None and register:
        producers.add(dump, my_outputs)
    name = header_name or dump.key
    if not my_inputs and not my_outputs:
        reason = f"[{dump.key}] The dump holds no input or output tensor."
        return [_base_row(op, op_name=name, values=_nan_values(options), reasons=(reason,))]
    if golden.npy is not None:
        return _against_npy(op, name, my_inputs, my_outputs, golden.npy, options, producers)
    assert golden.dumps is not None
    match = golden.dumps.find(dump.key)
    if match is None:
        reason = f'[{dump.key}] There is no the ground truth dump file for the op "{dump.key}".'
        return [_base_row(op, op_name=name, values=_nan_values(options), reasons=(reason,))]
    try:
        golden_inputs, golden_outputs, _ = dump_tensors(match.path)
    except AclmonError as exc:
        return [
            _base_row(
                op,
                op_name=name,
                ground_truth=dump.key,
                values=_nan_values(options),
                reasons=(f"[{dump.key}] {exc}",),
                golden_file=match.path,
            )
        ]
    rows: list[CompareRow] = []
    for role, mine, theirs in (
        (INPUT, my_inputs, golden_inputs),
        (OUTPUT, my_outputs, golden_outputs),
    ):
        count_note = ""
        if len(mine) != len(theirs):
            count_note = (
                f"[{dump.key}] The number of {role} does not match ({len(mine)} vs {len(theirs)})."
            )
        by_index = {t.index: t for t in theirs}
        for tensor in mine:
            rows.append(
                _pair_row(
                    op, name, dump.key, tensor, by_index.get(tensor.index), options, count_note
                )
            )
    return rows


def _against_npy(
    op: _Op,
    name: str,
    inputs: list[TensorSource],
    outputs: list[TensorSource],
    npy: NpyGolden,
    options: CompareOptions,
    producers: Producers | None,
) -> list[CompareRow]:
    rule = options.fusion_rule
    key = op.dump.key
    fused = rule.op(name) if rule is not None else None
    if rule is not None and fused is not None:
        ground_truth = rule.ground_truth(name)
        npu_dump = fused.name
    else:
        found = any(npy.output(key, t.index) is not None for t in outputs)
        ground_truth = key if found else "*"
        npu_dump = key

    def golden_of(origin: tuple[str, int]) -> TensorSource | None:
        if rule is not None:
            origin = rule.output_origin(*origin)
        return npy.output(*origin)

    rows: list[CompareRow] = []
    for tensor in inputs:
        source: tuple[str, int] | None = None
        if rule is not None:
            source = rule.producer(name, tensor.index)
        elif producers is not None and tensor.address:
            source = producers.find(tensor.address, op.dump.order)
        theirs = golden_of(source) if source is not None else None
        note = (
            ""
            if source is not None
            else (
                f"[{key}] No operator output in the dump feeds {npu_dump}:input:{tensor.index} "
                "(a weight or a model input): a .npy golden holds operator outputs only."
            )
        )
        rows.append(_pair_row(op, name, npu_dump, tensor, theirs, options, note, ground_truth))
    for tensor in outputs:
        theirs = golden_of((name if rule is not None else key, tensor.index))
        rows.append(_pair_row(op, name, npu_dump, tensor, theirs, options, "", ground_truth))
    return rows


def _pair_row(
    op: _Op,
    name: str,
    npu_dump: str,
    mine: TensorSource,
    theirs: TensorSource | None,
    options: CompareOptions,
    note: str,
    ground_truth: str | None = None,
) -> CompareRow:
    key = op.dump.key
    fields: dict[str, Any] = dict(
        op_name=name,
        npu_dump=npu_dump,
        ground_truth=ground_truth if ground_truth is not None else key,
        role=mine.role,
        tensor=mine.index,
        my_dtype=mine.dtype,
        my_address=address_text(mine.address),
        shape=mine.shape,
        values=_nan_values(options),
    )
    reasons = [note] if note else []
    tensor_id = f"{npu_dump}:{mine.role}:{mine.index}"
    if theirs is None:
        reasons.append(f"[{key}] There is no the ground truth dump file for {tensor_id}.")
        return _base_row(op, reasons=tuple(reasons), **fields)
    fields.update(
        golden_dtype=theirs.dtype,
        golden_address=address_text(theirs.address),
        golden_file=theirs.file,
    )
    try:
        x = mine.load()
        y = theirs.load()
    except AclmonError as exc:
        reasons.append(f"[{key}] {tensor_id}: {exc}")
        return _base_row(op, reasons=tuple(reasons), **fields)
    y = align_golden(mine, theirs, y)
    if options.overflow:
        fields["overflow"] = _overflow_cell(mine, x)
    if x.size != y.size:
        reasons.append(
            f"[{key}] Due to the different shapes on the left and right,the left dump "
            f"data{shape_words(x.shape)} can not be compared to the right dump "
            f"data{shape_words(y.shape)}. Please check the batch of the dump data or the "
            "shape may be changed due to optimization."
        )
        return _base_row(op, reasons=tuple(reasons), **fields)
    if x.shape != y.shape:
        reasons.append(
            f"[{key}] The shapes differ ({shape_words(x.shape)} vs {shape_words(y.shape)}); "
            f"compared as {x.size} elements in order."
        )
    if mine.dtype != theirs.dtype and NAN not in (mine.dtype, theirs.dtype):
        reasons.append(
            f"[{key}] The data types differ ({mine.dtype} vs {theirs.dtype}); "
            "both were compared as float32."
        )
    if x.dtype.kind == "c" or y.dtype.kind == "c":
        reasons.append(f"[{key}] Complex values: their real parts were compared.")
    if x.size == 0:
        reasons.append(f"[{key}] The tensor is empty (shape {list(x.shape)}).")
    result = m.compare_arrays(
        x,
        y,
        options.algorithms,
        my_file=mine.file,
        golden_file=theirs.file,
        scalar=m.is_scalar_shape(mine.shape),
        max_elements=options.max_elements,
    )
    reasons.extend(result.reasons)
    nonfinite = False
    if has_nonfinite_text(result.values):
        (x_nan, x_inf), (y_nan, y_inf) = nonfinite_counts(x), nonfinite_counts(y)
        reasons.append(
            f"[{key}] NaN/Inf values: my output has {x_nan} NaN and {x_inf} Inf, "
            f"the ground truth {y_nan} NaN and {y_inf} Inf."
        )
        nonfinite = x_nan > y_nan or x_inf > y_inf
    status, failing = judge(result.values, options.thresholds, nonfinite)
    fields["values"] = result.values
    return _base_row(op, reasons=tuple(reasons), status=status, failing=failing, **fields)


def judge(
    values: dict[str, str], thresholds: Thresholds, nonfinite: bool
) -> tuple[str, tuple[str, ...]]:
    """(status, failing metrics) of a tensor's metrics; ``nonfinite``: its own values
    hold NaN/Inf that the golden's do not."""
    failing = thresholds.failing(values) + ((NONFINITE,) if nonfinite else ())
    if failing:
        return FAIL, failing
    return (PASS if thresholds.judged(values) else SKIP), ()


def align_golden(mine: TensorSource, theirs: TensorSource, golden: m.Array) -> m.Array:
    """The golden array in the NPU tensor's host layout when both are 4-D host layouts
    that differ (NHWC against NCHW ...): compared element by element, they must agree."""
    from aclmon.dump.formats import convert_to_host, host_format

    def layout(t: TensorSource) -> int | None:
        if t.format is None:
            return None
        return host_format(t.format) if t.original_shape and t.format not in _HOST_4D else t.format

    mine_layout, their_layout = layout(mine), layout(theirs)
    if (
        mine_layout in _HOST_4D
        and their_layout in _HOST_4D
        and mine_layout != their_layout
        and golden.ndim == 4
        and their_layout is not None
    ):
        try:
            return convert_to_host(golden, their_layout, None, mine_layout)
        except AclmonError:
            return golden
    return golden


def _overflow_cell(mine: TensorSource, values: m.Array) -> str:
    if mine.dtype != "float16":
        return NAN
    if values.size == 0:
        return "NO"
    with np.errstate(all="ignore"):
        return "YES" if float(np.nanmax(np.abs(values.astype(np.float32)))) >= FLOAT16_MAX else "NO"


# ---------------------------------------------------------------- a directory
@dataclass
class CompareResult:
    my_root: str
    golden_root: str
    golden_kind: str  # "dump" | "npy"
    options: CompareOptions
    layout: CsvLayout
    rows: list[CompareRow]
    first_divergent: Divergence | None
    overflows: list[OverflowNote]
    notes: list[str]
    op_count: int


def select_sequences(
    count: int, range_spec: str | None = None, select_spec: str | None = None
) -> set[int] | None:
    """The 1-based operator positions ``-r start,end,step`` or ``-s i,j,k`` keep
    (``None``: all); raises :class:`AclmonError` as msaccucmp refuses them."""
    if range_spec is None and select_spec is None:
        return None
    if range_spec is not None and select_spec is not None:
        raise AclmonError("-r and -s cannot be used together")
    if count == 0:
        return set()
    if select_spec is not None:
        wanted = set()
        for part in select_spec.split(","):
            text = part.strip()
            if not text.isdigit() or not 1 <= int(text) <= count:
                raise AclmonError(f"-s {select_spec!r}: each position must be in [1, {count}]")
            wanted.add(int(text))
        return wanted
    assert range_spec is not None
    parts = range_spec.split(",")
    if len(parts) != 3:
        raise AclmonError(f'-r {range_spec!r}: expected "start,end,step"')
    values = [1, -1, 1]
    for position, part in enumerate(parts):
        text = part.strip()
        if not text or (position == 1 and text == "-1"):
            continue
        if not text.isdigit():
            raise AclmonError(f'-r {range_spec!r}: expected "start,end,step" numbers')
        values[position] = int(text)
    start, end, step = values
    if end == -1:
        end = count
    if not 1 <= start <= count:
        raise AclmonError(f"-r: start {start} is out of range [1, {count}]")
    if not start <= end <= count:
        raise AclmonError(f"-r: end {end} is out of range [{start}, {count}]")
    if step < 1 or (step >= count and count > 1):
        raise AclmonError(f"-r: step {step} is out of range [1, {max(count - 1, 1)}]")
    return {s for s in range(start, end + 1) if s in (start, end) or (s - start) % step == 0}


def run_compare(
    my_root: str,
    golden: Golden,
    options: CompareOptions,
    *,
    my_dumps: DumpDirectory | None = None,
    range_spec: str | None = None,
    select_spec: str | None = None,
    op_name: str | None = None,
) -> CompareResult:
    """Compare every operator of ``my_root`` (or those ``-r``/``-s``/``-op`` keep)."""
    from aclmon.dump.naming import sanitize_name

    mine = my_dumps if my_dumps is not None else index_dump_directory(my_root)
    if not mine.ops:
        raise AclmonError(f"{my_root}: no operator dump files")
    if golden.dumps is not None and not golden.dumps.ops:
        raise AclmonError(
            f"{golden.root}: statistics CSVs only, no operator dumps to compare "
            f"{my_root}'s tensors with"
        )
    keep = select_sequences(len(mine.ops), range_spec, select_spec)
    wanted = [
        _Op(dump, index, index + 1)
        for index, dump in enumerate(mine.ops)
        if (keep is None or index + 1 in keep)
        and (op_name is None or dump.key == sanitize_name(op_name))
    ]
    if op_name is not None and not wanted:
        raise AclmonError(f"-op {op_name}: no operator of that name in {my_root}")
    producers = None
    if golden.npy is not None and options.fusion_rule is None:
        producers = Producers()
        producers.fill(mine.ops)
    rows: list[CompareRow] = []
    workers = max(1, min(options.workers, len(wanted)))

    def one(op: _Op) -> list[CompareRow]:
        return compare_op(
            op.dump, op.index, op.sequence, golden, options, producers, register=False
        )

    if workers == 1:
        for op in wanted:
            rows.extend(one(op))
    else:
        with ThreadPoolExecutor(workers, thread_name_prefix="aclmon-compare") as pool:
            for op_rows in pool.map(one, wanted):
                rows.extend(op_rows)
    notes = _notes(mine, golden)
    if golden.dumps is not None and op_name is None and keep is None:
        rows.extend(_golden_only(mine, golden.dumps, len(mine.ops), options))
    rows.sort(key=order_key)
    divergence = first_divergent(rows, options.thresholds)
    layout = CsvLayout(
        options.algorithms,
        sequence=range_spec is not None or select_spec is not None,
        overflow=options.overflow,
        golden_address=golden.npy is None,
    )
    return CompareResult(
        my_root,
        golden.root,
        golden.kind,
        options,
        layout,
        rows,
        divergence,
        overflow_notes(mine.overflow_links, divergence),
        notes,
        len(mine.ops),
    )


def _golden_only(
    mine: DumpDirectory, golden: DumpDirectory, start: int, options: CompareOptions
) -> list[CompareRow]:
    rows = []
    last = max((op.order for op in mine.ops), default=(0, 0))
    index = start
    for op in golden.ops:
        if mine.find(op.key) is not None:
            continue
        reason = f'[{op.key}] There is no the my output dump file for the op "{op.key}".'
        rows.append(
            CompareRow(
                index=index,
                sequence=index + 1,
                order=(last[0] + 1, index),
                op_type=op.op_type,
                op_name=op.key,
                npu_dump="*",
                ground_truth=op.key,
                values=_nan_values(options),
                reasons=(reason,),
                golden_file=op.path,
            )
        )
        index += 1
    return rows


def _notes(mine: DumpDirectory, golden: Golden) -> list[str]:
    notes = []
    if mine.repeated:
        extra = sum(mine.repeated.values())
        notes.append(
            f"{len(mine.repeated)} operators were dumped more than once ({extra} earlier dumps): "
            "the last dump of each was compared (give one step's directory to compare another)"
        )
    for where, why in mine.skipped:
        notes.append(f"skipped {where}: {why}")
    if mine.not_dumps:
        notes.append(
            f"{mine.not_dumps} files in {mine.root} are not dump files (or too damaged to tell)"
        )
    notes.extend(mine.errors)
    if golden.dumps is not None and golden.dumps.repeated:
        notes.append(
            f"{len(golden.dumps.repeated)} golden operators were dumped more than once: "
            "the last dump of each was used"
        )
    return notes


def rows_with_thresholds(rows: Sequence[CompareRow], thresholds: Thresholds) -> list[CompareRow]:
    """The same rows judged against other lines (for a view that lets the user move them)."""
    out = []
    for row in rows:
        if not row.values or (row.status == SKIP and not thresholds.judged(row.values)):
            out.append(row)
            continue
        status, failing = judge(row.values, thresholds, NONFINITE in row.failing)
        out.append(replace(row, status=status, failing=failing))
    return out
