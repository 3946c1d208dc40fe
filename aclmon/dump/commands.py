"""``aclmon decode`` and ``aclmon convert``.

Imported to build ``aclmon --help``: nothing heavy (numpy) at module level.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any

_SHAPE = re.compile(r"^([0-9]+,)+[0-9]+$")


def configure_decode(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="dump, Opdebug, nano or stats CSV files, or directories",
    )
    parser.add_argument(
        "--json", action="store_true", help="one JSON object per file instead of text"
    )
    parser.add_argument(
        "--no-stats", action="store_true", help="skip tensor statistics (header only)"
    )
    parser.add_argument(
        "--bins", type=int, default=16, help="histogram bins per tensor (default 16)"
    )
    parser.set_defaults(handler=run_decode)


def configure_convert(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-d", dest="dump_path", required=True, metavar="FILE|DIR",
                        help="a dump file, a comma-separated list, or a directory")  # fmt: skip
    parser.add_argument(
        "-out", dest="output_path", required=True, metavar="DIR", help="output directory"
    )
    parser.add_argument(
        "-f",
        dest="format",
        metavar="FORMAT",
        help="convert to this format (NCHW, NHWC, HWCN, ND, NCDHW)",
    )
    parser.add_argument(
        "-s",
        dest="shape",
        metavar="d0,d1,...",
        help="target shape for the conversion (only with -f)",
    )
    parser.add_argument(
        "-t",
        dest="file_type",
        choices=("npy", "bin", "msnpy"),
        default="npy",
        help="output file type (default npy)",
    )
    parser.add_argument(
        "-o", dest="output_index", type=int, metavar="IDX", help="only output IDX (only with -f)"
    )
    parser.add_argument(
        "-i", dest="input_index", type=int, metavar="IDX", help="only input IDX (only with -f)"
    )
    parser.add_argument(
        "-r", "--recursive", action="store_true", help="walk DIR recursively (msaccucmp does not)"
    )
    parser.add_argument(
        "-j", "--jobs", type=int, default=0, help="parallel workers (default: one per core)"
    )
    parser.set_defaults(handler=run_convert)


# ------------------------------------------------------------------ decode
def _tensor_report(tensor: Any, with_stats: bool, bins: int) -> dict[str, Any]:
    from aclmon.dump.stats import logical_tensor_stats
    from aclmon.dump.summary import tensor_summary
    from aclmon.errors import AclmonError

    entry: dict[str, Any] = {**tensor_summary(tensor), "offset": tensor.offset}
    if tensor.role in ("buffer", "space"):
        return entry
    try:
        decoded = tensor.decode()
    except AclmonError as exc:
        entry["error"] = str(exc)
        return entry
    if not decoded.supported:
        entry["note"] = decoded.label
    if with_stats:
        # over the tensor in its original shape: padding of device layouts is not data
        entry["stats"] = logical_tensor_stats(
            decoded.array, tensor.format, tensor.original_shape, bins=bins
        )
    return entry


def decode_report(path: str, with_stats: bool = True, bins: int = 16) -> dict[str, Any]:
    """Everything ``aclmon decode`` prints about one file, as plain values."""
    from aclmon.dump.reader import read_dump
    from aclmon.dump.statscsv import read_stats_csv
    from aclmon.dump.summary import KIND_OVERFLOW, KIND_STATS, summarize
    from aclmon.errors import AclmonError

    report = {"path": path, **summarize(path)}
    if "error" in report or report["kind"] == KIND_OVERFLOW:
        return report
    try:
        if report["kind"] == KIND_STATS:
            # summarize() lists only the first rows; the command shows them all
            report["rows"] = read_stats_csv(path)
            return report
        dump = read_dump(path)
        report["tensors"] = [_tensor_report(t, with_stats, bins) for t in dump.tensors]
        if dump.attrs:
            report["attrs"] = [{"name": n, "value": v} for n, v in dump.attrs]
        if dump.dfx_message:
            report["dfx_message"] = dump.dfx_message
    except AclmonError as exc:
        report["error"] = str(exc)
    return report


def _fmt_number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _stats_text(stats: dict[str, Any]) -> str:
    """min/max/mean/std (or why there are none) and the special-value counts."""
    counts = "  ".join(
        f"{k} {stats[k]}" for k in ("nan", "pos_inf", "neg_inf", "zeros") if k in stats
    )
    if not stats.get("finite"):
        return f"no finite values  {counts}"
    figures = "  ".join(f"{k} {_fmt_number(stats[k])}" for k in ("min", "max", "mean", "std"))
    return f"{figures}  {counts}"


def _print_text(report: dict[str, Any], out: Any) -> None:
    from aclmon.dump.summary import KIND_EXCEPTION, KIND_OVERFLOW

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
            print("      first " + " ".join(_fmt_number(v) for v in stats["first"]), file=out)
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


def _expand(
    paths: list[str],
    recursive: bool,
    links: dict[str, dict[int, str | None]] | None = None,
    skipped: list[tuple[str, bool]] | None = None,
) -> tuple[list[str], list[str]]:
    """Files named directly, plus the dump files inside each directory.

    With ``recursive``, directories are indexed and ``links`` (if given) maps each
    overflow file to the operator dumps its records point at; ``skipped`` (if
    given) receives ``(line, unreadable)``: one for each file the index could not
    look at, and one counting the files that are not dumps.
    """
    from aclmon.dump.summary import classify

    files: list[str] = []
    missing: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            if recursive:
                from aclmon.dump.index import DumpIndex

                index = DumpIndex(path)
                files.extend(f.path for f in index.files)
                if skipped is not None:
                    skipped += [(f"skipped {where}: {why}", True) for where, why in index.skipped]
                    if index.not_dumps:
                        plural = "s that are not dump files" if index.not_dumps > 1 else (
                            " that is not a dump file")  # fmt: skip
                        skipped.append((f"skipped {index.not_dumps} file{plural} in {path}", False))
                if links is not None:
                    for link in index.links:
                        target = link.op_dump.path if link.op_dump else None
                        links.setdefault(link.overflow.path, {})[link.output] = target
            else:
                for name in sorted(os.listdir(path)):
                    full = os.path.join(path, name)
                    if os.path.isfile(full) and classify(full) is not None:
                        files.append(full)
        elif os.path.isfile(path):
            files.append(path)
        else:
            missing.append(path)
    return files, missing


def run_decode(args: argparse.Namespace) -> int:
    from aclmon.errors import no_such_file

    links: dict[str, dict[int, str | None]] = {}
    skipped: list[tuple[str, bool]] = []
    files, missing = _expand(args.files, recursive=True, links=links, skipped=skipped)
    failed = bool(missing)
    for path in missing:
        print(f"aclmon decode: {no_such_file(path)}", file=sys.stderr)
    for line, unreadable in skipped:
        print(f"aclmon decode: {line}", file=sys.stderr)
        failed |= unreadable
    for path in files:
        report = decode_report(path, with_stats=not args.no_stats, bins=args.bins)
        # which operator dump each record points at (by task id and stream id): from the
        # directory index, or for a file named on its own, among the files beside it
        for record in report.get("records", []):
            if path in links and record["output"] in links[path]:
                record["op_dump"] = links[path][record["output"]]
            elif path not in links and "record" in record:
                record["op_dump"] = _op_dump_beside(path, record["record"])
        if "error" in report:
            failed = True
            print(f"aclmon decode: {report['error']}", file=sys.stderr)
        for part in (*report.get("tensors", []), *report.get("records", [])):
            # A tensor or record that could not be read is a failure of the file,
            # even though the rest of it decoded.
            if "error" in part:
                failed = True
                print(f"aclmon decode: {part['error']}", file=sys.stderr)
        if args.json:
            print(json.dumps(report, sort_keys=False))
        else:
            _print_text(report, sys.stdout)
    return 1 if failed else 0


def _op_dump_beside(path: str, record: dict[str, Any]) -> str | None:
    from aclmon.dump.index import find_op_dump
    from aclmon.dump.opdebug import overflow_target

    target = overflow_target(record)
    if target.get("task_id") is None:
        return None
    return (
        find_op_dump(os.path.dirname(path) or ".", target["task_id"], target.get("stream_id"))
        or None
    )


# ------------------------------------------------------------------ convert
def _convert_one(job: tuple[str, str, Any]) -> Any:
    from aclmon.dump.convert import convert_file

    path, out_dir, options = job
    return convert_file(path, out_dir, options)


class _Progress:
    """A one-line progress bar on stderr, drawn only on a terminal."""

    def __init__(self, total: int, stream: Any = None) -> None:
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = total > 0 and self.stream.isatty()

    def step(self) -> None:
        self.done += 1
        if self.enabled:
            width = 30
            filled = width * self.done // self.total
            self.stream.write(
                f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} files"
            )
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")


def usable_cores() -> int:
    """Cores this process may run on (fewer than the machine's under a CPU affinity mask)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def run_convert(args: argparse.Namespace) -> int:
    from aclmon.dump import proto_enums as pe
    from aclmon.dump.convert import ConvertOptions
    from aclmon.errors import AclmonError, no_such_file

    for flag, value in (("-s", args.shape), ("-o", args.output_index), ("-i", args.input_index)):
        if value is not None and not args.format:
            raise AclmonError(f"{flag} is allowed only together with -f")
    if args.output_index is not None and args.input_index is not None:
        raise AclmonError("give -o or -i, not both")
    only = None
    for role, index in (("output", args.output_index), ("input", args.input_index)):
        if index is not None:
            if index < 0:
                raise AclmonError(f"tensor index {index} must not be negative")
            only = (role, index)
    if args.shape and not _SHAPE.match(args.shape):
        raise AclmonError(f"-s {args.shape!r}: expected comma-separated integers like 1,3,224,224")
    target_format = None
    if args.format:
        target_format = pe.format_value(args.format)
        if target_format is None:
            raise AclmonError(f"-f {args.format!r}: unknown format")
    shape = tuple(int(d) for d in args.shape.split(",")) if args.shape else None
    if shape is not None and 0 in shape:
        raise AclmonError(f"-s {args.shape!r}: each dimension must be greater than 0")
    options = ConvertOptions(target_format, shape, args.file_type, only)
    inputs = [p for p in args.dump_path.split(",") if p]
    files, missing = _expand(inputs, args.recursive)
    if missing:
        raise AclmonError("; ".join(no_such_file(p) for p in missing))
    if not files:
        raise AclmonError(f"no dump files in {args.dump_path}")
    os.makedirs(args.output_path, exist_ok=True)
    jobs = [(f, args.output_path, options) for f in files]
    workers = args.jobs if args.jobs > 0 else usable_cores()
    workers = max(1, min(workers, len(jobs)))
    progress = _Progress(len(jobs))
    results = []
    if workers == 1:
        for job in jobs:
            results.append(_convert_one(job))
            progress.step()
    else:
        # Threads, not processes: the bytes of a tensor written as it is are copied by
        # the kernel (copy_file_range releases the GIL), and numpy releases it for the
        # layout copies; threads start at once and return results without pickling.
        # On 2 loaded cores, 2 threads took about half a single thread's time on
        # bench_dump's convert directory where 2 processes were no faster.
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="aclmon-convert")
        try:
            for result in pool.map(_convert_one, jobs):
                results.append(result)
                progress.step()
        except BaseException:  # Ctrl-C: finish the files in hand, start no more
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown()
    progress.close()
    failed = 0
    written = 0
    for result in results:
        written += len(result.written)
        for warning in result.warnings:
            print(f"warning: {os.path.basename(result.source)}: {warning}", file=sys.stderr)
        if result.error:
            failed += 1
            print(f"error: {result.error}", file=sys.stderr)
    print(
        f"converted {len(results) - failed} of {len(results)} files, wrote {written} files to {args.output_path}"
    )
    return 1 if failed else 0
