"""``aclmon export``: a recording, a dump directory with its recording, a live job
or a live fleet as a trace for Perfetto and MindStudio Insight, or as msprof's
op_summary CSV; ``aclmon export --check FILE`` validates a trace (docs/timeline.md).

The export itself is headless (:mod:`aclmon.store.slices`, :mod:`aclmon.store.trace`,
:mod:`aclmon.store.op_summary`); :mod:`aclmon.sources.export_inputs` finds what
to read. A recording is read twice, streaming both times: once to survey it (its
span, the earliest moment any slice starts, which becomes ts 0, and the
executions ``--model`` and ``--iteration`` cut to), once to export it. A live job
or fleet is first spooled to temporary recordings, then exported like
recordings: each source is its own group of processes, labelled with its rank.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aclmon.bus.secrets import TOKEN, add_secret_option
from aclmon.fleet.commands import add_nats_credentials, parse_size

if TYPE_CHECKING:
    from aclmon.sources.export_inputs import Inputs


def configure_export(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source",
        nargs="*",
        help="recording(s) (several: one process group each, as a fleet), a directory holding"
        " a recording and its dumps, a live job (PID, socket, tcp://; default: the only"
        " running agent) or a live fleet nats://SERVER/JOB",
    )
    what = parser.add_argument_group("what to write")
    what.add_argument("--trace", metavar="OUT", help="write a trace (Chrome JSON) to OUT")
    what.add_argument("-o", "--output", metavar="OUT", help="write --format's output to OUT")
    what.add_argument(
        "--format",
        choices=("trace", "op-summary"),
        default="trace",
        help="trace: Chrome trace-event JSON (default); op-summary: msprof's op_summary CSV",
    )
    what.add_argument(
        "--check",
        nargs="+",
        metavar="FILE",
        help="validate trace files instead of exporting (exit 1 if one breaks a rule)",
    )
    what.add_argument("--json", action="store_true", help="with --check: the report as JSON")
    what.add_argument(
        "--max-size",
        default="512MiB",
        metavar="SIZE",
        help="largest trace file; a longer trace is split into _slice_N files (512MiB)",
    )
    span = parser.add_argument_group("what to include")
    span.add_argument("--dumps", metavar="DIR", help="the job's dump directory (dump paths)")
    span.add_argument(
        "--since",
        metavar="TIME",
        help="from this time: replay's forms (90 = s from the start, -10m = 10 min before"
        " the end, 14:03:07 UTC, ISO); nats://: this far back in JetStream (10m, all)",
    )
    span.add_argument("--until", metavar="TIME", help="to this time (+5s: 5 s after --since)")
    span.add_argument("--window", metavar="FROM..TO", help="both at once, e.g. 10s..12s")
    span.add_argument("--model", metavar="NAME|ID", help="the span of this model's executions")
    span.add_argument(
        "--iteration",
        metavar="N[-M]",
        help="the span of the model's Nth (to Mth) execution, counted from 1",
    )
    live = parser.add_argument_group("live sources")
    live.add_argument(
        "--duration",
        metavar="DURATION",
        help="how long to record a live source (30s, 10m); default: until it ends or Ctrl-C",
    )
    add_secret_option(parser, TOKEN, "the agent's token (nats://: the NATS token)")
    add_nats_credentials(parser)
    parser.set_defaults(handler=export_command)


# ---------------------------------------------------------------- the command
def export_command(args: argparse.Namespace) -> int:
    from aclmon.errors import AclmonError

    max_bytes = parse_size(args.max_size)
    if args.check:
        return _check_command(args.check, max_bytes, args.json)
    out = args.trace or args.output
    if args.trace and args.output:
        raise AclmonError("give the output once: --trace OUT or -o OUT")
    if not out:
        raise AclmonError("say where to write: --trace OUT.json (or -o OUT --format op-summary)")
    if args.trace and args.format == "op-summary":
        raise AclmonError("--trace writes a trace; use -o OUT with --format op-summary")
    if args.format == "trace":
        from aclmon.store.trace import MIN_MAX_BYTES

        if max_bytes < MIN_MAX_BYTES:
            raise AclmonError(f"--max-size must be at least {MIN_MAX_BYTES // 1024}KiB")
    from aclmon.sources.export_inputs import Inputs, read_inputs

    with Inputs() as inputs:  # a live source's spool goes when the export is done
        read_inputs(args, inputs)
        return _export(args, inputs, out, max_bytes)


def _check_command(files: list[str], max_bytes: int, as_json: bool) -> int:
    import json

    from aclmon.store.trace_check import check_trace

    reports = [check_trace(path, max_bytes) for path in files]
    if as_json:
        print(json.dumps([r.to_json() for r in reports], indent=1))
    else:
        for report in reports:
            print("\n".join(report.lines()))
    return 0 if all(r.ok for r in reports) else 1


# ---------------------------------------------------------------- the export
@dataclass
class _Recording:
    """What the export learns of a recording before reading it through."""

    path: Path
    reader: Any  # its RecordingReader, indexed once, open until the export is done
    first_ns: int | None = None
    last_ns: int | None = None
    rank: int = -1
    survey: Any = None  # a Survey, when the options need one


def _export(args: argparse.Namespace, inputs: Inputs, out: str, max_bytes: int) -> int:
    from aclmon.errors import AclmonError
    from aclmon.store.trace import MAX_RELATIVE_NS

    # A survey (a pass over the events) only when the options need what it knows:
    # the executions --model/--iteration cut to, the metric columns of op_summary.
    survey = bool(args.model or args.iteration or args.format == "op-summary")
    recordings = [_look(path, inputs, survey, bool(args.model or args.iteration))
                  for path in inputs.recordings]  # fmt: skip
    known = [r for r in recordings if r.first_ns is not None and r.last_ns is not None]
    if not known:
        names = ", ".join(str(p) for p in inputs.recordings) or "the source"
        raise AclmonError(f"{names}: no events to export")
    first = min(r.first_ns for r in known if r.first_ns is not None)
    last = max(r.last_ns for r in known if r.last_ns is not None)
    window = _window(args, first, last, [r.survey for r in recordings], inputs.since_applies)
    # ts 0 is the earliest start of anything shown; without a survey, the first
    # event's time, and a second pass if something began before it (rare: a call
    # or a range that was running when the recording started).
    floor = last - MAX_RELATIVE_NS
    starts = [r.survey.earliest_ns for r in recordings if r.survey and r.survey.earliest_ns]
    origin = max(floor, min([first, *starts]))
    recordings.sort(key=lambda r: (r.rank < 0, r.rank))
    written = _write(args, out, origin, max_bytes, recordings, window, inputs)
    earliest = getattr(written.writer, "earliest_clamped_ns", None)
    if earliest is not None and earliest >= floor:
        for path in written.files:
            os.unlink(path)
        written = _write(args, out, earliest, max_bytes, recordings, window, inputs)
    _report(written, inputs)
    return 0


@dataclass
class _Written:
    writer: Any
    files: list[Path]
    counts: dict[str, int]
    #: what the decoder skipped, per recording
    skipped: list[str]


def _write(args: argparse.Namespace, out: str, origin: int, max_bytes: int,
           recordings: list[_Recording], window: tuple[int | None, int | None] | None,
           inputs: Inputs) -> _Written:  # fmt: skip
    """One pass over every recording, into a new writer."""
    import itertools

    from aclmon.store.slice_model import SliceModel
    from aclmon.store.slices import SourceLabel, WindowFilter

    several = len(recordings) > 1
    writer = _writer(args, out, origin, max_bytes, recordings, several)
    sink: Any = writer if window is None else WindowFilter(writer, *window)
    dump_events = inputs.dump_events()
    flow_ids = itertools.count(1)
    counts: dict[str, int] = {}
    skipped = []
    try:
        for group, recording in enumerate(recordings, start=1):
            label = SourceLabel(group=group, rank=recording.rank if several else -1)
            model = SliceModel(sink, source=label, flow_ids=flow_ids)
            model.learn_dumps(dump_events)
            skipped.append(_read(recording, model.apply))
            for dump in dump_events:
                if dump.kind == "overflow":
                    model.apply(dump)
            model.finish()
            for kind, n in model.counts.items():
                counts[kind] = counts.get(kind, 0) + n
    finally:
        files = writer.close()
    return _Written(writer, [Path(f) for f in files], counts, [n for n in skipped if n])


def _writer(args: argparse.Namespace, out: str, origin: int, max_bytes: int,
            recordings: list[_Recording], several: bool) -> Any:  # fmt: skip
    from aclmon import __version__

    if args.format == "op-summary":
        from aclmon.store.op_summary import OpSummaryWriter

        metrics: dict[str, None] = {}
        for recording in recordings:
            metrics.update(recording.survey.metrics)
        return OpSummaryWriter(out, list(metrics), with_rank=several)
    from aclmon.store.trace import TraceWriter

    sources = [str(p) for p in args.source] or ["the only running agent"]
    other = {"tool": f"aclmon {__version__} export", "sources": sources}
    return TraceWriter(out, origin_ns=origin, max_bytes=max_bytes, other_data=other)


def _read(recording: _Recording, apply: Callable[[Any], None]) -> str | None:
    """Every event of the recording through ``apply``; what was skipped, if anything."""
    decoder = recording.reader.decoder
    before = decoder.malformed, decoder.unknown
    for event in _events(recording.reader):
        apply(event)
    malformed, unknown = decoder.malformed - before[0], decoder.unknown - before[1]
    if malformed or unknown:
        return (f"{recording.path}: {malformed} malformed frames and {unknown} events of"
                " unknown kinds skipped")  # fmt: skip
    return None


#: events looked at for the source's Hello (its rank)
_HELLO_WINDOW = 64
#: frames decoded at once (the reader's own steps of 2 MiB hold ~20 MiB of events)
_READ_FRAMES = 4096


def _events(reader: Any) -> Iterator[Any]:
    """The recording's events, decoded a few thousand at a time (flat memory)."""
    for start in range(0, len(reader), _READ_FRAMES):
        yield from reader.iter_events(start, start + _READ_FRAMES)


