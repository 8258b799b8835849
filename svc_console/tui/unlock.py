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


class SecretCheckScreen(ModalScreen[bool]):
    """A dialog whose secret is checked by a slow hash: off the event loop, one check at a time,
    each wrong one counted and said, the secret's field emptied for another try. Dismisses with
    True on a match, with False on escape. Subclasses compose the fields and say what matches."""

    BINDINGS = bindings("modal")
    SECRET = ""  # the selector of the field emptied after a wrong try

    def __init__(self) -> None:
        super().__init__()
        self.attempts = 0

    def matches(self, *typed: str) -> bool:
        raise NotImplementedError

    def wrong(self) -> str:
        """What the dialog says after a wrong try (`self.attempts` counts them)."""
        raise NotImplementedError

    def first_field(self) -> str:
        return self.SECRET

    def refused(self) -> None:
        """A wrong try, just counted; on the event loop. Nothing more by default."""

    def waiting(self, checker: Any) -> str:
        """What a checker that asked the broker says of a wrong try when the broker makes the
        next one wait (after several wrong ones): said after the count, else nothing."""
        said = (getattr(checker, "refusal", None) or "").split(";")[0]
        return f" {said[:1].upper()}{said[1:]}." if "try again in" in said else ""

    def on_mount(self) -> None:
        for field in self.query(Input):
            field.cursor_blink = getattr(self.app, "cursor_blink", True)
        self.query_one(self.first_field(), Input).focus()

    def check(self, *typed: str) -> None:
        for field in self.query(Input):
            field.disabled = True  # one check at a time: the hash takes a moment
        self._check(typed)

    @work(thread=True, exclusive=True, group="secret-check")
    def _check(self, typed: tuple[str, ...]) -> None:
        # A slow hash on purpose: checked off the event loop so the screen stays alive.
        matched = self.matches(*typed)
        self.app.call_from_thread(self._checked, matched)

    def _checked(self, matched: bool) -> None:
        if matched:
            self.dismiss(True)
            return
        self.attempts += 1
        self.refused()
        for field in self.query(Input):
            field.disabled = False
        secret = self.query_one(self.SECRET, Input)
        secret.value = ""
        error = self.query_one("#dialog-error", Static)
        error.update(Text(self.wrong()))
        error.add_class("-shown")
        secret.focus()

    def action_cancel(self) -> None:
        self.dismiss(False)


class UnlockScreen(SecretCheckScreen):
    """Dismisses with True once the passphrase typed matches, with False on escape."""

    SECRET = "#passphrase"

    def __init__(self, passphrase: Any) -> None:
        super().__init__()
        self.passphrase = passphrase  # has verify(str) -> bool

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

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.check(event.value)

    def matches(self, *typed: str) -> bool:
        return bool(self.passphrase.verify(typed[0]))

    def wrong(self) -> str:
        waiting = self.waiting(self.passphrase)
        return f"Wrong passphrase ({self.attempts} attempt(s)).{waiting or ' Try again.'}"
