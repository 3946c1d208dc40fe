"""Theme files: one JSON object per file in ``themes/``, turned into Textual themes.

JSON because PyYAML is not a dependency and the standard library reads it.
Keys are the fields of :class:`textual.theme.Theme` (``name``, ``primary``,
``background``, ``dark``, …) plus ``variables`` for aclmon's own colours.
Files are found in the source checkout (``themes/`` next to the package), in
the installed ``share/aclmon/themes``, and in the user's
``$XDG_CONFIG_HOME/aclmon/themes`` (later directories win on a name clash).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual.app import App
from textual.theme import Theme

from aclmon.errors import AclmonError
from aclmon.locations import theme_dirs

DEFAULT_DARK = "aclmon-dark"
DEFAULT_LIGHT = "aclmon-light"

#: aclmon's own theme variables and their fallbacks, so a theme that does not
#: define them (Textual's built-ins) still renders.
VARIABLE_DEFAULTS: dict[str, str] = {
    "aclmon-busy": "ansi_yellow",
    "aclmon-sync": "ansi_blue",
    "aclmon-idle": "ansi_green",
    "aclmon-dim": "ansi_bright_black",
    "aclmon-spark": "ansi_cyan",
    "aclmon-bar": "ansi_cyan",
    "aclmon-bar-empty": "ansi_bright_black",
    "aclmon-bad": "ansi_red",
    "aclmon-cursor": "ansi_blue",
}

#: aclmon's own variables -> the palette variable each follows in a theme that
#: does not set it (one of Textual's)
DERIVED_VARIABLES: dict[str, str] = {
    "aclmon-busy": "warning",
    "aclmon-sync": "secondary",
    "aclmon-idle": "success",
    "aclmon-dim": "foreground-muted",
    "aclmon-spark": "primary",
    "aclmon-bar": "primary",
    "aclmon-bar-empty": "panel-lighten-1",
    "aclmon-bad": "error",
    "aclmon-cursor": "primary-muted",
}

_THEME_FIELDS = (
    "primary", "secondary", "warning", "error", "success", "accent",
    "foreground", "background", "surface", "panel", "boost",
)  # fmt: skip
_MAX_THEME_FILE = 64 * 1024


class ThemeError(AclmonError):
    """A theme file that cannot be used."""


def parse_theme(data: Any, source: str) -> Theme:
    if not isinstance(data, dict):
        raise ThemeError(f"{source}: a theme is a JSON object")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ThemeError(f"{source}: 'name' must be a non-empty string")
    if not isinstance(data.get("primary"), str):
        raise ThemeError(f"{source}: 'primary' colour is required")
    kwargs: dict[str, Any] = {}
    for key in _THEME_FIELDS:
        value = data.get(key)
        if value is not None:
            if not isinstance(value, str):
                raise ThemeError(f"{source}: '{key}' must be a colour string")
            kwargs[key] = value
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeError(f"{source}: 'dark' must be true or false")
    variables = data.get("variables", {})
    if not isinstance(variables, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in variables.items()
    ):
        raise ThemeError(f"{source}: 'variables' must map names to strings")
    try:
        return Theme(name=name, dark=dark, variables=dict(variables), **kwargs)
    except Exception as exc:  # Textual rejects bad colours with assorted errors
        raise ThemeError(f"{source}: {exc}") from None


def load_theme_file(path: Path) -> Theme:
    try:
        if path.stat().st_size > _MAX_THEME_FILE:
            raise ThemeError(f"{path}: larger than {_MAX_THEME_FILE} bytes")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ThemeError(f"{path}: {exc}") from None
    return parse_theme(data, str(path))


def load_themes(dirs: list[Path] | None = None) -> tuple[dict[str, Theme], list[str]]:
    """Every readable theme (name -> Theme) and one message per file that was skipped."""
    themes: dict[str, Theme] = {}
    problems: list[str] = []
    for directory in theme_dirs() if dirs is None else dirs:
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.json")):
            try:
                theme = load_theme_file(path)
            except ThemeError as exc:
                problems.append(str(exc))
                continue
            themes[theme.name] = theme
    return themes, problems


def use_themes(app: App[Any], wanted: str) -> None:
    """Register aclmon's themes in ``app`` and show ``wanted`` (Textual's own dark
    theme when it is not there: an unusual install). For the screens that report
    no skipped theme file (``aclmon top``, the fleet)."""
    themes, _problems = load_themes()
    for theme in themes.values():
        app.register_theme(theme)
    app.theme = wanted if wanted in app.available_themes else "textual-dark"
