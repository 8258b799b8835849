"""An attached console's sign-in, when the broker has operator accounts: the operator's name and
token, asked once at start. The embedded console decides as `[operator] name` without a token,
being the broker's own process; an attached one decides over the operator socket, where the
broker asks every decision for an account's name and token, as it asks the CLI's. Escape quits:
the console does not run without someone to decide as.
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


class SignInScreen(ModalScreen[bool]):
    """Dismisses with True once an account's name and token match, with False on escape."""

    BINDINGS = bindings("modal")

    def __init__(self, sign_in: Any) -> None:
        super().__init__()
        self.sign_in = sign_in  # has default_name and verify(name, token) -> bool
        self.attempts = 0

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Operator sign-in", id="dialog-title")
            yield Static(
                Text(
                    "This console is attached to a broker with operator accounts: its decisions"
                    " name you. Type your operator name and token (svc-console operators add"
                    " printed it); escape quits."
                ),
                markup=False,
                classes="dialog-explain",
            )
            yield Input(self.sign_in.default_name, placeholder="operator name", id="operator")
            yield Input(password=True, placeholder="token", id="token")
            yield Static("", id="dialog-error", markup=False)

    def on_mount(self) -> None:
        for field in self.query(Input):
            field.cursor_blink = getattr(self.app, "cursor_blink", True)
        first = "#token" if self.sign_in.default_name else "#operator"
        self.query_one(first, Input).focus()

    @on(Input.Submitted, "#operator")
    def _name_given(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#token", Input).focus()

    @on(Input.Submitted, "#token")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        name = self.query_one("#operator", Input).value.strip()
        for field in self.query(Input):
            field.disabled = True  # one check at a time: the token's hash takes a moment
        self._check(name, event.value)

    @work(thread=True, exclusive=True, group="sign-in")
    def _check(self, name: str, token: str) -> None:
        matched = bool(name) and self.sign_in.verify(name, token)
        self.app.call_from_thread(self._checked, matched)

    def _checked(self, matched: bool) -> None:
        if matched:
            self.dismiss(True)
            return
        self.attempts += 1
        for field in self.query(Input):
            field.disabled = False
        token = self.query_one("#token", Input)
        token.value = ""
        error = self.query_one("#dialog-error", Static)
        error.update(Text(f"Unknown operator or wrong token ({self.attempts} attempt(s))."))
        error.add_class("-shown")
        token.focus()

    def action_cancel(self) -> None:
        self.dismiss(False)
