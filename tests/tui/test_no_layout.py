"""Updates that change no size lay nothing out: a list growing under its bar,
a dump summary that fits its pane."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult

from aclmon.tui.themes import VARIABLE_DEFAULTS
from aclmon.tui.vlist import VirtualList


class Host(App[None]):
    CSS = "VirtualList { border-left: outer $surface; }"  # as the app draws its lists

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(VARIABLE_DEFAULTS)

    def compose(self) -> ComposeResult:
        yield VirtualList(lambda index, width: Text(f"row {index}"), id="rows")


async def test_growing_within_the_scroll_bar_updates_the_bar_without_a_layout() -> None:
    app = Host()
    async with app.run_test(size=(40, 12)) as pilot:
        vlist = app.query_one(VirtualList)
        layouts: list[bool] = []
        refresh = vlist.refresh

        def counting(*regions, layout=False, **kwargs):  # type: ignore[no-untyped-def]
            layouts.append(layout)
            return refresh(*regions, layout=layout, **kwargs)

        vlist.set_rows(0, 50)  # longer than the screen: the bar appears (a layout)
        await pilot.pause()
        assert vlist.show_vertical_scrollbar
        vlist.refresh = counting  # type: ignore[method-assign]
        vlist.set_rows(0, 80)
        await pilot.pause()
        assert vlist.virtual_size.height == 80
        assert vlist.vertical_scrollbar.window_virtual_size == 80
        assert not any(layouts), "the list grew under its bar: no layout"
        vlist.action_last()
        await pilot.pause()
        assert vlist.cursor == 79
        assert round(vlist.scroll_y) == 80 - vlist.scrollable_content_region.height
        layouts.clear()
        vlist.set_rows(0, 3)  # now it fits: the bar goes, the screen is laid out
        await pilot.pause()
        assert True in layouts
        assert not vlist.show_vertical_scrollbar
        assert vlist.virtual_size.height == 3


async def test_another_dump_summary_of_fitting_height_is_drawn_in_place() -> None:
    """Moving between dumps whose summaries fit the pane repaints the pane and
    lays nothing out (the pane is at least its own height, app.tcss)."""
    from textual.widgets import Static
    from tui_helpers import make_app, static_text

    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("4")
        await pilot.pause()
        pane = app.query_one("#dump-detail", Static)
        assert pane.size.height >= app.query_one("#dump-detail-scroll").content_region.height
        layouts: list[bool] = []
        update = pane.update

        def counting(*args, layout=True, **kwargs):  # type: ignore[no-untyped-def]
            layouts.append(layout)
            return update(*args, layout=layout, **kwargs)

        pane.update = counting  # type: ignore[method-assign]
        shown = []
        for key in ("up", "up", "down"):
            await pilot.press(key)
            await pilot.pause()
            shown.append(static_text(app, "#dump-detail"))
        assert len(layouts) == 3 and len(set(shown)) >= 2, "each row drew its own summary"
        # the first summary was measured before the pane had its size (the view was
        # hidden): one layout; from then on, none
        assert not any(layouts[1:])


async def test_a_cursor_move_paints_the_two_lines_it_touches_and_staying_paints_none() -> None:
    app = Host()
    async with app.run_test(size=(40, 12)) as pilot:
        vlist = app.query_one(VirtualList)
        vlist.set_rows(0, 6)
        vlist.set_follow(False)
        vlist.move_cursor_to(2)
        await pilot.pause()
        painted: list[int] = []
        render_line = vlist.render_line

        def spy(y: int):  # type: ignore[no-untyped-def]
            painted.append(y)
            return render_line(y)

        vlist.render_line = spy  # type: ignore[method-assign]
        vlist.move_cursor_to(2)  # where it is (a view redrawn keeps it there)
        await pilot.pause()
        assert painted == []
        vlist.move_cursor_to(4)
        await pilot.pause()
        assert sorted(set(painted)) == [2, 4]
        assert vlist.cursor == 4