def _look(path: Path, inputs: Inputs, survey: bool, executions: bool) -> _Recording:
    """The span of a recording from its index, its rank from its Hello, what it
    says about itself, and a survey of its events if asked. Its reader stays open
    (indexed once) for the export."""
    from aclmon.bus.recording import RecordingReader
    from aclmon.events import Hello
    from aclmon.store.slice_survey import Survey

    reader = RecordingReader(path, background=False)
    inputs.cleanup.append(reader.close)
    found = _Recording(path, reader)
    if reader.schema_warning:
        inputs.notes.append(reader.schema_warning)
    if reader.cut is not None:
        inputs.notes.append(f"{path}: exported up to where it is readable, {reader.cut}")
    column = reader.timestamps
    for start in range(0, len(column), _READ_FRAMES):  # block by block: flat memory
        times = column[start : start + _READ_FRAMES]
        times = times[times > 0]
        if len(times):
            low, high = int(times.min()), int(times.max())
            found.first_ns = low if found.first_ns is None else min(found.first_ns, low)
            found.last_ns = high if found.last_ns is None else max(found.last_ns, high)
    for event in reader.iter_events(0, _HELLO_WINDOW):
        if isinstance(event, Hello) and event.rank >= 0:
            found.rank = event.rank
            break
    if survey:
        found.survey = Survey(executions={} if executions else None)
        found.survey.add_many(_events(reader))
    return found


