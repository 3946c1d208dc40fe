"""The views, screens and widgets own their state: they use Textual's App API
(``self.app.copy_to_clipboard``, ``bell``, ``size``…) but never read or write
aclmon's app state (``self.app.store``, ``self.app.profiling_view``…); that
goes up as a message and comes down as a method call. (That none of them
imports an app module is import-linter's contract in pyproject.toml.)"""

from __future__ import annotations

import ast
from pathlib import Path

from textual.app import App

TUI = Path(__file__).resolve().parents[2] / "aclmon" / "tui"
#: the modules that draw: every view, the modal screens, the frame's widgets
DRAWING = [
    *sorted((TUI / "views").glob("*.py")),
    TUI / "screens.py",
    TUI / "header.py",
    TUI / "footer.py",
    TUI / "vlist.py",
    TUI / "dumpdetail.py",
    TUI / "replay" / "timeline.py",
]


def app_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of each use of ``self.app``: the attribute it reads, or how it is used."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    uses = []
    for node in ast.walk(tree):
        is_app = (
            isinstance(node, ast.Attribute)
            and node.attr == "app"
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        )
        if not is_app:
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            uses.append((node.lineno, parent.attr))
        else:
            uses.append((node.lineno, "self.app passed on or kept"))
    return uses


def test_views_screens_and_widgets_use_only_textuals_app_api():
    textual_api = set(dir(App()))
    found = []
    for path in DRAWING:
        for line, what in app_uses(ast.parse(path.read_text(encoding="utf-8"))):
            if what not in textual_api:
                found.append(f"{path.relative_to(TUI.parent)}:{line}: self.app.{what}")
    assert DRAWING and not found, "reaches into the app instead of posting a message:\n" + (
        "\n".join(found)
    )


def test_the_check_finds_a_view_that_reads_the_apps_state():
    code = "class V:\n    def f(self):\n        return self.app.profiling_view.pending, self.app.bell()\n"
    assert app_uses(ast.parse(code)) == [(3, "profiling_view"), (3, "bell")]
