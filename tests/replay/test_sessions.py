"""Real sessions from the simulated runtime: live vs replay, the dump directory, --json."""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
from contextlib import redirect_stderr, redirect_stdout

import pytest
from rich.console import Console
from rich.style import Style
from session import watch_live_and_record

from aclmon.bus.recording import RecordingReader
from aclmon.cli import main
from aclmon.sources.dumpdir import DumpDirectorySource
from aclmon.sources.replay_inputs import dump_events, find_inputs, resolve_dump_path
from aclmon.store.replay import ReplayEngine
from aclmon.tui.app import AclmonApp
from aclmon.tui.dumpdetail import decode_for_view
from aclmon.tui.replay import ReplayApp, build_app

SIZE = (150, 44)
#: sampled kinds: a live viewer may join after the first few samples were sent
SAMPLED = {"host_sample", "device_sample"}
#: a Hello and a History come with each snapshot the agent sends (at a viewer's
#: start, and its last before the Goodbye), and so does the profiling state once
#: profiling has been set (it changes several times in the demo: a viewer that
#: joined after the first change gets it restated): how many a viewer and the
#: recording hold depends on when each joined, not on the job (what they carry is
#: compared with the state above; failed once in CI with 3 against 2)
RESTATED = {"hello", "history", "profiling_state"}


def without_resent_stamps(state: dict) -> dict:
    """A viewer that connects gets the agent's current state re-sent with
    ``seq = 0`` and the time of sending (architecture.md): where such a
    single-event section may be that copy, compare its content only."""
    for key in ("target", "profiling", "last_reply"):
        if state.get(key):
            state[key] = {k: v for k, v in state[key].items() if k not in ("seq", "ts_ns")}
    return state


def replay_to_end(path) -> dict:
    reader = RecordingReader(path, background=False)
    engine = ReplayEngine(reader, path)
    try:
        engine.seek(len(engine))
        return engine.store.to_json()
    finally:
        engine.close()
        reader.close()


def test_a_live_session_and_its_recording_replayed_end_in_the_same_state(tmp_path):
    live, session = watch_live_and_record(tmp_path / "live")
    replayed = replay_to_end(session.recording)
    shown = live.to_json()
    assert shown["exceptions"]["total"] == 1 and shown["dumps"]["total"] == 11
    live_counts = shown.pop("counters")
    replay_counts = replayed.pop("counters")
    assert without_resent_stamps(shown) == without_resent_stamps(replayed)
    for kind, count in replay_counts["per_kind"].items():
        if kind in RESTATED:
            continue
        if kind in SAMPLED:
            assert live_counts["per_kind"].get(kind, 0) <= count
        else:
            assert live_counts["per_kind"].get(kind) == count, kind


def test_the_demo_watched_live_and_its_recording_replayed_end_in_the_same_state(tmp_path):
    live, session = watch_live_and_record(tmp_path / "demo", demo_seconds=2.5)
    replayed = replay_to_end(session.recording)
    shown = live.to_json()
    assert shown["models"] and shown["devices"]  # the demo really ran
    live_counts = shown.pop("counters")
    replay_counts = replayed.pop("counters")
    assert without_resent_stamps(shown) == without_resent_stamps(replayed)
    for kind, count in replay_counts["per_kind"].items():
        if kind in RESTATED:
            continue
        if kind in SAMPLED:
            assert live_counts["per_kind"].get(kind, 0) <= count
        else:
            assert live_counts["per_kind"].get(kind) == count, kind


