"""Themes are data: TOML files whose keys mirror `textual.theme.Theme`, validated on load.

The repo's `themes/` folder ships `console-dark` (the default), `console-light` and
`console-high-contrast`; an operator can add or override themes in `$SVC_CONSOLE_HOME/themes`. A
broken file is reported, never fatal: it is skipped with a one-line reason, a bundled theme of the
same name stays in force, and a theme asked for that did not load falls back to the default (or to
Textual's own when even that is missing).
"""

from __future__ import annotations

import re
import sys
import tomllib
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from textual.color import Color, ColorParseError
from textual.theme import Theme


def _bundled_themes() -> Path:
    """The repo's `themes/` in a checkout; `<prefix>/share/svc-console/themes` once installed
    (pyproject's data-files put them there)."""
    checkout = Path(__file__).parents[2] / "themes"
    return checkout if checkout.is_dir() else Path(sys.prefix) / "share" / "svc-console" / "themes"


BUNDLED_THEMES = _bundled_themes()
DEFAULT_THEME = "console-dark"
# Textual's own theme: always there, so a broken theme file can never leave the app unstyled.
FALLBACK_THEME = "textual-dark"

COLOUR_KEYS = (
    "primary",
    "secondary",
    "accent",
    "warning",
    "error",
    "success",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
)
KNOWN_KEYS = frozenset({"name", "dark", *COLOUR_KEYS})
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MAX_FILE_BYTES = 64_000


class ThemeError(Exception):
    """A theme file that cannot be used; the message names the file and the problem."""


@dataclass
class LoadedThemes:
    themes: dict[str, Theme] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def parse_theme(data: dict[str, object], source: str) -> Theme:
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise ThemeError(
            f"{source}: unknown key {unknown[0]!r} (expected {', '.join(sorted(KNOWN_KEYS))})"
        )
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ThemeError(f"{source}: 'name' must be lowercase letters, digits, '-' or '_'")
    if "primary" not in data:
        raise ThemeError(f"{source}: 'primary' is required")
    colours: dict[str, str] = {}
    for key in COLOUR_KEYS:
        if key not in data:
            continue
        value = data[key]
        if not isinstance(value, str):
            raise ThemeError(f'{source}: {key!r} must be a colour string such as "#1e90ff"')
        try:
            Color.parse(value)
        except ColorParseError:
            raise ThemeError(f"{source}: {key!r} is not a colour: {value[:40]!r}") from None
        colours[key] = value
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeError(f"{source}: 'dark' must be true or false")
    return Theme(name=name, dark=dark, **colours)


def load_theme(path: Path) -> Theme:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ThemeError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ThemeError(f"{path}: not valid TOML ({exc})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ThemeError(f"{path}: cannot be read ({exc})") from None
    return parse_theme(data, str(path))


def load_themes(folders: Iterable[Path | None]) -> LoadedThemes:
    """Every `*.toml` theme in these folders; a later folder overrides an earlier one's names."""
    loaded = LoadedThemes()
    for folder in folders:
        if folder is None or not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            try:
                theme = load_theme(path)
            except ThemeError as exc:
                loaded.problems.append(str(exc))
                continue
            loaded.themes[theme.name] = theme
    return loaded


def pick_theme(wanted: str | None, available: Collection[str]) -> tuple[str, str | None]:
    """The theme to use and, when it is not the one asked for, a line saying why."""
    wanted = wanted or DEFAULT_THEME
    if wanted in available:
        return wanted, None
    fallback = DEFAULT_THEME if DEFAULT_THEME in available else FALLBACK_THEME
    return fallback, f"theme {wanted!r} is not available: no theme file loaded with that name"
