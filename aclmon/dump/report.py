"""One decode report of a dump file: what ``aclmon decode`` prints (as text or
``--json``) and what the Dumps pane and the exception detail show.

:func:`decode_report` builds it as plain values (never raises; a bad file is an
``"error"`` in it); :func:`write_text` is the command's text form. The pane
only renders the same dict, so the two cannot disagree about a file.

Keys: everything :func:`~aclmon.dump.summary.summarize` gives, plus ``path``;
``tensors`` (each tensor's header fields, ``offset``, and for data tensors
``stats``, ``note`` when its dtype is not decoded, ``error`` when its bytes are
bad); ``attrs`` and ``dfx_message`` when the header has them; ``rows`` (a stats
CSV, every row). An overflow file's ``records`` each gain ``op_dump`` (the
operator dump the record points at, or ``None``); with ``follow_overflow`` the
report holds that operator's own report under ``operator``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, TextIO

from aclmon.dump.summary import KIND_EXCEPTION, KIND_OVERFLOW, KIND_STATS, summarize, tensor_summary
from aclmon.errors import AclmonError

#: tensor roles that hold no typed values (their bytes are not decoded)
BYTE_ROLES = ("buffer", "space")


def decode_report(
    path: str,
    *,
    with_stats: bool = True,
    bins: int = 16,
    stat_tensors: int | None = None,
    op_dumps: Mapping[int, str | None] | None = None,
    follow_overflow: bool = False,
) -> dict[str, Any]:
    """Everything known about one file, as plain values (see the module docstring).

    ``stat_tensors`` bounds how many data tensors get statistics (None: all);
    ``op_dumps`` maps an overflow record's output index to its operator dump when
    the caller indexed the directory (else the dump is looked for beside the file).
    """
    report: dict[str, Any] = {"path": path, **summarize(path)}
    if "error" in report:
        return report
    try:
        if report["kind"] == KIND_OVERFLOW:
            _link_records(path, report, op_dumps)
            if follow_overflow:
                _follow(report, with_stats, bins, stat_tensors)
        elif report["kind"] == KIND_STATS:
            from aclmon.dump.statscsv import read_stats_csv

            # summarize() lists only the first rows; the report has them all
            report["rows"] = read_stats_csv(path)
        else:
            _add_tensors(path, report, with_stats, bins, stat_tensors)
    except AclmonError as exc:
        report["error"] = str(exc)
    return report


def _add_tensors(
    path: str, report: dict[str, Any], with_stats: bool, bins: int, stat_tensors: int | None
) -> None:
    from aclmon.dump.reader import read_dump

    dump = read_dump(path)
    report["tensors"] = []
    counted = 0
    for tensor in dump.tensors:
        wants_stats = with_stats and (stat_tensors is None or counted < stat_tensors)
        if tensor.role not in BYTE_ROLES:
            counted += 1
        report["tensors"].append(_tensor_report(tensor, wants_stats, bins))
    if dump.attrs:
        report["attrs"] = [{"name": n, "value": v} for n, v in dump.attrs]
    if dump.dfx_message:
        report["dfx_message"] = dump.dfx_message


def _tensor_report(tensor: Any, with_stats: bool, bins: int) -> dict[str, Any]:
    from aclmon.dump.stats import logical_tensor_stats

    entry: dict[str, Any] = {**tensor_summary(tensor), "offset": tensor.offset}
    if tensor.role in BYTE_ROLES:
        return entry
    try:
        decoded = tensor.decode()
    except AclmonError as exc:
        entry["error"] = str(exc)
        return entry
    if not decoded.supported:
        entry["note"] = decoded.label
    if with_stats:
        try:
            # over the tensor in its original shape: padding of device layouts is not data
            entry["stats"] = logical_tensor_stats(
                decoded.array, tensor.format, tensor.original_shape, bins=bins
            )
        except (ValueError, TypeError) as exc:  # an array the statistics cannot take
            entry["error"] = f"no statistics: {exc}"
    return entry


def _link_records(
    path: str, report: dict[str, Any], op_dumps: Mapping[int, str | None] | None
) -> None:
    """Each record's ``op_dump``: from the caller's index, else found beside the file."""
    for record in report.get("records", []):
        if op_dumps is not None and record["output"] in op_dumps:
            record["op_dump"] = op_dumps[record["output"]]
        elif "record" in record:
            record["op_dump"] = _op_dump_beside(path, record["record"])


def _op_dump_beside(path: str, record: dict[str, Any]) -> str | None:
    from aclmon.dump.index import find_op_dump
    from aclmon.dump.opdebug import overflow_target

    target = overflow_target(record)
    task = target.get("task_id")
    if task is None:
        return None
    return find_op_dump(os.path.dirname(path) or ".", task, target.get("stream_id")) or None


def _follow(report: dict[str, Any], with_stats: bool, bins: int, stat_tensors: int | None) -> None:
    """The overflowing operator's report, from the first record that names its dump."""
    for record in report.get("records", []):
        if record.get("op_dump"):
            report["operator"] = decode_report(
                record["op_dump"], with_stats=with_stats, bins=bins, stat_tensors=stat_tensors
            )
            return