async def test_replay_of_the_jobs_directories_shows_the_live_log_lines(tmp_path):
    """The job's recording, dump directory and CANN log directory replayed
    together: the Logs view holds the plog lines the live viewer showed, once
    each, at their times (the failed synchronize's ERROR beside the exception)."""
    directory = tmp_path / "job"
    live, _session = watch_live_and_record(directory, log_dir=directory / "log")
    live_lines = [(line.logged_ns, line.text) for line in live.state.logs if line.log_file]
    assert any("aclrtSynchronizeStream" in text for _, text in live_lines)
    inputs = find_inputs(directory)
    assert inputs.recording is not None and inputs.log_files and inputs.dump_files
    app = build_app(inputs, interval=30.0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine.index.indexed)
        await pilot.press("E")
        await wait_for(pilot, lambda: not app.seeking)
        replayed = [(line.logged_ns, line.text) for line in app.store.state.logs if line.log_file]
        assert replayed == sorted(set(replayed))  # in time order, no line twice
        assert replayed == sorted(live_lines)
        # at their own times: right after the exception, before the agent had read them
        exception = app.store.state.exceptions[-1]
        engine = app.engine
        at = engine.state_at(engine.position_of_time(exception.ts_ns + 1))
        assert exception in at.exceptions
        assert any(f"task_id={exception.task_id}" in line.text for line in at.logs)
        await pilot.press("5")
        assert app.current_view == "logs"
        rows = app.logs_view.vlist
        assert rows.row_count >= len(live_lines)


def test_sim_dump_directory_lists_and_decodes_every_file(sim_session):
    on_disk = sorted(str(p) for p in sim_session.dumps.rglob("*") if p.is_file())
    inputs = find_inputs(sim_session.dumps)
    assert inputs.recordings == []
    assert sorted(str(p) for p in inputs.dump_files) == on_disk and len(on_disk) == 11
    events = dump_events(inputs.dump_files)
    assert sorted(e.path for e in events) == on_disk
    assert [e.kind for e in events][:1] == ["overflow"]  # overflow records come first
    for event in events:
        assert "error" not in event.summary, event.summary
        report = decode_for_view(event.path)
        assert "error" not in report, report["error"]
        shown = report.get("operator", report)
        assert shown["tensors"] and all("stats" in t for t in shown["tensors"])
    overflow = events[0]
    assert overflow.summary["operator"] == "Add add1"
    assert os.path.dirname(overflow.summary["op_dump"]) == os.path.dirname(overflow.path)
    report = decode_for_view(overflow.path)
    assert report["records"] and any(
        "floating-point computation overflow" in line for line in report["records"][0]["explained"]
    )
    assert report["records"][0]["op_dump"] == overflow.summary["op_dump"]
    assert report["operator"]["path"] == overflow.summary["op_dump"]
    groups = [e.summary["group"] for e in events[1:]]
    assert groups == sorted(groups, key=lambda g: int(g.rsplit(" ", 1)[1]))  # steps in order
    assert groups[0] == "device 0 · model tiny (1) · step 0"


def text_of(app, selector: str) -> str:
    widget = app.screen.query_one(selector)
    console = Console(width=max(widget.size.width, 60), file=io.StringIO(), record=True)
    console.print(widget.content)
    return console.export_text()


