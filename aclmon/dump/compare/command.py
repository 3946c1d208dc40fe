"""``aclmon compare -m MY_DUMP_DIR -g GOLDEN``: msaccucmp's compare, and the first
divergent operator.

Imported to build ``aclmon --help``: nothing heavy (numpy) at module level.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, TextIO


def configure_compare(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add(
        "-m",
        dest="my_dump_path",
        required=True,
        metavar="MY_DUMP_DIR",
        help="the NPU dump directory (operator dumps, or statistics CSVs)",
    )
    add(
        "-g",
        dest="golden_dump_path",
        required=True,
        metavar="GOLDEN",
        help="a dump directory of another run, or golden .npy files ({op}.{index}.{timestamp}.npy)",
    )
    add(
        "-out",
        dest="output_path",
        default=".",
        metavar="DIR",
        help="where result_{YYYYmmddHHMMSS}.csv goes (default: the current directory)",
    )
    add("--json", action="store_true", help="print the result as one JSON object")
    add(
        "-alg",
        dest="algorithms",
        nargs="+",
        default=["all"],
        metavar="ALG",
        help="metrics: all (default), or names / indexes 0-9 (comma- or space-separated)",
    )
    add(
        "-r",
        dest="range",
        metavar="start,end,step",
        help="only the operators at these 1-based positions (end -1: the last); adds OpSequence",
    )
    add("-s", dest="select", metavar="i,j,k", help="only the operators at these positions")
    add(
        "-op",
        dest="op_name",
        metavar="NAME",
        help="only this operator, with its tensors side by side and msaccucmp's detail files",
    )
    add("-o", dest="output_index", type=int, metavar="IDX", help="with -op: only output IDX")
    add("-i", dest="input_index", type=int, metavar="IDX", help="with -op: only input IDX")
    add(
        "-n",
        dest="top",
        type=int,
        default=20,
        metavar="TOPN",
        help="with -op: how many worst elements (1-10000, default 20)",
    )
    add(
        "--overflow",
        "-overflow_detection",
        dest="overflow",
        action="store_true",
        help="add the OverFlow column (float16 values at or past 65504)",
    )
    add(
        "-f",
        dest="fusion_rule",
        metavar="FUSION_RULE",
        help="the fusion rule JSON (atc --mode=1) mapping NPU operators to the golden's",
    )
    add(
        "-max",
        dest="max_elements",
        type=int,
        default=0,
        metavar="N",
        help="compare only the first N elements of each tensor",
    )
    add(
        "--threshold",
        dest="thresholds",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="move a pass line: cos, red, kl, rmse, mre (or the column name); stats for a "
        "statistics compare (default cos=0.99,red=0.05,kl=0.005,rmse=1,mre=1,stats=0.5)",
    )
    add(
        "-j",
        "--jobs",
        dest="jobs",
        type=int,
        default=0,
        help="operators compared in parallel (default: one per core)",
    )
    parser.set_defaults(handler=run_compare_command)  # fmt: skip


def run_compare_command(args: argparse.Namespace) -> int:
    from aclmon.dump.commands import usable_cores
    from aclmon.dump.compare import metrics
    from aclmon.dump.compare.engine import CompareOptions, run_compare
    from aclmon.dump.compare.fusionrule import read_fusion_rule
    from aclmon.dump.compare.matching import Golden, index_dump_directory
    from aclmon.dump.compare.thresholds import Thresholds
    from aclmon.errors import AclmonError

    for flag, value in (("-o", args.output_index), ("-i", args.input_index)):
        if value is not None and args.op_name is None:
            raise AclmonError(f"{flag} is allowed only together with -op")
    if args.output_index is not None and args.input_index is not None:
        raise AclmonError("give -o or -i, not both")
    if not 1 <= args.top <= 10_000:
        raise AclmonError(f"-n {args.top}: must be in [1, 10000]")
    if args.max_elements < 0:
        raise AclmonError(f"-max {args.max_elements}: must not be negative")
    for flag, path in (("-m", args.my_dump_path), ("-g", args.golden_dump_path)):
        if not os.path.isdir(path):
            raise AclmonError(f"{flag} {path}: not a directory")
    options = CompareOptions(
        algorithms=metrics.parse_algorithms(args.algorithms),
        thresholds=Thresholds().with_overrides(args.thresholds),
        overflow=args.overflow,
        max_elements=args.max_elements,
        fusion_rule=read_fusion_rule(args.fusion_rule) if args.fusion_rule else None,
        workers=args.jobs if args.jobs > 0 else usable_cores(),
    )
    mine = index_dump_directory(args.my_dump_path)
    if not mine.ops and mine.stats_files:
        return _run_stats(args, mine, options)
    golden = Golden(args.golden_dump_path)
    result = run_compare(
        args.my_dump_path,
        golden,
        options,
        my_dumps=mine,
        range_spec=args.range,
        select_spec=args.select,
        op_name=args.op_name,
    )
    os.makedirs(args.output_path, exist_ok=True)
    csv_path = _write_csv(args.output_path, result)
    details = _details(args, result) if args.op_name else []
    if args.json:
        print(json.dumps(_json(result, csv_path, details), sort_keys=False))
    else:
        _print_text(result, csv_path, details, sys.stdout)
    for note in result.notes:
        print(f"aclmon compare: note: {note}", file=sys.stderr)
    return 0


def _result_name(directory: str) -> str:
    """``result_{YYYYmmddHHMMSS}.csv``; a second run in the same second gets ``_1``."""
    stamp = time.strftime("%Y%m%d%H%M%S", time.localtime())
    path = os.path.join(directory, f"result_{stamp}.csv")
    n = 1
    while os.path.exists(path):
        path = os.path.join(directory, f"result_{stamp}_{n}.csv")
        n += 1
    return path


def _write_csv(directory: str, result: Any) -> str:
    from aclmon.dump.compare.rows import write_rows
    from aclmon.errors import AclmonError

    path = _result_name(directory)
    try:
        with open(path, "w", encoding="utf-8", newline="") as handle:
            write_rows(handle, result.rows, result.layout)
    except OSError as exc:
        raise AclmonError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return path


def _details(args: argparse.Namespace, result: Any) -> list[Any]:
    from aclmon.dump.compare.detail import row_detail, write_detail_files

    details = []
    for row in result.rows:
        if not row.role:
            continue
        if args.output_index is not None and (row.role, row.tensor) != (
            "output",
            args.output_index,
        ):
            continue
        if args.input_index is not None and (row.role, row.tensor) != ("input", args.input_index):
            continue
        detail = row_detail(row, args.top, keep_values=True)
        write_detail_files(detail, args.output_path)
        details.append(detail)
    return details


def _counts(rows: list[Any]) -> dict[str, int]:
    counts = {"pass": 0, "fail": 0, "skip": 0}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    return counts


def _json(result: Any, csv_path: str, details: list[Any]) -> dict[str, Any]:
    from aclmon.dump.compare.detail import detail_json

    out: dict[str, Any] = {
        "mode": "tensor",
        "result_file": csv_path,
        "my_dump": result.my_root,
        "golden": result.golden_root,
        "golden_kind": result.golden_kind,
        "operators": result.op_count,
        "header": result.layout.header(),
        "thresholds": dict(result.options.thresholds.lines),
        "counts": _counts(result.rows),
        "first_divergent": result.first_divergent.to_json() if result.first_divergent else None,
        "overflows": [note.to_json() for note in result.overflows],
        "notes": result.notes,
        "rows": [row.to_json() for row in result.rows],
    }
    if details:
        out["details"] = [detail_json(d) for d in details]
    return out


def _print_text(result: Any, csv_path: str, details: list[Any], out: TextIO) -> None:
    counts = _counts(result.rows)
    compared = len({row.sequence for row in result.rows if row.npu_dump != "*"})
    of = f" of {result.op_count}" if compared != result.op_count else ""
    print(
        f"compared {compared}{of} operators of {result.my_root} against "
        f"{result.golden_root} ({result.golden_kind}): {len(result.rows)} rows, "
        f"{counts['fail']} fail, {counts['pass']} pass, {counts['skip']} not judged",
        file=out,
    )
    if result.first_divergent is not None:
        print(result.first_divergent.text(), file=out)
    elif counts["fail"]:
        earliest = next(row for row in result.rows if row.status == "fail")
        print(
            "no first divergent operator: every failing output has a failing input; the "
            f"earliest failure is {earliest.tensor_index} ({earliest.op_type}): the values "
            "already differ where they enter it (model inputs, weights, or what the dumps "
            "show an operator read)",
            file=out,
        )
    else:
        print("no divergent operator: every compared output passes", file=out)
    for note in result.overflows:
        print(note.text(), file=out)
    for detail in details:
        for line in detail.lines():
            print(line, file=out)
    print(f"result: {csv_path}", file=out)


def _run_stats(args: argparse.Namespace, mine: Any, options: Any) -> int:
    from aclmon.dump.compare.statsmode import run_stats_compare, write_stats_csv
    from aclmon.errors import AclmonError

    if args.op_name or args.range or args.select:
        raise AclmonError("-op, -r and -s apply to tensor dumps, not to statistics CSVs")
    result = run_stats_compare(mine, args.golden_dump_path, options.thresholds)
    os.makedirs(args.output_path, exist_ok=True)
    path = _result_name(args.output_path)
    try:
        with open(path, "w", encoding="utf-8", newline="") as handle:
            write_stats_csv(handle, result.rows, result.shapes)
    except OSError as exc:
        raise AclmonError(f"{path}: cannot write: {exc.strerror or exc}") from None
    if args.json:
        print(json.dumps(result.to_json(path), sort_keys=False))
    else:
        for line in result.lines():
            print(line)
        print(f"result: {path}")
    for note in result.notes:
        print(f"aclmon compare: note: {note}", file=sys.stderr)
    return 0
