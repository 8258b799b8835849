"""The theme chosen in the command palette, saved to `$SVC_CONSOLE_HOME/settings.toml` so that the
next start uses it.

Only the top-level `theme` line changes (or, with none, one is added at the top): every other
line, comments and spacing included, stays as the operator typed it. The result is read back
before it is written, and written only if it holds exactly the old settings with the new theme;
it is written atomically and owner-only (`core.private_files.write_private`). A file that cannot
be read as TOML is never rewritten (it may hold what the operator meant to fix): the theme then
lasts for this session only, and the caller says why.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from svc_console.core.private_files import write_private
from svc_console.tui.preferences import MAX_FILE_BYTES

# `theme = "name"   # comment` before any table; the value is a TOML string when it is one.
_THEME_LINE = re.compile(
    r"""^(?P<key>[ \t]*(?:theme|"theme"|'theme')[ \t]*=[ \t]*)"""
    r"""(?P<value>"(?:[^"\\]|\\.)*"|'[^']*')?(?P<rest>.*)$"""
)
_TABLE_HEADER = re.compile(r"^[ \t]*\[")


def save_theme(path: Path, name: str) -> str | None:
    """Put `theme = "<name>"` in the settings file at `path` (created if missing). None when
    saved; otherwise why not, and the file is left as it was."""
    try:
        # Bytes, then text: line endings stay as they are (no newline translation).
        text = path.read_bytes().decode("utf-8") if path.exists() else ""
        if len(text.encode("utf-8")) > MAX_FILE_BYTES:
            return f"{path}: larger than {MAX_FILE_BYTES} bytes; left as it is"
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return f"{path}: not valid TOML ({exc}); left as it is"
    except (OSError, UnicodeDecodeError) as exc:
        return f"{path}: cannot be read ({exc}); left as it is"
    updated = with_theme(text, name)
    try:
        after = tomllib.loads(updated)
    except tomllib.TOMLDecodeError:
        after = None
    if after != {**before, "theme": name}:
        return f"{path}: the theme line cannot be changed on its own; left as it is"
    try:
        write_private(path, updated)
    except OSError as exc:
        return f"{path}: cannot be written ({exc.strerror or exc})"
    return None


def with_theme(text: str, name: str) -> str:
    """`text` with its top-level theme set to `name`, every other line untouched."""
    value = json.dumps(name, ensure_ascii=False)  # JSON's string escapes are TOML's too
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        body = line.rstrip("\r\n")
        if _TABLE_HEADER.match(body):
            break  # past the top level: a `theme` below belongs to a table
        match = _THEME_LINE.match(body)
        if match is not None:
            # A trailing comment is kept; a value that was not a string is replaced whole.
            rest = match["rest"] if match["value"] is not None else ""
            lines[index] = f"{match['key']}{value}{rest}{line[len(body) :]}"
            return "".join(lines)
    return f"theme = {value}\n{text}"