def target_ids(report: dict[str, Any]) -> dict[str, Any]:
    """The ids of the operator an overflow report's first record points at."""
    from aclmon.dump.opdebug import overflow_target

    for record in report.get("records", []):
        if "record" in record:
            return {k: v for k, v in overflow_target(record["record"]).items() if v is not None}
    return {}


# ------------------------------------------------------------------ text
def _number(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _stats_text(stats: dict[str, Any]) -> str:
    """min/max/mean/std (or why there are none) and the special-value counts."""
    counts = "  ".join(
        f"{k} {stats[k]}" for k in ("nan", "pos_inf", "neg_inf", "zeros") if k in stats
    )
    if not stats.get("finite"):
        return f"no finite values  {counts}"
    figures = "  ".join(f"{k} {_number(stats[k])}" for k in ("min", "max", "mean", "std"))
    return f"{figures}  {counts}"


def write_text(report: dict[str, Any], out: TextIO) -> None:
    """``aclmon decode`` without ``--json``: the report as lines of text."""
    print(f"{report['file']}  ({report.get('kind') or 'unknown'}"
          + (f", {report['container']}" if "container" in report else "")
          + (f", {report['file_size']} bytes" if "file_size" in report else "") + ")", file=out)  # fmt: skip
    ids = [f"{k.replace('_', ' ')} {report[k]}" for k in ("op_type", "op_name", "task_id", "stream_id", "timestamp",
                                                            "context_id", "thread_id") if report.get(k) is not None]  # fmt: skip
    if report.get("kind") == KIND_EXCEPTION and report.get("stream_id") is None:
        ids.append("stream id unknown")  # exception dump names carry none
    if report.get("kind") == KIND_OVERFLOW and "records" in report:
        # the ids the record gives; the Opdebug file's own name is the debug task's
        if report.get("op_name") is None:
            ids.append("(no operator dump with these ids beside the file)")
        ids.insert(0, "overflowed:")
    if ids:
        print("  " + "  ".join(ids), file=out)
    for warning in report.get("warnings", []):
        print(f"  warning: {warning}", file=out)
    for tensor in report.get("tensors", []):
        line = (f"  {tensor['role']} {tensor['index']}: {tensor['dtype']} {tensor['format']} "
                f"shape {tensor['shape']} ({tensor['size']} B)")  # fmt: skip
        if tensor.get("original_shape"):
            line += f" original {tensor['original_shape']}"
        print(line, file=out)
        if tensor.get("note"):
            print(f"      {tensor['note']}", file=out)
        if tensor.get("error"):
            print(f"      error: {tensor['error']}", file=out)
        stats = tensor.get("stats")
        if stats:
            stored = stats.get("stored_stats")
            where = " in the original shape" if stored else ""
            print(f"      {stats['count']} values{where}  {_stats_text(stats)}", file=out)
            print("      first " + " ".join(_number(v) for v in stats["first"]), file=out)
            if stored:
                print(
                    f"      stored layout ({stored['count']} values, padding included): "
                    + _stats_text(stored),
                    file=out,
                )
            if stats.get("logical_error"):
                print(
                    f"      statistics over the stored layout: {stats['logical_error']}", file=out
                )
    for record in report.get("records", []):
        if "error" in record:
            print(f"  output {record['output']}: error: {record['error']}", file=out)
            continue
        print(f"  output {record['output']}: overflow record", file=out)
        if "op_dump" in record:
            target = record["op_dump"] or "no operator dump with this task id and stream id"
            print(f"      operator dump: {target}", file=out)
        for line in record["explained"]:
            print(f"      {line}", file=out)
        for line in json.dumps(record["record"], indent=2).splitlines():
            print(f"      {line}", file=out)
    for row in report.get("rows", []):
        print("  " + ", ".join(f"{k}={v}" for k, v in row.items()), file=out)
