"""The Textual app: the operator's screens over the broker (approvals first).

The only package that imports Textual, and nothing imports it. Kept free of imports so that
`import svc_console.tui` costs nothing until the app is actually built: `ConsoleApp` is loaded on
first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from svc_console.tui.app import ConsoleApp

__all__ = ["ConsoleApp"]


def __getattr__(name: str) -> Any:
    if name == "ConsoleApp":
        from svc_console.tui.app import ConsoleApp

        return ConsoleApp
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
