"""The two onboarding forms of the account screen: sign in by e-mail code, connect the wallet.

A form only collects what the operator types and shows where its flow stands; the screen runs the
flow (`services.onboarding`) and tells the form. The code field is a password field, emptied
the moment its value is handed over, so a code never stays on screen or in a widget; a finished
flow shows what was saved and where, never a secret.
"""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input, Label, Static

from svc_console.tui.colors import palette

Flow = Literal["login", "connect"]
MAX_EMAIL = 254
MAX_USERNAME = 32
MAX_CODE = 12

_TEXTS: dict[Flow, tuple[str, str, str]] = {
    "login": (
        "Sign in by e-mail code",
        "A code goes to your address; the API key it unlocks is saved, never shown.",
        "Sign in",
    ),
    "connect": (
        "Connect the wallet",
        "A code goes to your address; the wallet's token is saved, never shown.",
        "Connect",
    ),
}


class OnboardingForm(Vertical):
    """E-mail (and, to connect, a username), send a code, type it, done."""

    DEFAULT_CSS = """
    OnboardingForm { height: auto; padding: 0 1; }
    OnboardingForm .form-title { text-style: bold; }
    OnboardingForm .form-help { color: $text-muted; }
    OnboardingForm .form-row { height: 1; margin-top: 1; }
    OnboardingForm .form-row Label { width: 10; }
    OnboardingForm .form-row Input { width: 1fr; }
    OnboardingForm .form-buttons { height: 1; margin-top: 1; }
    OnboardingForm .form-buttons Button { min-width: 0; margin-right: 2; }
    OnboardingForm .form-status { height: auto; margin-top: 1; }
    """

    class SendCode(Message):
        """The operator asked for a code (the fields are filled in)."""

        def __init__(self, form: OnboardingForm, email: str, username: str | None) -> None:
            super().__init__()
            self.form, self.email, self.username = form, email, username

    class CodeEntered(Message):
        """The operator typed the code; the field is already empty again."""

        def __init__(self, form: OnboardingForm, code: str) -> None:
            super().__init__()
            self.form, self.code = form, code

    def __init__(self, flow: Flow, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.flow: Flow = flow
        self.title, self.help_text, self.confirm_label = _TEXTS[flow]
        self.waiting_for_code = False

    def compose(self) -> ComposeResult:
        yield Static(self.title, classes="form-title", markup=False)
        yield Static(self.help_text, classes="form-help", markup=False)
        with Horizontal(classes="form-row"):
            yield Label("e-mail")
            yield Input(
                placeholder="you@example.com",
                id=f"{self.flow}-email",
                max_length=MAX_EMAIL,
                compact=True,
            )
        if self.flow == "connect":
            with Horizontal(classes="form-row"):
                yield Label("username")
                yield Input(
                    placeholder="3-32 characters: a-z 0-9 - _",
                    id="connect-username",
                    max_length=MAX_USERNAME,
                    compact=True,
                )
        with Horizontal(classes="form-row"):
            yield Label("code")
            yield Input(
                placeholder="the 6-digit code, once sent",
                id=f"{self.flow}-code",
                password=True,
                max_length=MAX_CODE,
                disabled=True,
                compact=True,
            )
        with Horizontal(classes="form-buttons"):
            yield Button("Send code", id=f"{self.flow}-send", compact=True)
            yield Button(
                self.confirm_label,
                id=f"{self.flow}-confirm",
                variant="primary",
                disabled=True,
                compact=True,
            )
        yield Static("", id=f"{self.flow}-status", classes="form-status", markup=False)

    def on_mount(self) -> None:
        # Snapshot tests turn blinking off app-wide so screenshots do not depend on timing.
        for field in self.query(Input):
            field.cursor_blink = getattr(self.app, "cursor_blink", True)

    # -- the fields -------------------------------------------------------------------------------

    def _input(self, name: str) -> Input:
        return self.query_one(f"#{self.flow}-{name}", Input)

    @property
    def email(self) -> Input:
        return self._input("email")

    @property
    def code(self) -> Input:
        return self._input("code")

    def focus_first(self) -> None:
        self.email.focus()

    # -- what the operator does -------------------------------------------------------------------

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input is self.code:
            self._hand_over_code()
        elif event.input.id == "connect-username" or self.flow == "login":
            self._ask_for_code()
        else:
            self.query_one("#connect-username", Input).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == f"{self.flow}-send":
            self._ask_for_code()
        elif event.button.id == f"{self.flow}-confirm":
            self._hand_over_code()

    def _ask_for_code(self) -> None:
        email = self.email.value.strip()
        username = None
        if "@" not in email:
            self.failed("Type the e-mail address the code should go to.")
            self.email.focus()
            return
        if self.flow == "connect":
            field = self.query_one("#connect-username", Input)
            username = field.value.strip()
            if not username:
                self.failed("Choose a username for the wallet.")
                field.focus()
                return
        self.post_message(self.SendCode(self, email, username))

    def _hand_over_code(self) -> None:
        code = self.code.value.strip()
        # Emptied at once: the code must not linger in a widget.
        self.code.value = ""
        if not self.waiting_for_code:
            return
        if not code:
            self.failed("Type the code from the e-mail.", keep_waiting=True)
            return
        self.post_message(self.CodeEntered(self, code))

    # -- where the flow stands (set by the screen) ------------------------------------------------

    def _status(self, text: str | Text, style: str = "") -> None:
        status = self.query_one(f"#{self.flow}-status", Static)
        status.update(text if isinstance(text, Text) else Text(text, style=style))
        # In a short terminal the form scrolls: what just happened must be in view.
        self.call_after_refresh(status.scroll_visible, animate=False)

    def _waiting(self, waiting: bool) -> None:
        self.waiting_for_code = waiting
        self.code.disabled = not waiting
        self.query_one(f"#{self.flow}-confirm", Button).disabled = not waiting

    def sending(self, email: str) -> None:
        self._waiting(False)
        self._status(f"Sending a code to {email}…")

    def code_sent(self, email: str, where: str | None) -> None:
        self._waiting(True)
        text = f"A code was sent to {email}. Type it above and press enter."
        if where:
            text += f"\n{where}"
        self._status(text)
        self.code.focus()

    def checking(self) -> None:
        self._waiting(False)
        self._status("Checking the code…")

    def done(self, lines: list[str]) -> None:
        self._waiting(False)
        good = palette(self.app).good
        text = Text.assemble(("✓ ", good), (lines[0], good))
        for line in lines[1:]:
            text.append(f"\n{line}")
        self._status(text)

    def failed(self, message: str, *, keep_waiting: bool = False) -> None:
        if not keep_waiting:
            self._waiting(False)
        self._status(Text.assemble(("✗ ", palette(self.app).high), message))
