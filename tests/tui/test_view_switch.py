"""A view switch shows what is built: no view is mounted or drawn anew, and the
screen after it is the screen a full repaint draws."""

from __future__ import annotations

from test_refresh import count_redraws
from tui_helpers import SIZE, make_app

from aclmon.tui.footer import FittingFooter, FooterKey
from aclmon.tui.views.profiling import ProfilingView


def widget_ids(app) -> set[int]:  # type: ignore[no-untyped-def]
    """The widgets of every view (the footer's keys are made again for the view's keys)."""
    return {id(w) for w in app.query_one("#views").walk_children()}


def key_of(app, view: str) -> str:  # type: ignore[no-untyped-def]
    return str(list(app.views).index(view) + 1)


async def test_switching_views_mounts_nothing_and_draws_no_view_again():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        keys = [key_of(app, v) for v in app.views]
        for key in keys:  # each view shown once: drawn for the store
            await pilot.press(key)
            await pilot.pause()
        await pilot.press(key_of(app, "profiling"))
        await pilot.pause()
        built = widget_ids(app)
        drawn = {view_id: count_redraws(view) for view_id, view in app.views.items()}
        for key in [*keys, *reversed(keys)]:
            await pilot.press(key)
            await pilot.pause()
        assert widget_ids(app) == built
        # The store did not move: the views keep what they drew (the Profiling view
        # is told its size again when shown, the same size, and its focus). Devices
        # draws its trees again on its focus (the cursor's line is bold with it).
        redrawn = {view_id: len(marks) for view_id, marks in drawn.items()}
        assert redrawn.pop("devices") > 0
        assert redrawn == dict.fromkeys(redrawn, 0)
        assert isinstance(app.views["profiling"], ProfilingView)


async def test_the_screen_after_a_switch_is_the_screen_of_a_full_repaint():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        for view in [*app.views, "profiling", "exceptions", "profiling"]:
            await pilot.press(key_of(app, view))
            await pilot.pause()
            switched = app.export_screenshot()
            app._repaint()
            await pilot.pause()
            assert app.export_screenshot() == switched, view


async def test_after_a_switch_the_footer_shows_what_it_shows_made_anew():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        footer = app.query_one(FittingFooter)
        for view in [*app.views, "profiling", "exceptions", "profiling"]:
            await pilot.press(key_of(app, view))
            await pilot.pause()
            shown = [(k.hint, k.classes) for k in footer.query_children(FooterKey)]
            await footer.recompose()
            await pilot.pause()
            assert shown == [(k.hint, k.classes) for k in footer.query_children(FooterKey)], view
