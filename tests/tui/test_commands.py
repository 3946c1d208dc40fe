"""Command-line checks that fail before any screen opens or job starts."""

from __future__ import annotations

import json

import pytest

from aclmon import cli
from aclmon.tui.themes import ThemeError, load_themes, parse_theme


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["attach", "/nonexistent.sock", "--theme", "no-such-theme"], "unknown theme"),
        (["attach", "/nonexistent.sock", "--interval", "0"], "--interval"),
        (["demo", "--theme", "no-such-theme"], "unknown theme"),
        (["attach", "/nonexistent.sock", "--json"], "--json goes with --once"),
    ],
)
def test_bad_options_are_one_clear_error(argv, message, capsys):
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_bad_keymap_file_is_one_clear_error(tmp_path, capsys):
    keymap = tmp_path / "keys.json"
    keymap.write_text('{"view.devices": 3}')
    assert cli.main(["attach", "/nonexistent.sock", "--keymap", str(keymap)]) == 1
    assert "keymap" in capsys.readouterr().err


def test_shipped_themes_load_one_dark_one_light():
    themes, problems = load_themes()
    assert problems == [] or all("aclmon-" not in p for p in problems)
    assert themes["aclmon-dark"].dark is True
    assert themes["aclmon-light"].dark is False


def test_theme_files_are_checked(tmp_path):
    (tmp_path / "good.json").write_text(json.dumps({"name": "mine", "primary": "#336699"}))
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "nocolour.json").write_text(json.dumps({"name": "x", "primary": 3}))
    themes, problems = load_themes([tmp_path])
    assert list(themes) == ["mine"]
    assert len(problems) == 2 and any("bad.json" in p for p in problems)
    with pytest.raises(ThemeError, match="'dark'"):
        parse_theme({"name": "y", "primary": "#000000", "dark": "yes"}, "y.json")
