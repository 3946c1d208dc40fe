"""Finding what to replay under PATH, with hostile files about."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aclmon.bus.recording import MAGIC as RECORDING_MAGIC
from aclmon.sources.replay_inputs import (
    UNGROUPED,
    ReplayInputError,
    dump_events,
    dump_group,
    find_inputs,
)

NAMES = st.sampled_from(
    [
        "Add.add1.7.2.1796203689381353",
        "Opdebug.Node_OpDebug.8.2.1796203689381353",
        "MatMul.mm.1.4.1796203459523750.4.0.1.0",
        "stats.csv",
        "session.aclmrec",
        "notes.txt",
    ]
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    files=st.lists(st.tuples(NAMES, st.binary(max_size=200), st.booleans()), min_size=1, max_size=6)
)
def test_hostile_files_never_raise_anything_but_one_clear_error(tmp_path_factory, files):
    root = tmp_path_factory.mktemp("hostile")
    for n, (name, data, with_magic) in enumerate(files):
        folder = root / str(n)
        folder.mkdir()
        (folder / name).write_bytes((RECORDING_MAGIC if with_magic else b"") + data)
    try:
        found = find_inputs(root)
    except ReplayInputError as exc:
        assert "no aclmon recording, dump, CANN log or msprof export files" in str(exc)
        return
    for recording in found.recordings:
        assert recording.read_bytes().startswith(RECORDING_MAGIC)
    for event in dump_events(found.dump_files):  # summaries say what is wrong, never raise
        assert event.path in {str(p) for p in found.dump_files}
        assert isinstance(event.summary, dict)


def test_groups_come_from_the_documented_tree():
    group = dump_group(Path("/d/20261202092809/3/resnet50/11/42/Conv2D.conv1.1.2.3"))
    assert (group.device, group.model, group.model_id, group.step) == (3, "resnet50", 11, 42)
    assert group.label() == "device 3 · model resnet50 (11) · step 42"
    assert dump_group(Path("/flat/Conv2D.conv1.1.2.3")) == UNGROUPED
    crash = dump_group(Path("/d/extra-info/data-dump/3/exception_info.layer1_conv2.1311.17"))
    assert crash.exception and crash.label() == "exception dumps · device 3"
    assert crash.sort_key() < group.sort_key()  # listed before the steps
    assert dump_group(Path("/a/b/c/d/e/Conv2D.conv1.1.2.3")) == UNGROUPED  # not numbers


def test_a_single_file_is_a_recording_a_dump_or_one_clear_error(tmp_path, sim_session):
    recording = tmp_path / "x.bin"
    recording.write_bytes(RECORDING_MAGIC + bytes(40))
    assert find_inputs(recording).recordings == [recording]
    dump = next(sim_session.dumps.rglob("Add.*"))
    assert find_inputs(dump).dump_files == [dump]
    text = tmp_path / "readme.txt"
    text.write_text("not a dump")
    with pytest.raises(
        ReplayInputError, match="neither an aclmon recording, a dump file, a CANN log file nor"
    ):
        find_inputs(text)


PLOG = (
    "[INFO] ASCENDCL(77,python3):2024-05-01-12:00:00.100.000 [acl.cpp:1]aclInit ok\n"
    "[ERROR] RUNTIME(77,python3):2024-05-01-12:00:02.000.000 [stream.cc:9]sync failed\n"
    "    stream_id:3, task_id:12\n"
    "junk \x00\n"
    "[WARNING] GE(77,python3):2024-05-01-12:00:01.000 [ge.cc:5]overflow\n"
)


def test_replay_of_a_directory_reads_its_cann_log_files(tmp_path):
    from aclmon.sources.dumpdir import DumpDirectorySource
    from aclmon.sources.replay_summary import replay_summary

    (tmp_path / "dump").mkdir()
    (tmp_path / "dump" / "Add.add1.7.2.1796203689381353").write_bytes(b"\0" * 16)
    logs = tmp_path / "log" / "debug" / "plog"
    logs.mkdir(parents=True)
    (logs / "plog-77_20240501120000000.log").write_text(PLOG)
    (logs / "notes.log").write_text(PLOG)  # not a plog name: not read
    found = find_inputs(tmp_path)
    assert [p.name for p in found.log_files] == ["plog-77_20240501120000000.log"]
    source = DumpDirectorySource(found)
    source.start()
    assert source.wait_loaded(20) and source.error == ""
    events = source.poll(100)
    lines = [e for e in events if type(e).__name__ == "LogLine"]
    # warnings and errors only, in the time they state, numbered after the dump files
    assert [(line.level, line.module, line.text) for line in lines] == [
        ("warning", "GE", "overflow"),
        ("error", "RUNTIME", "sync failed\n    stream_id:3, task_id:12"),
    ]
    assert lines[0].seq == len(events) - 1 and lines[0].ts_ns == lines[0].logged_ns > 0
    assert any("1 line(s) that are not log entries" in p for p in found.problems)
    summary = replay_summary(find_inputs(tmp_path / "log"))
    assert summary["logs"]["lines_total"] == 2 and summary["logs"]["levels"] == {
        "error": 1,
        "warning": 1,
    }
    with pytest.raises(ReplayInputError, match="nor an msprof export file"):
        find_inputs(tmp_path / "log" / "debug" / "plog" / "notes.log")
