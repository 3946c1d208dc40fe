"""The plog parser on log text in the documented format, and finding a process's log files."""

from __future__ import annotations

import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon.dump.plog import (
    PlogEntry,
    PlogParser,
    at_least,
    find_log_files,
    log_file_pid,
    log_root,
    logs_go_to_stdout,
    parse_file,
    parse_text,
)

SAMPLE = """\
[ERROR] TEFUSION(12940,atc):2021-10-17-05:54:07.599.074 [tensor_engine/te_fusion/pywrapper.cc:33]InitPyLogger Failed to import te.platform.log_util
[INFO] ASCENDCL(12940,atc):2021-10-17-05:54:07.600 [acl.cpp:120]aclInit success
[ERROR] RUNTIME(12940,atc):2021-10-17-05:54:08.001.002 [device_error_proc.cc:712]report error module_type=3, module_name=EZ9999
    The error from device(chipId:0, dieId:0), serial number is 7, an exception occurred
    during AICORE operator execution, stream_id:3, task_id:12.
[WARNING] GE(12940,atc):2021-10-17-05:54:09.000.500 no location here
"""


def local_ns(y, mo, d, h, mi, s, ms=0, us=0) -> int:
    return int(time.mktime((y, mo, d, h, mi, s, 0, 0, -1))) * 10**9 + ms * 10**6 + us * 10**3


def test_entries_of_the_documented_format():
    entries, parser = parse_text(SAMPLE)
    assert parser.garbage == 0 and parser.truncated == 0
    assert [e.level for e in entries] == ["error", "info", "error", "warning"]
    first = entries[0]
    assert (first.module, first.pid, first.process) == ("TEFUSION", 12940, "atc")
    assert first.location == "tensor_engine/te_fusion/pywrapper.cc:33"
    assert first.text == "InitPyLogger Failed to import te.platform.log_util"
    assert first.logged_ns == local_ns(2021, 10, 17, 5, 54, 7, 599, 74)
    assert first.line == 1
    # milliseconds only (some releases)
    assert entries[1].logged_ns == local_ns(2021, 10, 17, 5, 54, 7, 600)
    # a multi-line entry is kept whole
    multi = entries[2]
    assert multi.text.splitlines() == [
        "report error module_type=3, module_name=EZ9999",
        "    The error from device(chipId:0, dieId:0), serial number is 7, an exception occurred",
        "    during AICORE operator execution, stream_id:3, task_id:12.",
    ]
    assert multi.line == 3
    # no [file:line]
    assert entries[3].location == "" and entries[3].text == "no location here"


def test_garbage_lines_are_counted_never_raised():
    text = (
        "garbage before any entry\n"
        "\x00\x01binary\n"
        "[ERROR] GE(1,p):2021-13-45-99:99:99.000.000 [a.cc:1]impossible date\n"
        "[ERROR] broken header\n"
        "[WARNING] HCCL(7,python3):2024-02-29-23:59:59.999.999 [hccl.cc:9]leap day\n"
        "continued\n"
        "\x1b[31mescape junk\n"
        "[INFO] RUNTIME(7,python3):2024-03-01-00:00:00.000"  # no newline at the end
    )
    entries, parser = parse_text(text)
    assert parser.garbage == 4  # before any entry, NUL line, broken header, escape junk
    assert [e.level for e in entries] == ["error", "warning", "info"]
    assert entries[0].logged_ns == 0  # a date that cannot be: kept, time unknown
    assert entries[1].text == "leap day\ncontinued"
    assert entries[2].text == "" and entries[2].location == ""


def test_feeding_in_pieces_keeps_the_open_entry_until_the_next_header():
    parser = PlogParser()
    lines = SAMPLE.splitlines()
    assert [e.level for e in parser.feed(lines[:3])] == ["error", "info"]
    assert parser.pending
    assert parser.feed(lines[3:5]) == []  # continuation lines of the open entry
    (multi,) = parser.feed(lines[5:])
    assert multi.text.count("\n") == 2
    last = parser.flush()
    assert last is not None and last.level == "warning" and parser.flush() is None


def test_long_entries_are_cut_and_counted():
    header = "[ERROR] GE(1,p):2021-10-17-05:54:07.599.074 [a.cc:1]start"
    entries, parser = parse_text("\n".join([header] + ["x" * 100] * 500))
    assert len(entries) == 1
    assert len(entries[0].text) <= 16_384 and parser.truncated > 0


_LEVELS = st.sampled_from(["ERROR", "WARNING", "INFO", "DEBUG", "EVENT"])
_WORD = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ_", min_size=1, max_size=10)
_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=60
).map(str.strip)


