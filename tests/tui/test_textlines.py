"""TextLines (the Devices trees): a new set of rows draws again only the rows
whose text or styles changed, and lays the screen out only when their number
changes."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.strip import Strip

from aclmon.tui.views.textlines import TextLines


class Counting(TextLines):
    """TextLines that records which rows it was asked to draw, and its layouts."""

    def __init__(self, lines: list[Text]) -> None:
        self.asked: list[int] = []
        self.layouts = 0
        super().__init__(lines, id="lines")

    def render_line(self, y: int) -> Strip:
        self.asked.append(y)
        return super().render_line(y)

    def refresh(self, *regions, layout=False, **kwargs):  # type: ignore[no-untyped-def]
        self.layouts += bool(layout)
        return super().refresh(*regions, layout=layout, **kwargs)


def rows(figures: list[int]) -> list[Text]:
    return [Text.assemble(f"stream {n}  ", (f"{value} syncs", Style(dim=True)))
            for n, value in enumerate(figures)]  # fmt: skip


class Host(App[None]):
    def __init__(self, lines: list[Text]) -> None:
        super().__init__()
        self.lines = Counting(lines)

    def compose(self) -> ComposeResult:
        yield self.lines


def plain(widget: TextLines) -> list[str]:
    return [widget.render_line(y).text for y in range(widget.size.height)]


async def test_one_changed_row_is_the_only_row_drawn_again() -> None:
    app = Host(rows([0] * 10))
    async with app.run_test(size=(40, 12)) as pilot:
        widget = app.lines
        await pilot.pause()
        assert widget.size.height == 10
        widget.asked.clear()
        layouts = widget.layouts
        assert widget.set_lines(rows([0, 0, 0, 7, 0, 0, 0, 0, 0, 0])) == 1
        await pilot.pause()
        assert set(widget.asked) == {3}
        assert widget.layouts == layouts  # same number of rows: no layout
        assert plain(widget)[3].rstrip() == "stream 3  7 syncs"
        # the same text in another style is a change too
        restyled = rows([0, 0, 0, 7, 0, 0, 0, 0, 0, 0])
        restyled[5].stylize(Style(bold=True))
        widget.asked.clear()
        assert widget.set_lines(restyled) == 1
        await pilot.pause()
        assert set(widget.asked) == {5}


async def test_another_number_of_rows_lays_out_and_draws_all() -> None:
    app = Host(rows([0] * 3))
    async with app.run_test(size=(40, 12)) as pilot:
        widget = app.lines
        await pilot.pause()
        layouts = widget.layouts
        widget.set_lines(rows([1] * 5))
        await pilot.pause()
        assert widget.layouts > layouts
        assert widget.size.height == 5
        assert [line.rstrip() for line in plain(widget)] == [
            f"stream {n}  1 syncs" for n in range(5)
        ]
        assert widget.content.plain.count("\n") == 4  # what a Static of the rows would hold


async def test_a_row_wider_than_the_widget_is_cut_with_an_ellipsis() -> None:
    app = Host([Text("x" * 100), Text("short")])
    async with app.run_test(size=(20, 6)) as pilot:
        await pilot.pause()
        first, second = plain(app.lines)
        assert first == "x" * 19 + "…"
        assert second == "short".ljust(20)
