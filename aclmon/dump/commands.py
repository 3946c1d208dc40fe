"""``aclmon decode``, ``aclmon convert`` and ``aclmon triage``.

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


# ------------------------------------------------------------------ triage
def configure_triage(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "directory", metavar="DIR", help="a collected directory: CANN logs and exception dumps"
    )
    parser.add_argument(
        "--json", action="store_true", help='print {"errors": [...]}, one entry per error'
    )
    parser.add_argument(
        "-out", "--out", dest="out", metavar="DIR",
        help="write an info.txt per error (and its single-operator re-run) under DIR"
        " (default: the directory itself)",
    )  # fmt: skip
    parser.set_defaults(handler=run_triage)


def run_triage(args: argparse.Namespace) -> int:
    from aclmon.dump.triage_dir import triage_directory, write_reports

    cases = triage_directory(args.directory)
    reports = write_reports(cases, args.out or args.directory) if cases else None
    if args.json:
        print(json.dumps({"errors": [case.to_dict() for case in cases]}, indent=2))
        return 0
    if not cases:
        print(f"{args.directory}: no AI Core, vector core or AI CPU error in its logs")
        return 0
    for case in cases:
        t = case.triage
        where = f"device {case.error.device_id}, stream {case.error.stream_id}, task {case.error.task_id}"
        print(f"error {case.number}: {t.op_type or t.kernel or '?'} {t.op_name} ({where})")
        print(f"  verdict: {t.verdict}")
        for line in t.error_bits:
            print(f"  {line}")
        if t.repro:
            print(f"  re-run: python {t.repro}")
    count = len(cases)
    print(f"{count} error{'s' if count != 1 else ''}; reports in {reports}")
    return 0


# ------------------------------------------------------------------ decode
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
    from aclmon.dump.report import decode_report, write_text
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
        # which operator dump each record points at: from the directory's index, or
        # for a file named on its own, among the files beside it
        report = decode_report(
            path, with_stats=not args.no_stats, bins=args.bins, op_dumps=links.get(path)
        )
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
            write_text(report, sys.stdout)
    return 1 if failed else 0


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