@st.composite
def entries(draw: st.DrawFn) -> tuple[str, PlogEntry]:
    level = draw(_LEVELS)
    module = draw(_WORD)
    pid = draw(st.integers(0, 2**31))
    process = draw(st.text(alphabet="abcdefgh_0123456789", max_size=12))
    stamp = (
        draw(st.integers(2000, 2037)),
        draw(st.integers(1, 12)),
        draw(st.integers(1, 28)),
        draw(st.integers(0, 23)),
        draw(st.integers(0, 59)),
        draw(st.integers(0, 59)),
        draw(st.integers(0, 999)),
        draw(st.one_of(st.none(), st.integers(0, 999))),
    )
    location = draw(st.one_of(st.none(), st.tuples(_WORD.map(str.lower), st.integers(1, 9999))))
    text = draw(_TEXT.filter(lambda t: not t.startswith("[")))
    more = draw(st.lists(_TEXT.filter(lambda t: t and not t.startswith("[")), max_size=3))
    y, mo, d, h, mi, s, ms, us = stamp
    when = f"{y:04}-{mo:02}-{d:02}-{h:02}:{mi:02}:{s:02}.{ms:03}" + (
        f".{us:03}" if us is not None else ""
    )
    where = f" [{location[0]}.cc:{location[1]}]" if location else " "
    header = f"[{level}] {module}({pid},{process}):{when}{where}{text}"
    entry = PlogEntry(
        level.lower(),
        module,
        pid,
        process,
        local_ns(y, mo, d, h, mi, s, ms, us or 0),
        f"{location[0]}.cc:{location[1]}" if location else "",
        "\n".join([text, *more]),
        0,
    )
    return "\n".join([header, *more]), entry


@settings(max_examples=150, deadline=None)
@given(st.lists(entries(), max_size=8))
def test_formatted_entries_parse_back(made: list[tuple[str, PlogEntry]]) -> None:
    parsed, parser = parse_text("\n".join(text for text, _ in made))
    assert parser.garbage == 0
    assert [
        (p.level, p.module, p.pid, p.process, p.logged_ns, p.location, p.text) for p in parsed
    ] == [(e.level, e.module, e.pid, e.process, e.logged_ns, e.location, e.text) for _, e in made]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_parses_without_raising(text: str) -> None:
    entries, parser = parse_text(text)
    assert parser.lines == len(text.splitlines())
    assert all(e.level in {"error", "warning", "info", "debug", "event"} for e in entries)


def test_log_files_of_a_pid_in_old_and_new_layouts(tmp_path: Path):
    old = tmp_path / "old"
    (old / "plog").mkdir(parents=True)
    (old / "device-0").mkdir()
    (old / "plog" / "plog-42_20240101000000000.log").write_text("x")
    (old / "plog" / "plog-43_20240101000000000.log").write_text("x")
    (old / "device-0" / "device-42_20240101000000001.log").write_text("x")
    new = tmp_path / "new"
    (new / "debug" / "plog").mkdir(parents=True)
    (new / "run" / "plog").mkdir(parents=True)
    (new / "debug" / "device-1").mkdir(parents=True)
    (new / "debug" / "plog" / "plog-42_20240101000000000.log").write_text("x")
    (new / "run" / "plog" / "plog-42_20240101000000000.log").write_text("x")
    (new / "debug" / "device-1" / "device-42_20240101000000002.log").write_text("x")
    (new / "debug" / "plog" / "notes.txt").write_text("x")
    assert [p.relative_to(old).as_posix() for p in find_log_files(old, 42)] == [
        "device-0/device-42_20240101000000001.log",
        "plog/plog-42_20240101000000000.log",
    ]
    assert len(find_log_files(old)) == 3
    assert sorted(p.relative_to(new).as_posix() for p in find_log_files(new, 42)) == [
        "debug/device-1/device-42_20240101000000002.log",
        "debug/plog/plog-42_20240101000000000.log",
        "run/plog/plog-42_20240101000000000.log",
    ]
    assert find_log_files(tmp_path / "missing", 42) == []
    assert log_file_pid("plog-7_1.log") == 7 and log_file_pid("plog-7.log") is None


def test_where_logs_go(tmp_path: Path):
    assert log_root({"ASCEND_PROCESS_LOG_PATH": str(tmp_path), "HOME": "/h"}) == tmp_path
    assert log_root({"HOME": "/h"}) == Path("/h/ascend/log")
    # the work path holds one directory per kind of file: the logs are in its log/
    assert log_root({"ASCEND_WORK_PATH": "/w", "HOME": "/h"}) == Path("/w/log")
    both = {"ASCEND_PROCESS_LOG_PATH": "/p", "ASCEND_WORK_PATH": "/w", "HOME": "/h"}
    assert log_root(both) == Path("/p")
    assert logs_go_to_stdout({"ASCEND_SLOG_PRINT_TO_STDOUT": "1"})
    assert not logs_go_to_stdout({"ASCEND_SLOG_PRINT_TO_STDOUT": "0"})
    assert at_least("error", "warning") and at_least("warning", "warning")
    assert not at_least("event", "warning") and not at_least("bogus", "debug")


def test_parse_file_replaces_undecodable_bytes(tmp_path: Path):
    path = tmp_path / "plog-1_1.log"
    path.write_bytes(SAMPLE.encode() + b"[ERROR] GE(1,p):2021-10-17-05:54:07.599.074 \xff\xfe\n")
    entries, parser = parse_file(path)
    assert entries[-1].text == "\ufffd\ufffd" and parser.garbage == 0