async def wait_for(pilot, predicate, timeout: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise AssertionError("condition not reached")
        await pilot.pause(0.02)


def test_decode_json_and_the_pane_show_one_report_of_a_file(sim_session, capsys):
    """``aclmon decode --json`` and the Dumps pane build the same report (one
    builder): the same tensors, statistics, records and operator dump."""
    from aclmon.dump.report import decode_report
    from aclmon.tui.dumpdetail import HIST_BINS, MAX_STAT_TENSORS, render_report

    overflow = next(str(p) for p in sim_session.dumps.rglob("Opdebug.*"))
    op_dump = next(str(p) for p in sim_session.dumps.rglob("Add.*"))
    for path in (op_dump, overflow):
        assert main(["decode", "--json", "--bins", str(HIST_BINS), path]) == 0
        printed = json.loads(capsys.readouterr().out)
        pane = decode_for_view(path)
        pane.pop("operator", None)  # the pane also decodes the operator an overflow names
        assert json.loads(json.dumps(pane)) == printed
        assert pane == decode_report(path, bins=HIST_BINS, stat_tensors=MAX_STAT_TENSORS)
    report = decode_for_view(overflow)
    console = Console(width=140, file=io.StringIO(), record=True)
    console.print(render_report(report, {"dim": Style(), "bad": Style()}))
    text = console.export_text()
    for line in report["records"][0]["explained"]:
        assert line in text
    assert os.path.basename(report["records"][0]["op_dump"]) in text
    first = report["operator"]["tensors"][0]
    assert f"{first['role']} {first['index']}  {first['dtype']}" in text


async def test_a_dump_directory_opens_grouped_in_the_dumps_view(sim_session):
    app = build_app(find_inputs(sim_session.dumps))
    assert isinstance(app.source, DumpDirectorySource)
    async with app.run_test(size=SIZE) as pilot:
        assert app.current_view == "dumps"
        await wait_for(pilot, lambda: app.store.state.dumps_total == 11)
        await pilot.pause()
        view = app.dumps_view
        # the plain app, grouped: none of the timeline's keys in its footer
        assert view.grouped and not isinstance(app, ReplayApp) and isinstance(app, AclmonApp)
        shown = {b.binding.id or "" for b in app.screen.active_bindings.values() if b.binding.show}
        assert shown and not {i for i in shown if i.startswith("replay.")}
        assert {"app.quit", "app.help", "dumps.overflow_only"} <= shown
        rows = [view._render_row(i, 140).plain for i in range(view.vlist.row_count)]
        assert rows[0].startswith(" Overflow records")
        # the operator that overflowed, where (device, model, step); what it means beside
        assert rows[1].split()[1:5] == ["overflow", "0", "tiny", "2"] and "add1" in rows[1]
        assert "AI Core: floating-point computation overflow" in text_of(app, "#dump-detail")
        assert sum("device 0 · model tiny (1) · step" in r for r in rows) == 10
        assert "11 dump file(s)" in text_of(app, "#dumps-status")
        assert view.vlist.cursor == 1  # on the overflow record, not following the end
        await pilot.press("enter")  # decoded on a worker thread
        await wait_for(pilot, lambda: "OPERATOR THAT OVERFLOWED" in text_of(app, "#dump-detail"))
        assert "Add add1" in text_of(app, "#dump-detail")
        await pilot.press("down", "enter")  # a heading: nothing to decode
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: "DT_FLOAT16" in text_of(app, "#dump-detail"))


async def test_a_directory_with_both_replays_the_recording_and_finds_moved_dumps(
    sim_session, tmp_path
):
    moved = tmp_path / "moved"
    shutil.copytree(sim_session.directory, moved)
    inputs = find_inputs(moved)
    assert [p.name for p in inputs.recordings] == ["session.aclmrec"]
    assert len(inputs.dump_files) == 11
    original = next(p for p in sim_session.dumps.rglob("Opdebug*"))
    gone = str(tmp_path / "nowhere" / original.name)
    assert resolve_dump_path(gone, inputs) == str(next(moved.rglob("Opdebug*")))
    app = build_app(inputs, interval=30.0)
    async with app.run_test(size=SIZE) as pilot:
        assert app.engine is not None and app.current_view == "devices"
        await wait_for(pilot, lambda: app.engine.index.indexed)
        await pilot.press("E")
        await wait_for(pilot, lambda: not app.seeking)
        assert app.store.to_json() == replay_to_end(inputs.recording)


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_json_summary_of_a_recording_and_its_dumps(sim_session):
    code, out, _ = run_cli("replay", "--json", str(sim_session.directory))
    assert code == 0
    data = json.loads(out)
    rec = data["recording"]
    assert rec["truncated"] is None and rec["skipped_frames"] == 0
    assert rec["counts"]["exception"] == 1 and rec["counts"]["dump_file"] == 11
    # the agent's final snapshot restates the exception and the dump files: not counted
    assert rec["events"] == sum(rec["counts"].values()) + rec["restated"] == rec["frames"]
    assert rec["restated"] == 12
    (exception,) = rec["exceptions"]
    assert exception["op_name"] == "relu1" and exception["error_code"] == 507015
    assert exception["error_name"] == "ACL_ERROR_RT_AICORE_EXCEPTION"
    (overflow,) = rec["overflows"]
    assert overflow["operator"] == "Add add1"  # linked through the recording's own dump events
    assert os.path.dirname(overflow["op_dump"]) == os.path.dirname(overflow["path"])
    assert overflow["records"][0]["overflowed"] == [
        "AI Core: floating-point computation overflow (0x020)"
    ]
    span = rec["time_span"]
    assert 0 < span["seconds"] < 60 and span["first_utc"].endswith("Z")
    dumps = data["dumps"]
    assert dumps["files"] == 11 and dumps["counts"] == {"op-dump": 10, "overflow": 1}
    assert dumps["overflows"][0]["operator"] == "Add add1"
    assert len(dumps["op_dumps_by_group"]) == 10 and not dumps["errors"]


