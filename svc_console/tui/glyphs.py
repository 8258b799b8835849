"""Symbols the console draws, with what a browser's fonts are sure to have: a terminal's font
draws "⏸", many a browser's monospace font shows a missing-glyph box instead. The web console
(`App.is_web`) draws the fallback.
"""

from __future__ import annotations

from typing import Any

# name → (the terminal's, the browser's)
GLYPHS = {
    "paused": ("⏸", "‖"),
}


def glyph(app: Any, name: str) -> str:
    terminal, browser = GLYPHS[name]
    return browser if getattr(app, "is_web", False) else terminal