# ---------------------------------------------------------------- the span
def _window(
    args: argparse.Namespace, first: int, last: int, surveys: list[Any], since_applies: bool
) -> tuple[int | None, int | None] | None:
    """The span the options cut, or None for everything."""
    from aclmon.errors import AclmonError
    from aclmon.store.seek_time import parse_seek_time

    since_text, until_text = (args.since if since_applies else None), args.until
    if args.window:
        if since_text or until_text:
            raise AclmonError("--window is --since and --until at once: give one or the other")
        since_text, sep, until_text = args.window.partition("..")
        if not sep:
            raise AclmonError(f"--window {args.window!r}: expected FROM..TO (e.g. 10s..12s)")
        since_text, until_text = since_text or None, until_text or None
    start = parse_seek_time(since_text, first, last, last) if since_text else None
    end = parse_seek_time(until_text, first, last, start or first) if until_text else None
    if args.model or args.iteration:
        span = _model_span(args.model, args.iteration, surveys)
        start = span[0] if start is None else max(start, span[0])
        end = span[1] if end is None else min(end, span[1])
    if start is None and end is None:
        return None
    if start is not None and end is not None and end < start:
        raise AclmonError("the span to export ends before it starts")
    return start, end


def _model_span(model: str | None, iteration: str | None, surveys: list[Any]) -> tuple[int, int]:
    from aclmon.errors import AclmonError

    first, last = _iterations(iteration)
    spans: list[tuple[int, int]] = []
    names: set[str] = set()
    for survey in surveys:
        executed = {m: survey.models.get(m, f"#{m}") for m in survey.executions or ()}
        names.update(executed.values())
        if model is None:
            if len(executed) > 1:
                listing = ", ".join(sorted(set(executed.values())))
                raise AclmonError(f"--iteration: several models ran ({listing}); add --model")
            chosen = list(executed)
        else:
            chosen = [m for m, name in executed.items() if model in (name, str(m))]
        for model_id in chosen:
            if first <= survey.execution_count(model_id):
                spans.append(survey.iterations(model_id, first or 1, last or None))
    if not spans:
        what = f"model {model!r}" if model else "a model"
        where = f" (executed: {', '.join(sorted(names))})" if names else " (no execution recorded)"
        which = f" iteration {iteration}" if iteration else ""
        raise AclmonError(f"no execution of {what}{which}{where}")
    return min(s for s, _ in spans), max(e for _, e in spans)


