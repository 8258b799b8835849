"""Every key of the TUI in one registry: the footer, the command palette and the help read from it.

Each command has a stable id (`approvals.approve`) so a user keymap (`App.set_keymap`) can move a
key without touching code, and so the footer, the palette and any help screen always agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class Command:
    """One operator action: the key(s) that run it and how it is described."""

    id: str
    keys: str
    action: str
    description: str
    help: str
    show: bool = True
    palette: bool = True
    priority: bool = False

    def binding(self) -> Binding:
        return Binding(
            self.keys,
            self.action,
            self.description,
            show=self.show,
            tooltip=self.help,
            id=self.id,
            priority=self.priority,
        )


REGISTRY: dict[str, tuple[Command, ...]] = {
    "app": (
        Command(
            "app.quit",
            "q",
            "quit",
            "Quit",
            "Stop the broker and leave; pending requests stay pending",
            palette=False,
        ),
    ),
    "approvals": (
        Command(
            "approvals.approve",
            "a",
            "approve",
            "Approve",
            "Approve the selected request (type the amount when it is above the threshold)",
        ),
        Command(
            "approvals.deny",
            "d",
            "deny",
            "Deny",
            "Deny the selected request, with a reason the agent will see",
        ),
        Command(
            "approvals.down",
            "j",
            "cursor_down",
            "Next",
            "Select the next request",
            show=False,
            palette=False,
        ),
        Command(
            "approvals.up",
            "k",
            "cursor_up",
            "Previous",
            "Select the previous request",
            show=False,
            palette=False,
        ),
    ),
    "modal": (
        Command(
            "modal.cancel",
            "escape",
            "cancel",
            "Cancel",
            "Close this dialog; nothing is decided",
            palette=False,
        ),
    ),
}


def commands(scope: str) -> tuple[Command, ...]:
    return REGISTRY[scope]


def bindings(scope: str) -> list[Binding]:
    """The `BINDINGS` of the screen (or app) that owns `scope`."""
    return [command.binding() for command in REGISTRY[scope]]
