"""run_app's exit status: a crashed app does not end the command with 0."""

from __future__ import annotations

from textual.app import App

from aclmon.tui.lifetime import run_app


class _Crashing(App[None]):
    def on_mount(self) -> None:
        raise RuntimeError("a value the screen could not show")

    def run(self, **kwargs):  # type: ignore[override]
        return super().run(headless=True, **kwargs)


class _Quitting(App[None]):
    def on_mount(self) -> None:
        self.exit()

    def run(self, **kwargs):  # type: ignore[override]
        return super().run(headless=True, **kwargs)


def test_a_crashed_app_exits_non_zero(capsys) -> None:
    assert run_app(_Crashing()) == 1
    capsys.readouterr()  # Textual prints the traceback


def test_a_clean_quit_exits_zero() -> None:
    assert run_app(_Quitting()) == 0
