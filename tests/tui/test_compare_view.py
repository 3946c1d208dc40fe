"""The Compare view over a real golden pair from the simulator (``layer1/conv2``
perturbed): the first divergent operator, both tensors side by side, filter,
sort, failing only, rows arriving live, a golden it cannot read (without a
golden there is no Compare view: test_views_registry.py)."""

from __future__ import annotations

import os
from pathlib import Path

from goldenpair import PERTURBED_OP
from tui_helpers import (
    SIZE,
    compare_app,
    make_app,
    over_the_wire,
    static_text,
    wait_for,
)
from tui_scenario import T0, build_events

from aclmon import events as ev
from aclmon.dump.compare.thresholds import FAIL
from aclmon.sources.golden import DirectoryCompare, LiveCompare
from aclmon.tui.comparedetail import CompareDetail
from aclmon.tui.views import CompareView

DIVERGENT = "layer1_conv2:output:0"


def view_of(app) -> CompareView:
    return app.compare_view


def shown(view: CompareView) -> list[str]:
    return [view.compare_row_at(view._offset + i).tensor_index for i in range(len(view._rows))]


async def finished(pilot, app, compare) -> CompareView:
    assert compare.wait(30)
    view = view_of(app)
    await wait_for(pilot, lambda: len(view._rows) > 0 and view.selected_row() is not None)
    return view


async def test_d_jumps_to_the_first_divergent_operator(pair):
    app, compare = compare_app(pair)
    async with app.run_test(size=SIZE) as pilot:
        view = await finished(pilot, app, compare)
        # a finished compare opens on the operator where the error starts
        assert view.selected_row().tensor_index == DIVERGENT
        assert view.selected_row().op_name == PERTURBED_OP
        await pilot.press("1", "8")  # its number key, after the other seven views
        assert app.current_view == "compare" and view.selected_row().op_name == PERTURBED_OP
        await pilot.press("g")
        assert view.vlist.cursor == view.vlist.first_index
        await pilot.press("d")
        assert view.selected_row().tensor_index == DIVERGENT
        status = static_text(app, "#compare-status")
        assert "8 fail" in status and f"▶ {PERTURBED_OP} (Conv2D)" in status
        # the row's line says how it fails
        assert "CosineSimilarity 0.981438 < 0.99" in static_text(app, "#compare-row")
        # hidden by a filter: d shows every row again to get there
        await pilot.press("slash", *"softmax", "enter")
        assert all("softmax" in name for name in shown(view))
        await pilot.press("d")
        assert view.filter_text == "" and view.selected_row().tensor_index == DIVERGENT
        assert "(8✗)" in str(app.tabs.render())


async def test_enter_opens_both_tensors_side_by_side_and_q_closes(pair):
    app, compare = compare_app(pair)
    async with app.run_test(size=SIZE) as pilot:
        view = await finished(pilot, app, compare)
        await pilot.press("enter")
        assert isinstance(app.screen, CompareDetail)
        detail_screen = app.screen
        await wait_for(pilot, lambda: detail_screen.detail is not None, timeout=10)
        await pilot.pause()
        detail = detail_screen.detail
        assert detail.error == "" and detail.mine.shape == detail.golden.shape == (1, 8, 16, 16)
        assert len(detail.worst) == 20 and sum(detail.histogram.counts) > 0
        text = static_text(app, "#detail-body")
        for words in ("my output", "ground truth", "NC1HWC0 [1,1,16,16,16] → [1,8,16,16]",
                      "worst elements", "abs error", "absolute error by decade",
                      "fails: < 0.99"):  # fmt: skip
            assert words in text, words
        worst = detail.worst[0]
        assert f"{worst.flat}" in text and f"{worst.mine:.6g}" in text
        await pilot.press("q")
        assert not isinstance(app.screen, CompareDetail)
        assert view.selected_row().tensor_index == DIVERGENT


async def test_filter_sort_and_failing_only_as_every_list(pair):
    app, compare = compare_app(pair)
    async with app.run_test(size=SIZE) as pilot:
        view = await finished(pilot, app, compare)
        everything = shown(view)
        assert len(everything) == 29 and everything[0] == "trans_image:input:0"
        await pilot.press("slash", *"layer1", "enter")
        assert shown(view) and all(name.startswith("layer1") for name in shown(view))
        assert "filter “layer1”" in static_text(app, "#compare-status")
        await pilot.press("escape")
        assert shown(view) == everything
        await pilot.press("o")
        assert {
            view.compare_row_at(i).status
            for i in range(view.vlist.first_index, view.vlist.first_index + view.vlist.row_count)
        } == {FAIL}
        assert len(shown(view)) == 8 and "failing only" in static_text(app, "#compare-status")
        await pilot.press("o")
        # s: order, op, type, tensor, status, then the metrics
        await pilot.press("s")
        assert view.sort == "op"
        names = [view.compare_row_at(i).op_name.lower() for i in range(len(view._rows))]
        assert names == sorted(names)
        while view.sort != "CosineSimilarity":
            await pilot.press("s")
        cosines = [
            view.compare_row_at(i).number("CosineSimilarity") for i in range(len(view._rows))
        ]
        assert cosines == sorted(cosines) and cosines[0] < 0.99
        await pilot.press("r")
        cosines = [
            view.compare_row_at(i).number("CosineSimilarity") for i in range(len(view._rows))
        ]
        assert cosines == sorted(cosines, reverse=True)
        assert "sorted by CosineSimilarity reversed" in static_text(app, "#compare-status")


