"""VIEWS is the one list of views: every view in it has a tab, a number key,
a palette entry, a help section and rows in the key table, and no other
module of the TUI lists views (the store's JSON keys and ring names that share
a view's word are not lists of views). A view marked ``golden_only`` (Compare)
has all of them with ``--golden`` and none without."""

from __future__ import annotations

import ast
from pathlib import Path

from keytable import documented
from tui_helpers import SIZE, golden_app, make_app

from aclmon.tui.palette import AclmonCommands
from aclmon.tui.views import VIEW_IDS, VIEWS, shown_views

TUI = Path(__file__).resolve().parents[2] / "aclmon" / "tui"
REGISTRY = TUI / "views" / "__init__.py"


async def test_every_view_has_a_tab_a_key_a_palette_entry_and_a_help_section(tmp_path):
    app = golden_app(tmp_path)  # with --golden: every view
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.view_entries == VIEWS
        palette = {c.name for c in AclmonCommands(app.screen)._commands()}
        sections = dict(app.help_sections())
        everywhere = {row[2] for row in sections["Everywhere"]}
        table = documented()
        for number, entry in enumerate(VIEWS, start=1):
            assert app.tabs.titles[entry.id] == entry.title
            assert f" {number} {entry.short_title}" in str(app.tabs.render())
            assert isinstance(app.views[entry.id], entry.cls)
            assert f"view.{entry.id}" in everywhere
            assert f"View: {entry.title}" in palette
            assert sections[entry.help_title], f"{entry.id}: no keys in its help section"
            assert f"| {entry.help_title} |" in table, f"{entry.id}: no rows in the key table"
            assert f"`view.{entry.id}`" in table
            await pilot.press(str(number))
            assert app.current_view == entry.id


async def test_without_a_golden_its_views_have_no_tab_key_palette_entry_or_help():
    app = make_app(start_view="compare")
    golden_only = [entry for entry in VIEWS if entry.golden_only]
    assert golden_only, "no view to check"
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.view_entries == shown_views(golden=False)
        assert list(app.tabs.titles) == list(app.views) == [e.id for e in app.view_entries]
        assert app.current_view == "devices"  # asked for a view it does not have
        palette = {c.name for c in AclmonCommands(app.screen)._commands()}
        sections = dict(app.help_sections())
        ids = app.binding_ids()
        tabs = str(app.tabs.render())
        for entry in golden_only:
            number = VIEWS.index(entry) + 1
            assert entry.id not in app.views and f" {number} " not in tabs
            assert f"View: {entry.title}" not in palette
            assert entry.help_title not in sections and f"view.{entry.id}" not in ids
            assert not any(b.id in ids for b in entry.cls.BINDINGS if b.id)
            await pilot.press(str(number))
            assert app.current_view == "devices"


def test_the_golden_only_views_come_last_so_the_others_keep_their_numbers():
    flags = [entry.golden_only for entry in VIEWS]
    assert flags == sorted(flags)
    assert shown_views(golden=False) == VIEWS[: flags.count(False)]
    assert shown_views(golden=True) == VIEWS


async def test_a_keymap_may_name_the_keys_of_a_view_this_session_does_not_show():
    app = make_app(keymap={"compare.divergent": "D", "view.compare": "9", "view.nope": "x"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        said = [line.text for line in app.store.state.logs if line.module == "aclmon"]
        assert said == ["keymap: unknown binding id(s) view.nope (see ? for ids)"]


def view_lists(tree: ast.AST) -> list[int]:
    """Lines of literals (tuples, lists, sets, dict keys) naming two or more views."""
    found = []
    for node in ast.walk(tree):
        items: list[ast.expr | None] = []
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = list(node.elts)
        elif isinstance(node, ast.Dict):
            items = list(node.keys)
        names = {i.value for i in items if isinstance(i, ast.Constant) and i.value in VIEW_IDS}
        if len(names) >= 2:
            found.append(node.lineno)
    return found


def test_no_tui_module_but_the_registry_lists_views():
    found = [
        f"{path.relative_to(TUI.parent)}:{line}"
        for path in sorted(TUI.rglob("*.py"))
        if path != REGISTRY
        for line in view_lists(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert view_lists(ast.parse(REGISTRY.read_text(encoding="utf-8"))) == []  # ids in calls
    assert not found, "views listed outside aclmon/tui/views/__init__.py:\n" + "\n".join(found)


def test_the_check_finds_a_list_of_views():
    code = 'COUNTS = {"exceptions": 1, "dumps": 2}\nTABS = ("devices", "logs")\nONE = ("logs",)\n'
    assert view_lists(ast.parse(code)) == [1, 2]
