"""The first start against a real service with agents of the operator's own user accepted and no
operator credential: the TUI offers to set the operator passphrase.

Such agents can use the operator socket as well as the operator, so decisions from the command
line, the web console and attached consoles are refused until a passphrase (or an operator
account) exists. Set here, it is in force at once: this is the console's own process, at the
operator's keyboard. Skipped (escape), it is not asked again, and those channels stay refused
until `svc-console operators passwd`. The sandbox and the demo never ask: a newcomer's tour is
not interrupted.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from svc_console.config.operator_passphrase import MIN_LENGTH, OperatorPassphrase
from svc_console.tui.bindings import bindings

EXPLAIN = (
    "Agents running as your own user are accepted by this console, and they can use its"
    " operator socket as well as you can. Set an operator passphrase, and decisions from the"
    " command line, the web console and attached consoles need it (this terminal does not)."
    " Escape skips: those decisions stay refused until svc-console operators passwd sets one."
)


def offer_needed(runtime: Any) -> bool:
    """Whether to offer, once: the console runs its own broker against a real service, agents
    of the operator's user are accepted, no credential exists, and it was never offered."""
    market, access = getattr(runtime, "market", None), getattr(runtime, "access", None)
    if getattr(runtime, "attached", False) or market is None or market.sandbox:
        return False
    if access is None or not access.same_user_accepted:
        return False
    operators = runtime.operators
    if runtime.passphrase.is_set() or (operators is not None and operators.any()):
        return False
    return not OperatorPassphrase(runtime.paths.operator_passphrase).offered()


def answered(set_now: bool) -> tuple[str, str]:
    """The notice after the offer: its title and text."""
    if set_now:
        return (
            "Operator passphrase set",
            "Decisions from the command line, the web console and attached consoles now need"
            " it; this terminal does not.",
        )
    return (
        "No operator passphrase",
        "Decisions from the command line, the web console and attached consoles are refused"
        " until one is set: svc-console operators passwd (then restart the console).",
    )


class PassphraseOfferScreen(ModalScreen[bool]):
    """Dismisses with True once a passphrase is set, with False when skipped."""

    BINDINGS = bindings("modal")

    def __init__(self, runtime: Any) -> None:
        super().__init__()
        self.runtime = runtime

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Set an operator passphrase?", id="dialog-title")
            yield Static(Text(EXPLAIN), markup=False, classes="dialog-explain")
            yield Input(password=True, placeholder="new passphrase", id="passphrase")
            yield Input(password=True, placeholder="the same again", id="again")
            yield Static("", id="dialog-error", markup=False)

    def on_mount(self) -> None:
        # The offer is made once: asked now, skipped or not, it is not asked again.
        OperatorPassphrase(self.runtime.paths.operator_passphrase).mark_offered()
        for field in self.query(Input):
            field.cursor_blink = getattr(self.app, "cursor_blink", True)
        self.query_one("#passphrase", Input).focus()

    @on(Input.Submitted, "#passphrase")
    def _first_given(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#again", Input).focus()

    @on(Input.Submitted, "#again")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        new = self.query_one("#passphrase", Input).value
        if len(new) < MIN_LENGTH:
            self._say(f"A passphrase needs at least {MIN_LENGTH} characters.")
        elif event.value != new:
            self._say("The two passphrases differ. Type it twice, the same.")
        else:
            for field in self.query(Input):
                field.disabled = True  # the hash takes a moment
            self._set(new)
            return
        for field in self.query(Input):
            field.value = ""
        self.query_one("#passphrase", Input).focus()

    @work(thread=True, exclusive=True, group="passphrase-offer")
    def _set(self, new: str) -> None:
        # A slow hash on purpose: made off the event loop. In force for this run at once.
        self.runtime.passphrase.set(new)
        self.app.call_from_thread(self.dismiss, True)

    def _say(self, text: str) -> None:
        error = self.query_one("#dialog-error", Static)
        error.update(Text(text))
        error.add_class("-shown")

    def action_cancel(self) -> None:
        self.dismiss(False)
