"""An attached console's sign-in, when the broker has operator accounts: the operator's name and
token, asked once at start. An attached console decides over the operator socket, where the
broker asks every decision for an account's name and token, as it asks the CLI's. The console
that runs the broker itself asks the same with this dialog (`tui/sign_in.py`), so that its
decisions too name an operator who proved it. Escape quits: the console does not run without
someone to decide as.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Label, Static

from svc_console.tui.unlock import SecretCheckScreen

ATTACHED = (
    "This console is attached to a broker with operator accounts: its decisions name you. Type"
    " your operator name and token (svc-console operators add printed it); escape quits."
)


class SignInScreen(SecretCheckScreen):
    """Dismisses with True once an account's name and token match, with False on escape."""

    SECRET = "#token"

    def __init__(self, sign_in: Any) -> None:
        super().__init__()
        # Has default_name and verify(name, token) -> bool; may say why it asks (`explain`) and
        # hear of each wrong try (`refused()`).
        self.sign_in = sign_in

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Operator sign-in", id="dialog-title")
            yield Static(
                Text(getattr(self.sign_in, "explain", ATTACHED)),
                markup=False,
                classes="dialog-explain",
            )
            yield Input(self.sign_in.default_name, placeholder="operator name", id="operator")
            yield Input(password=True, placeholder="token", id="token")
            yield Static("", id="dialog-error", markup=False)

    def first_field(self) -> str:
        return "#token" if self.sign_in.default_name else "#operator"

    @on(Input.Submitted, "#operator")
    def _name_given(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#token", Input).focus()

    @on(Input.Submitted, "#token")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.check(self.query_one("#operator", Input).value.strip(), event.value)

    def matches(self, *typed: str) -> bool:
        name, token = typed
        return bool(name) and bool(self.sign_in.verify(name, token))

    def wrong(self) -> str:
        waiting = self.waiting(self.sign_in)
        return f"Unknown operator or wrong token ({self.attempts} attempt(s)).{waiting}"

    def refused(self) -> None:
        refused = getattr(self.sign_in, "refused", None)
        if refused is not None:
            refused()
