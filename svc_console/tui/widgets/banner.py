"""The SANDBOX banner: an operator must never mistake the embedded sandbox for the real market."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from svc_console.core.sanitize import inert_line


class SandboxBanner(Static):
    """A docked, high-contrast line saying that no real money moves and where the sandbox is."""

    def __init__(self, base_url: str, *, id: str | None = None) -> None:
        # The address is ours (a loopback port), but it is shown as plain text all the same.
        label = Text(f"SANDBOX · no real money moves · {inert_line(base_url, 60)}")
        super().__init__(label, id=id, markup=False)