def _iterations(text: str | None) -> tuple[int, int]:
    """``N`` or ``N-M`` (counted from 1) as (first, last); (0, 0) for every one."""
    from aclmon.errors import AclmonError

    if not text:
        return 0, 0
    low, _, high = text.partition("-")
    if not low.isdigit() or (high and not high.isdigit()) or int(low) < 1:
        raise AclmonError(f"--iteration {text!r}: expected N or N-M, counted from 1")
    first, last = int(low), int(high or low)
    if last < first:
        raise AclmonError(f"--iteration {text!r}: the last comes before the first")
    return first, last


# ---------------------------------------------------------------- the report
_SHOWN = (
    ("operator", "operators"),
    ("execution", "executions"),
    ("synchronize", "synchronizes"),
    ("msproftx", "msproftx ranges"),
    ("msproftx mark", "marks"),
    ("exception", "exceptions"),
    ("overflow", "overflows"),
    ("failed call", "failed calls"),
    ("unfinished call", "unfinished calls"),
    ("counter", "samples"),
    ("flow", "flows"),
)


def _report(written: _Written, inputs: Inputs) -> None:
    counts = written.counts
    shown = ", ".join(f"{counts[k]} {name}" for k, name in _SHOWN if counts.get(k))
    for note in [*inputs.notes, *written.skipped]:
        print(f"aclmon export: {note}", file=sys.stderr)
    clamped = getattr(written.writer, "clamped", 0)
    if clamped:  # only when they began more than 104 days before the end
        print(f"aclmon export: {clamped} items began long before the rest (drawn at 0)",
              file=sys.stderr)  # fmt: skip
    unwritable = getattr(written.writer, "unwritable", 0)
    if unwritable:
        print(f"aclmon export: {unwritable} items with times no trace can hold left out",
              file=sys.stderr)  # fmt: skip
    for path in written.files:
        print(f"wrote {path} ({os.path.getsize(path) / 2**20:.1f} MiB)")
    print(f"  {shown or 'nothing in the span'}")