def dump_events(directory: Path) -> list[ev.DumpFileSeen]:
    """The dump files of a directory as the agent announces them, in the order written."""
    files = sorted(
        (p for p in directory.rglob("*") if p.is_file()), key=lambda p: p.name.rsplit(".", 1)[-1]
    )
    return [
        ev.DumpFileSeen(1000 + n, T0 + n, str(path), "op-dump", path.stat().st_size, {})
        for n, path in enumerate(files)
    ]


async def test_live_rows_arrive_as_dump_files_land_and_f_follows_them(pair):
    mine, golden = pair
    announced = dump_events(mine)
    compare = LiveCompare(str(golden))
    app = make_app(events=build_events()[:5], compare=compare, start_view="compare")
    async with app.run_test(size=SIZE) as pilot:
        view = view_of(app)
        await pilot.pause()
        assert view.compare.live and len(view._rows) == 0
        app.source.extend(over_the_wire(announced[:4]))
        await wait_for(pilot, lambda: compare.wait_idle(0) and len(view._rows) >= 4, timeout=20)
        first = len(view._rows)
        app.source.extend(over_the_wire(announced[4:]))
        await wait_for(
            pilot, lambda: compare.comparer.counts.compared == len(announced), timeout=30
        )
        await wait_for(pilot, lambda: len(view._rows) == 29)
        assert first < 29
        # "#" is the operator's place in execution order, whatever order the files came in
        places = [view._positions[row.npu_dump] for row in compare.table.rows()]
        assert places[0] == 0 and places == sorted(places) and places[-1] == 11
        # following: the cursor is on the newest row in execution order
        assert view.vlist.follow and view.vlist.cursor == view.vlist.first_index + 28
        assert view.selected_row().tensor_index == "softmax:output:0"
        await pilot.press("f")
        assert not view.vlist.follow
        await pilot.press("d")
        assert view.selected_row().tensor_index == DIVERGENT
        await pilot.press("f")
        assert view.vlist.follow and view.selected_row().tensor_index == "softmax:output:0"
        assert f"{len(announced)} file(s) compared" in static_text(app, "#compare-status")


def test_replay_and_attach_take_golden_and_refuse_what_does_not_fit(tmp_path, capsys):
    from aclmon.cli import main

    missing = os.fspath(tmp_path / "nope")
    assert main(["replay", os.fspath(tmp_path), "--golden", missing]) == 1
    assert f"--golden {missing}: not a directory" in capsys.readouterr().err
    assert main(["replay", os.fspath(tmp_path), "--golden", os.fspath(tmp_path), "--json"]) == 1
    assert "aclmon compare" in capsys.readouterr().err
    assert main(["attach", "--once", "--golden", os.fspath(tmp_path)]) == 1
    assert "--golden goes with the screen of one job" in capsys.readouterr().err


async def test_a_golden_without_dumps_is_said_under_the_list(tmp_path, pair):
    mine, _golden = pair
    app = make_app(compare=DirectoryCompare(str(mine), str(tmp_path)), start_view="compare")
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.compare.wait(30)
        await wait_for(pilot, lambda: "compare failed" in static_text(app, "#compare-row"))
        said = " ".join(static_text(app, "#compare-row").split())
        assert said.startswith("compare failed: /tmp/")
        assert ": no operator dumps, statistics CSVs or golden .npy files" in said


def test_attach_gives_its_compare_to_the_jobs_own_screens(tmp_path):
    """``attach --golden``: the job's own screens (home) open on Compare (the other
    options, which a job opened from its Host view gets too, hold no compare)."""
    from aclmon.host.feed import HostFeed
    from aclmon.sources.base import ListSource
    from aclmon.tui.host_commands import host_opener
    from aclmon.tui.top import HomeApp, run_job_screens

    feed = HostFeed(host_opener("auto", sim=True, timeout=5.0, details="rotate"))
    compare = LiveCompare(str(tmp_path))
    shown = []

    def run(app) -> int:
        shown.append(app)
        return 0

    home = {"compare": compare, "start_view": "compare"}
    run_job_screens(ListSource([]), feed, run=run, readonly=True, home_options=home)
    (app,) = shown
    assert isinstance(app, HomeApp) and app.compare is compare
    assert app.current_view == "compare" and app.view_entries[-1].id == "compare"
