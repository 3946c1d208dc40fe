"""docs/usage.md's table of keys, mouse actions and palette entries is the code's."""

from __future__ import annotations

import ast
from pathlib import Path

from keytable import MOUSE, documented, fleet_palette_entries, palette_entries, table
from tui_helpers import golden_app


async def test_the_usage_page_lists_every_key_mouse_action_and_palette_entry(tmp_path):
    app = golden_app(tmp_path)  # every view: Compare's keys are in the table too
    expected = table(app, await palette_entries(app), await fleet_palette_entries())
    assert documented() == expected, (
        "docs/usage.md's key table differs from the code's bindings and palette:"
        " run `PYTHONPATH=. python tests/tui/make_key_table.py` and read the diff"
    )


def test_every_documented_mouse_action_has_a_test():
    names = set()
    for path in Path(__file__).parent.glob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names |= {n.name for n in ast.walk(tree) if isinstance(n, ast.AsyncFunctionDef)}
    missing = [test for _w, _a, _what, test in MOUSE if test and test not in names]
    assert not missing