def test_json_summary_of_a_truncated_recording(sim_session, tmp_path):
    cut = tmp_path / "cut.aclmrec"
    data = sim_session.recording.read_bytes()
    cut.write_bytes(data[:-5])
    code, out, _ = run_cli("replay", "--json", str(cut))
    assert code == 0
    rec = json.loads(out)["recording"]
    assert rec["truncated"]["reason"].startswith("file ends inside a frame")
    full = json.loads(run_cli("replay", "--json", str(sim_session.recording))[1])["recording"]
    assert rec["events"] == full["events"] - 1


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p, "no aclmon recording, dump, CANN log or msprof export files found"),
        (lambda p: (p / "notes.txt").write_text("hello") and p / "notes.txt", "neither"),
        (lambda p: p / "missing", "missing: no such file or directory"),
    ],
)
def test_bad_paths_give_one_clear_error(tmp_path, make, message):
    target = make(tmp_path)
    code, out, err = run_cli("replay", "--json", str(target))
    assert code == 1 and out == ""
    assert message in err and "Traceback" not in err


def test_a_recording_is_found_by_its_header_whatever_its_name(sim_session, tmp_path):
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    shutil.copy(sim_session.recording, nested / "job.bin")
    (tmp_path / "a" / "fake.aclmrec").write_bytes(b"not a recording at all")
    os.mkfifo(tmp_path / "a" / "pipe")  # never opened: it could block forever
    inputs = find_inputs(tmp_path)
    assert inputs.recordings == [nested / "job.bin"] and inputs.dump_files == []


def test_reading_a_dump_directory_stops_when_asked(sim_session):
    from aclmon.sources.replay_inputs import Cancelled

    files = find_inputs(sim_session.dumps).dump_files
    seen = []

    def stop_after_three() -> bool:
        seen.append(1)
        return len(seen) > 3

    with pytest.raises(Cancelled):
        dump_events(files, stop_after_three)
    source = DumpDirectorySource(find_inputs(sim_session.dumps))
    source.start()
    source.close()  # at once: the reader stops at the next file
    assert source.wait_loaded(0) and source.error == ""  # finished or cancelled, not failed


@pytest.mark.parametrize("speed", ["0.1", "65", "-1"])
def test_speed_outside_the_range_is_one_clear_error(sim_session, speed):
    code, _out, err = run_cli("replay", "--speed", speed, str(sim_session.recording))
    assert code == 1 and "--speed must be between 0.25 and 64" in err


def test_a_recording_with_a_bad_header_is_one_clear_error(tmp_path):
    bad = tmp_path / "bad.aclmrec"
    bad.write_bytes(b"ACLMREC\0" + b"\xff" * 30)  # the magic, then a version from the future
    code, _out, err = run_cli("replay", str(bad))
    assert code == 1 and "not supported" in err and "Traceback" not in err
