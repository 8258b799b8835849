"""The operator passphrase, asked once when the console starts (when one is set).

Decisions in the open TUI need nothing more after it; decisions anywhere else (the CLI, a
script on the operator socket) need it every time. Escape quits: the console does not run
unlocked.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from svc_console.tui.bindings import bindings


class UnlockScreen(ModalScreen[bool]):
    """Dismisses with True once the passphrase typed matches, with False on escape."""

    BINDINGS = bindings("modal")

    def __init__(self, passphrase: Any) -> None:
        super().__init__()
        self.passphrase = passphrase  # has verify(str) -> bool
        self.attempts = 0

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Operator passphrase", id="dialog-title")
            yield Static(
                Text(
                    "A passphrase guards decisions on this console. Type it to open the"
                    " console; escape quits."
                ),
                markup=False,
                classes="dialog-explain",
            )
            yield Input(password=True, placeholder="passphrase", id="passphrase")
            yield Static("", id="dialog-error", markup=False)

    def on_mount(self) -> None:
        field = self.query_one(Input)
        field.cursor_blink = getattr(self.app, "cursor_blink", True)
        field.focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        field = self.query_one(Input)
        field.disabled = True  # one check at a time: scrypt takes a moment
        self._check(event.value)

    @work(thread=True, exclusive=True, group="unlock")
    def _check(self, typed: str) -> None:
        # A slow hash on purpose: checked off the event loop so the screen stays alive.
        matched = self.passphrase.verify(typed)
        self.app.call_from_thread(self._checked, matched)

    def _checked(self, matched: bool) -> None:
        if matched:
            self.dismiss(True)
            return
        self.attempts += 1
        field = self.query_one(Input)
        field.value, field.disabled = "", False
        error = self.query_one("#dialog-error", Static)
        error.update(Text(f"Wrong passphrase ({self.attempts} attempt(s)). Try again."))
        error.add_class("-shown")
        field.focus()

    def action_cancel(self) -> None:
        self.dismiss(False)
