"""A desktop notification through the terminal, beside the bell: OSC 9 or OSC 777.

Terminals that show one draw it even when their window is hidden, which is when the operator needs
it. Terminals that do not know the sequence should ignore it, but some print it or take `OSC 9` for
something else (ConEmu's progress bar), so it is written only where the terminal is known to show
it, or where `[notify] desktop` says so. Inside tmux or screen it is not written: they swallow it.

The text is made inert and short here: it may name an agent, and an agent's name must not be able
to end the sequence early and write its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from svc_console.core.sanitize import inert_line

Kind = Literal["osc9", "osc777"]
TITLE_CHARS = 40
BODY_CHARS = 80
_OSC9_PROGRAMS = ("iTerm.app", "WezTerm", "ghostty")


def supported(environ: Mapping[str, str], setting: bool | str | None = None) -> Kind | None:
    """Which sequence to write, if any: `setting` is `[notify] desktop` (None: decide from the
    terminal, True: on, OSC 9 unless the terminal wants OSC 777)."""
    if setting is False:
        return None
    if setting in ("osc9", "osc777"):
        return setting  # type: ignore[return-value]
    known = _known(environ)
    if setting is True:
        return known or "osc9"
    return known


def _known(environ: Mapping[str, str]) -> Kind | None:
    if environ.get("TMUX") or environ.get("STY"):
        return None
    term = environ.get("TERM", "")
    if environ.get("TERM_PROGRAM") in _OSC9_PROGRAMS:
        return "osc9"
    if "kitty" in term or environ.get("KITTY_WINDOW_ID"):
        return "osc9"
    if term.startswith("foot"):
        return "osc777"
    return None


def sequence(kind: Kind, title: str, body: str) -> str:
    """The escape sequence, its text inert (no BEL, ESC or ST can end it early) and short."""
    # OSC 777 separates the title from the body with `;`: one in the title would move the split.
    head = _short(title, TITLE_CHARS).replace(";", ",")
    text = _short(body, BODY_CHARS)
    if kind == "osc777":
        return f"\x1b]777;notify;{head};{text}\x07"
    return f"\x1b]9;{head}: {text}\x07"


def desktop_notice(app: Any, body: str, title: str = "svc-console") -> bool:
    """Write the notification to `app`'s terminal where it is shown; whether it was written."""
    if getattr(app, "is_headless", True) or getattr(app, "is_web", False):
        return False
    settings = getattr(getattr(app, "runtime", None), "notify", None)
    kind = supported(os.environ, getattr(settings, "desktop", None))
    driver = getattr(app, "_driver", None)  # where App.bell writes its BEL
    if kind is None or driver is None:
        return False
    driver.write(sequence(kind, title, body))
    return True


def _short(text: str, limit: int) -> str:
    line = inert_line(text, 4 * limit)
    return line if len(line) <= limit else line[: limit - 1] + "…"
