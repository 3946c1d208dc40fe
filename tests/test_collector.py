"""The garbage collector's settings: raised in aclmon's own processes, never in a job's."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aclmon import cli, collector


@pytest.fixture
def thresholds() -> Iterator[None]:
    saved = gc.get_threshold()
    try:
        yield
    finally:
        gc.set_threshold(*saved)


def test_a_viewer_raises_the_first_threshold_and_keeps_the_others(thresholds: None) -> None:
    gc.set_threshold(700, 11, 12)
    collector.tune_for_viewer()
    assert gc.get_threshold() == (collector.FIRST_THRESHOLD, 11, 12)


@pytest.mark.parametrize("first", [0, collector.FIRST_THRESHOLD, collector.FIRST_THRESHOLD * 4])
def test_a_viewer_never_lowers_the_threshold_nor_turns_the_collector_on(
    thresholds: None, first: int
) -> None:
    gc.set_threshold(first, 10, 10)
    collector.tune_for_viewer()
    assert gc.get_threshold() == (first, 10, 10)


def test_the_command_tunes_its_own_process(
    thresholds: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    gc.set_threshold(700, 10, 10)
    monkeypatch.setattr(sys, "argv", ["aclmon", "decode", str(tmp_path)])
    cli.program()
    assert gc.get_threshold()[0] == collector.FIRST_THRESHOLD


def test_main_called_as_a_library_changes_nothing(thresholds: None, tmp_path: Path) -> None:
    gc.set_threshold(700, 10, 10)
    cli.main(["decode", str(tmp_path)])
    assert gc.get_threshold() == (700, 10, 10)


def test_the_job_under_aclmon_run_keeps_its_interpreters_settings(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text("import gc\nprint('thresholds', *gc.get_threshold())\n")
    fresh = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    under_run = subprocess.run(
        [sys.executable, "-m", "aclmon", "run", "--sim", "--listen", str(tmp_path / "a.sock"),
         str(script)],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert "thresholds" in fresh
    assert fresh.splitlines()[-1] in under_run.splitlines()


def test_only_a_viewers_process_freezes_what_it_has_built() -> None:
    # In a fresh interpreter: freezing there would pin this test process's objects.
    code = (
        "import gc\n"
        "from aclmon import collector\n"
        "before = collector.freeze_long_lived(), gc.get_freeze_count()\n"
        "collector.tune_for_viewer()\n"
        "kept = [[n] for n in range(1000)]\n"
        "print(*before, collector.freeze_long_lived(), gc.get_freeze_count() >= 1000)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert out.split() == ["False", "0", "True", "True"]
