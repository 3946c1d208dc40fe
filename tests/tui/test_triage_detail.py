"""The TRIAGE and LAUNCHED AT parts of an exception's detail: the verdict first, the
evidence in words, the launch site at once and the launches around it once the
triage is in; readable at 80x24 and 160x48."""

from __future__ import annotations

import pytest
from tui_helpers import make_app, screen_text, static_text
from tui_scenario import CONV_TRIAGE, build_events, build_triage_events

from aclmon import events as ev
from aclmon.tui.screens import ExceptionDetail

#: the Exceptions view, then up twice from the newest: the last Conv2D (task 1005)
OPEN_CONV = ("2", "up", "up", "enter")
SIZES = {"80x24": (80, 24), "160x48": (160, 48)}


@pytest.mark.parametrize("size", list(SIZES))
def test_detail_with_a_triage(snap_compare, size):
    assert snap_compare(
        make_app(events=build_triage_events()), press=OPEN_CONV, terminal_size=SIZES[size]
    )


async def test_the_verdict_and_the_launch_site_come_first_at_80x24():
    app = make_app(events=build_triage_events())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*OPEN_CONV)
        await pilot.pause()
        assert isinstance(app.screen, ExceptionDetail)
        screen = screen_text(app)
        assert "TRIAGE  use after free" in screen
        assert "verdict    use after free: Conv2D read input[1] (filter)" in screen
        body = static_text(app, "#detail-body")
        # the evidence in words, key/value lines folded under their key, nothing cut
        assert "✗ input[1] filter 0x12c00c400000+401408: in freed memory" in body
        assert "others: 1 inside the job's blocks, 1 in the runtime's own" in body
        assert "mte_err_type=010: read bus error" in body
        assert "kernel     te_conv2d_3f1c9a_mix_aic (aicore 7 · pc 0x12c0400072c4" in body
        assert "re-run     python" in body and "aclmon-repro" in body
        # the launching line, the launches on that stream around it (the failing one
        # marked), and the job's frames of its stack (the launcher's are left out)
        assert "LAUNCHED AT  train.py:104 train_step  (mdl.execute_async)" in body
        assert "▶" in body and "train.py:97 load_batch" in body and "3.9 ms before" in body
        assert "train.py:160 <module>" in body and "runner.py" not in body
        assert all(len(line) <= 80 for line in screen.splitlines())


async def test_the_triage_shows_up_in_an_open_detail_when_it_comes():
    """Opened before the agent sent the triage: "waiting", with the launch site
    already; the Triage event fills the section in place."""
    events = build_triage_events()
    triage = next(e for e in events if isinstance(e, ev.Triage))
    app = make_app(events=[e for e in events if e is not triage])
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press(*OPEN_CONV)
        await pilot.pause()
        detail = app.screen
        assert isinstance(detail, ExceptionDetail) and detail.waiting
        body = static_text(app, "#detail-body")
        assert "TRIAGE  waiting: the agent reads the device's error lines and the exception" in body
        assert "LAUNCHED AT  train.py:104 train_step" in body and "▶" not in body
        app.store.apply(triage._replace(seq=10_000))
        app.refresh_view()
        await pilot.pause()
        assert not detail.waiting
        body = static_text(app, "#detail-body")
        assert "TRIAGE  use after free" in body and "▶" in body
        assert CONV_TRIAGE["verdict"][:60] in body.replace("\n", " ").replace("  ", " ")


async def test_no_triage_after_the_wait_says_none_came():
    """An exception 10 s older than the newest event, with no triage (an agent
    without triage, an old recording): not "waiting"."""
    events = build_events()
    newest = max(e.ts_ns for e in events)
    events.append(ev.LogLine(len(events) + 1, newest + 11_000_000_000, "info", "later"))
    app = make_app(events=events)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press(*OPEN_CONV)
        await pilot.pause()
        body = static_text(app, "#detail-body")
        assert "TRIAGE  none received" in body
        assert "LAUNCHED AT  not known" in body
