"""A view's width (what it fits its rows to) is its content width, read without
asking the screen: the same as Textual's ``size.width`` once laid out."""

from __future__ import annotations

from tui_helpers import make_app

from aclmon.tui.views.base import View
from aclmon.tui.views.timeline import TimelineCanvas


async def test_every_view_fits_the_width_textual_gives_its_content() -> None:
    app = make_app()
    for size in ((160, 48), (80, 24)):
        async with app.run_test(size=size) as pilot:
            for key in "1234567":
                await pilot.press(key)
                await pilot.pause()
                view = app.query_one(f"#{app.current_view}", View)
                assert view.width == view.size.width > 0
            canvas = app.query_one(TimelineCanvas)
            await pilot.press("6")
            await pilot.pause()
            assert canvas.container_size.width == canvas.size.width > 0
        app = make_app()
