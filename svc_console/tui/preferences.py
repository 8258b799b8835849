"""The operator's preferences for the TUI, from `$SVC_CONSOLE_HOME/settings.toml`:

    theme = "console-light"

    [keymap]                      # binding id = key(s); F1 lists every id's keys
    "approvals.approve" = "y"
    "approvals.deny" = "n,x"

Nothing in this file can stop the console: a broken file or a bad entry is skipped with a line
saying what is wrong and where, the rest applies, and the app shows those lines in one
notification. Other top-level keys belong to other parts of svc-console and are left alone here.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.keys import Keys, _character_to_key

from svc_console.core.sanitize import inert_line
from svc_console.tui import bindings

SETTINGS_FILE = "settings.toml"
MAX_FILE_BYTES = 64_000
MODIFIERS = frozenset({"ctrl", "shift", "alt", "meta", "super", "hyper"})
# Key names Textual reports: named keys (f1, pageup, escape, ...) and named characters (slash).
KEY_NAMES = frozenset(
    {key.value.rsplit("+", 1)[-1] for key in Keys if not key.value.startswith("<")}
    | {_character_to_key(chr(code)) for code in range(33, 127)}
    | {"space"}
)
# Which scopes are live together: a screen's keys, the app's and the navigation keys share one
# chain; a dialog's keys are alone (a modal screen stops the app's bindings).
_SHARED_SCOPES = ("app", bindings.SCREENS_SCOPE)
_ALONE_SCOPES = ("modal", "help", "unsaved")


@dataclass(frozen=True)
class Preferences:
    theme: str | None = None
    keymap: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def settings_path(home: Path) -> Path:
    return home / SETTINGS_FILE


def load_preferences(path: Path) -> Preferences:
    """The preferences in `path`; no file means the defaults, silently."""
    try:
        if not path.exists():
            return Preferences()
        if path.stat().st_size > MAX_FILE_BYTES:
            return Preferences(problems=[f"{path}: larger than {MAX_FILE_BYTES} bytes; ignored"])
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        return Preferences(problems=[f"{path}: not valid TOML ({exc}); ignored"])
    except (OSError, UnicodeDecodeError) as exc:
        return Preferences(problems=[f"{path}: cannot be read ({exc}); ignored"])
    return parse_preferences(data, path.name)


def parse_preferences(data: Mapping[str, Any], source: str) -> Preferences:
    problems: list[str] = []
    theme = data.get("theme")
    if theme is not None and not isinstance(theme, str):
        problems.append(f'{source}: theme must be a name in quotes, such as "console-light"')
        theme = None
    table = data.get("keymap", {})
    if not isinstance(table, dict):
        problems.append(f"{source}: [keymap] must be a table of binding id = key")
        table = {}
    keymap, keymap_problems = check_keymap(table, source)
    return Preferences(theme=theme, keymap=keymap, problems=problems + keymap_problems)


def normalise_keys(value: str) -> str:
    """As Textual does: single characters become their key names ("/" → "slash")."""
    keys = [key.strip() for key in value.split(",")]
    return ",".join(_character_to_key(key) if len(key) == 1 else key for key in keys)


def key_problem(key: str) -> str | None:
    """Why `key` is not a key Textual can report, or None when it is one."""
    *modifiers, base = key.split("+")
    if not base:
        return "an empty key"
    unknown = [m for m in modifiers if m not in MODIFIERS]
    if unknown:
        return f"unknown modifier {unknown[0]!r} in {key!r}"
    if len(base) == 1 and base.isprintable() and not base.isspace():
        return None
    if base in KEY_NAMES:
        return None
    return f"unknown key {base!r}"


def check_keymap(table: Mapping[str, Any], source: str) -> tuple[dict[str, str], list[str]]:
    """The usable entries of a `[keymap]` table and a line for each one that is not."""
    commands = {command.id: (scope, command) for scope, command in bindings.all_commands()}
    keymap: dict[str, str] = {}
    problems: list[str] = []

    def refuse(binding_id: object, why: str) -> None:
        problems.append(f"{source}: keymap {inert_line(binding_id, 60)!r}: {why}; not applied")

    for binding_id, value in table.items():
        found = commands.get(binding_id)
        if found is None:
            refuse(binding_id, "no binding has this id (F1 lists them)")
            continue
        if not found[1].keys:
            refuse(binding_id, "this command has no key to move; use the command palette")
            continue
        if not isinstance(value, str):
            refuse(binding_id, 'the keys must be a string such as "y" or "ctrl+y,f5"')
            continue
        keys = normalise_keys(value)
        bad = next(filter(None, (key_problem(key) for key in keys.split(","))), None)
        if bad is not None:
            refuse(binding_id, inert_line(bad, 80))
            continue
        keymap[binding_id] = keys

    for binding_id, other_id, key in _clashes(keymap):
        refuse(binding_id, f"{key!r} is already the key of {other_id}")
        keymap.pop(binding_id, None)
    return keymap, problems


def _clashes(keymap: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(remapped id, id it collides with, key) for remapped keys that would shadow another
    command live at the same time."""
    scopes: dict[str, list[bindings.Command]] = {}
    for scope, command in bindings.all_commands():
        scopes.setdefault(scope, []).append(command)
    shared = [c for scope in _SHARED_SCOPES for c in scopes.get(scope, [])]
    groups = [shared + scopes[s] for s in scopes if s not in (*_SHARED_SCOPES, *_ALONE_SCOPES)]
    groups += [scopes[s] for s in _ALONE_SCOPES if s in scopes]
    found: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for group in groups:
        owner: dict[str, str] = {}
        # Commands keeping their defaults claim their keys first: a remap never steals a key.
        ordered = sorted(group, key=lambda command: command.id in keymap)
        for command in ordered:
            for key in bindings.keys_of(command, keymap):
                key = normalise_keys(key)
                other = owner.setdefault(key, command.id)
                if other != command.id and command.id in keymap and command.id not in seen:
                    found.append((command.id, other, key))
                    seen.add(command.id)
    return found
