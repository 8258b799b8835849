"""The one question the policies screen asks before it acts: throw away a draft (revert, or read
a file someone else saved) or overwrite a file that changed on disk since the draft began. The
safe answer has the focus, so enter alone never loses work; escape is the same as "no"."""

from __future__ import annotations

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from svc_console.tui.bindings import bindings
from svc_console.tui.widgets.dialog_keys import ARROW_BINDINGS, ButtonArrows, keyed


class ConfirmPolicyChange(ButtonArrows, ModalScreen[bool]):
    """Yes or no about a policy file; dismissed with True only by the confirming button (or
    its key, when it has one)."""

    BINDINGS = [*bindings("modal"), *ARROW_BINDINGS]
    DEFAULT_CSS = """
    ConfirmPolicyChange { align: center middle; }
    """

    def __init__(
        self, title: str, explain: str, confirm: str, keep: str, key: str | None = None
    ) -> None:
        super().__init__()
        self.title_text, self.explain = title, explain
        self.confirm_label = keyed(confirm, key) if key else confirm
        self.keep_label, self.key = keep, key

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(self.title_text), id="dialog-title")
            # The explanation names files and versions: plain text, never markup.
            yield Static(Text(self.explain), markup=False, classes="dialog-explain")
            with Horizontal(id="dialog-buttons"):
                yield Button(self.confirm_label, variant="warning", id="confirm")
                yield Button(self.keep_label, variant="primary", id="keep")

    def on_mount(self) -> None:
        self.query_one("#keep", Button).focus()

    @on(Button.Pressed, "#confirm")
    def _confirm(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#keep")
    def _keep(self) -> None:
        self.dismiss(False)

    def action_cancel(self) -> None:
        self.dismiss(False)

    def on_key(self, event: events.Key) -> None:
        if self.key is not None and event.key == self.key:
            event.stop()
            self.dismiss(True)
