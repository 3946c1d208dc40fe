"""What a refresh draws: only the visible view, only when its sections moved, at
an interval that slows when nothing happens and is fast again on a key."""

from __future__ import annotations

from tui_helpers import SIZE, make_app

from aclmon import events as ev
from aclmon.sources.dumpdir import WithDumpDirectory
from aclmon.sources.live import COALESCE_S, LiveSource
from aclmon.tui.app import IDLE_AFTER, IDLE_INTERVAL


def count_redraws(view) -> list[int]:  # type: ignore[no-untyped-def]
    """A mark for each redraw of ``view`` from then on (a list view draws all it
    shows in ``redraw``)."""
    drawn: list[int] = []
    redraw = view.redraw

    def counted() -> None:
        drawn.append(1)
        redraw()

    view.redraw = counted
    return drawn


def log_line(clock: ev.Clock, n: int) -> ev.Event:
    return clock.make(ev.LogLine, "warning", f"more {n}", "app")


async def test_a_hidden_view_is_not_drawn_and_a_visible_one_only_when_its_sections_moved():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.action_show_view("exceptions")
        await pilot.pause()
        exceptions, logs = count_redraws(app.exceptions_view), count_redraws(app.logs_view)
        clock = ev.Clock()
        app.source.extend([log_line(clock, n) for n in range(3)])  # type: ignore[attr-defined]
        app.tick()
        assert logs == []  # hidden: nothing drawn, though its lines came
        assert exceptions == []  # visible, but no exception came
        app.action_show_view("logs")  # shown again: what moved while hidden is drawn
        assert len(logs) == 1
        app.source.extend([clock.make(ev.DeviceSample, 0, 1, 1, 0, 1, 2, "OK", None, None)])  # type: ignore[attr-defined]
        app.tick()
        assert len(logs) == 1  # a device sample: nothing of the Logs view moved
        app.source.extend([log_line(clock, 9)])  # type: ignore[attr-defined]
        app.tick()
        assert len(logs) == 2
        assert app.logs_view.vlist.row_count == len(app.store.state.logs)


async def test_a_view_shown_again_reuses_what_it_drew():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.action_show_view("dumps")
        await pilot.pause()
        dumps = count_redraws(app.dumps_view)
        app.action_show_view("devices")
        app.action_show_view("dumps")  # nothing moved meanwhile
        assert dumps == []


async def test_devices_draws_only_the_panels_whose_sections_moved():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        view = app.devices_view
        updates: list[str] = []
        for static in view.query("Static"):
            original = static.update

            def update(content="", *, layout=True, _id=static.id, _original=original):  # type: ignore[no-untyped-def]
                updates.append(_id)
                _original(content, layout=layout)

            static.update = update  # type: ignore[method-assign]
        clock = ev.Clock()
        app.source.extend([log_line(clock, 1)])  # type: ignore[attr-defined]
        app.tick()
        assert updates == ["device-logs"]  # the tables and trees stay as drawn


async def test_the_refresh_slows_when_idle_and_is_fast_again_on_a_key():
    now = [0.0]
    app = make_app(clock=lambda: now[0])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.refresh_interval == app.interval
        app.source.extend([])  # type: ignore[attr-defined]
        now[0] += IDLE_AFTER + 1  # nothing came since: idle
        app._timed_tick()
        assert app.refresh_interval == IDLE_INTERVAL > app.interval
        await pilot.press("2")
        assert app.refresh_interval == app.interval
        now[0] += IDLE_AFTER + 1
        app._timed_tick()
        assert app.refresh_interval == IDLE_INTERVAL
        clock = ev.Clock()
        app.source.extend([log_line(clock, 1)])  # type: ignore[attr-defined]
        app._timed_tick()  # events (not samples) came: fast again
        assert app.refresh_interval == app.interval
        # two repeating timers, made once each: the fast one runs, the idle one waits
        timers = app._tick_timers
        assert sorted(timers) == [app.interval, IDLE_INTERVAL]
        assert app._tick_timer is timers[app.interval]
        assert timers[app.interval]._active.is_set()
        assert not timers[IDLE_INTERVAL]._active.is_set()


