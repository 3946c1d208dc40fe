"""An exception's detail opens at its top (what failed, why), also on a small
terminal, where its list of files (which has the focus) starts below the fold."""

from __future__ import annotations

from tui_helpers import make_app

from aclmon.tui.vlist import VirtualList


async def test_the_detail_opens_at_its_top_at_80x24():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2", "up", "enter")  # the MatMulV2 exception: it has dump files
        await pilot.pause()
        await pilot.pause()
        files = app.screen.query_one("#detail-files", VirtualList)
        assert files.has_focus  # Enter decodes the highlighted file at once
        assert app.screen.query_one("#detail-scroll").scroll_y == 0
