"""Rich styles taken from the active Textual theme, for text built as `rich.text.Text`.

Colour always comes from here (the app's theme), never from the text being shown: untrusted text is
rendered inert and plain, then styled by what the console knows about it (a flag's severity).
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import App

from svc_console.core.models import Severity


@dataclass(frozen=True)
class Palette:
    heading: str
    label: str
    high: str
    warn: str
    info: str
    good: str

    def severity(self, severity: Severity) -> str:
        return {Severity.high: self.high, Severity.warn: self.warn}.get(severity, self.info)

    def tone(self, name: str) -> str:
        """The style of a tone named by `present` ("good", "warn", ...); plain when unknown."""
        return getattr(self, name, "") if name in ("high", "warn", "info", "good", "label") else ""


def palette(app: App[object]) -> Palette:
    colours = app.theme_variables

    def pick(name: str, fallback: str) -> str:
        value = colours.get(name, "")
        # Only concrete colours ("#RRGGBB"); relative ones like "auto 60%" mean nothing to Rich.
        return value if value.startswith("#") else fallback

    return Palette(
        heading=f"bold {pick('text-primary', 'cyan')}",
        label="dim",
        high=f"bold {pick('text-error', 'red')}",
        warn=pick("text-warning", "yellow"),
        info=pick("text-secondary", "blue"),
        good=pick("text-success", "green"),
    )