async def test_the_devices_table_and_trees_wait_for_their_second_while_only_figures_move():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        view = app.devices_view
        drawn: list[int] = []
        draw_figures = view._draw_figures

        def counted() -> None:
            drawn.append(1)
            draw_figures()

        throttle = view._figures_every
        throttle._draw = counted  # the drawing the throttle makes
        view._draw_figures = counted  # type: ignore[method-assign]
        throttle._clock = lambda: 100.0  # the time stands still: their second never comes
        throttle.drawn()
        stream = next(iter(app.store.state.streams.values()))
        clock = ev.Clock()
        app.source.extend([  # type: ignore[attr-defined]
            clock.make(ev.StreamSyncBegin, stream.stream, 1),
            clock.make(ev.DeviceSample, 0, 1, 1, 0, 1, 2, "OK", None, None),
        ])  # fmt: skip
        app.tick()  # the figures moved, within the second of their last drawing
        assert drawn == []
        assert throttle.waiting  # drawn when their second is up: on the app's beat
        app.action_show_view("exceptions")
        app.action_show_view("devices")  # shown again: what waits is drawn at once
        assert drawn == [1]
        await pilot.press("j")  # a key draws at once
        assert len(drawn) > 1


async def test_what_waits_for_its_second_the_header_and_the_tabs_move_together_on_the_beat():
    """The Devices figures asked for within their second, the header's running
    figures and the tab counts all change on the tick that beats: one frame a
    second, not one for each of them."""
    now = [0.0]
    app = make_app(clock=lambda: now[0])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        view = app.devices_view
        throttle = view._figures_every
        drawn: list[float] = []
        draw = throttle._draw

        def counted() -> None:
            drawn.append(now[0])
            draw()

        throttle._draw = counted
        throttle._clock = lambda: now[0]
        throttle.drawn()  # drawn at 0.0; the app's first tick beat at 0.0 too
        shown_counts: list[dict[str, str]] = []
        show_counts = app.tabs.show_counts

        def counts_shown(counts: dict[str, str]) -> None:
            shown_counts.append(dict(counts))
            show_counts(counts)

        app.tabs.show_counts = counts_shown  # type: ignore[method-assign]
        header_drawn: list[float] = []
        update = app.header.update

        def header_updated(*args: object, **kwargs: object) -> None:
            header_drawn.append(now[0])
            update(*args, **kwargs)  # type: ignore[arg-type]

        app.header.update = header_updated  # type: ignore[method-assign]
        stream = next(iter(app.store.state.streams.values()))
        clock = ev.Clock()
        for tick_at in (0.25, 0.5, 0.75):  # the figures and the Logs count move each tick
            app.source.extend([  # type: ignore[attr-defined]
                clock.make(ev.StreamSyncBegin, stream.stream, 1),
                log_line(clock, int(tick_at * 4)),
            ])  # fmt: skip
            now[0] = tick_at
            app.tick()
        assert drawn == [] and shown_counts == [] and header_drawn == []
        assert throttle.waiting and throttle._timer is None  # the beat draws it, not a timer
        now[0] = 1.0
        app.tick()  # the beat: a second since the last one
        assert drawn == [1.0] and not throttle.waiting
        assert header_drawn == [1.0]  # its event count and rate moved
        assert len(shown_counts) == 1
        assert shown_counts[0]["logs"] == f" ({len(app.store.state.logs)})"
        now[0] = 1.25
        app.tick()  # nothing asked since: nothing drawn
        assert drawn == [1.0]


async def test_the_app_paces_its_source_to_its_refresh():
    """A live source reads ahead no more often than the app polls it."""
    app = make_app()
    paced: list[float] = []
    app.source.pace = paced.append  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
    assert paced == [app.interval]


def test_a_live_source_hands_its_pace_to_its_subscriber(tmp_path):
    source = LiveSource(str(tmp_path / "aclmon.sock"))
    assert source._subscriber.coalesce == COALESCE_S  # until paced
    WithDumpDirectory(source, str(tmp_path)).pace(0.25)  # through a wrapper too
    assert source._subscriber.coalesce == 0.25
