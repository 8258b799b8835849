"""The frame of the dialogs that decide while they are open: for a while, always, and several
requests at once. Each asks the broker itself, so a refusal (a total below one call, a request
that expired meanwhile, a confirmation that does not match) is shown in the dialog, which stays
open with nothing decided; it closes with True only once the broker has decided.

Escape or Cancel closes it with False, and nothing is decided; so does a refusal because a
request changed since the dialog showed it (its `seen`, the digests of the facts it showed, no
longer match), which the screen then shows again. A dialog about one request counts down the time
it has left and refuses once it is over.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from decimal import Decimal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from svc_console.broker import BrokerError
from svc_console.broker.errors import FactsChanged
from svc_console.core.models import SpendRequest
from svc_console.core.money import format_usdc, parse_usdc
from svc_console.core.sanitize import inert_line
from svc_console.tui.bindings import bindings
from svc_console.tui.modals import expiry_countdown, refuse_expired
from svc_console.tui.widgets.countdown import Countdown
from svc_console.tui.widgets.dialog_keys import ARROW_BINDINGS, ButtonArrows

log = logging.getLogger(__name__)


class DecidingDialog(ButtonArrows, ModalScreen[bool]):
    """A title, the subclass's body, an error line and the two buttons."""

    BINDINGS = [*bindings("modal"), *ARROW_BINDINGS]
    TITLE_TEXT = ""
    CONFIRM_LABEL = "OK"
    CONFIRM_VARIANT = "primary"

    def __init__(
        self,
        *,
        expiring: SpendRequest | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """`expiring`: the one request decided here, whose time left is counted down by
        `clock`; None for a dialog over several requests (which counts down itself)."""
        super().__init__()
        self._busy = False
        self._expiring, self._clock = expiring, clock

    def compose_body(self) -> ComposeResult:
        """What the subclass asks between the title and the error line."""
        yield from ()

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.TITLE_TEXT, id="dialog-title")
            if self._expiring is not None:
                yield expiry_countdown(self._expiring, self._clock)
            yield from self.compose_body()
            yield Static("", id="dialog-error", markup=False)
            with Horizontal(id="dialog-buttons"):
                yield Button(self.CONFIRM_LABEL, variant=self.CONFIRM_VARIANT, id="confirm")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        # Snapshot tests turn blinking off app-wide so screenshots do not depend on timing.
        blink = getattr(self.app, "cursor_blink", True)
        for field in self.query(Input):
            field.cursor_blink = blink
        fields = self.query(Input)
        if fields:
            fields.first().focus()
        else:
            # Nothing to type: enter presses the deciding button.
            self.query_one("#confirm", Button).focus()

    def show_error(self, message: str) -> None:
        error = self.query_one("#dialog-error", Static)
        error.update(Text(message))
        error.set_class(bool(message), "-shown")

    async def submit(self) -> None:
        raise NotImplementedError

    @property
    def expired(self) -> bool:
        """Whether the dialog can no longer decide: its request's time is up."""
        return any(countdown.over for countdown in self.query(Countdown))

    @on(Countdown.Expired)
    def _expired(self, event: Countdown.Expired) -> None:
        event.stop()
        if self.expired:
            refuse_expired(self)

    async def decide(self, attempt: Callable[[], Awaitable[object]]) -> None:
        """Ask the broker; close on success, else say why with the dialog still open."""
        if self._busy:  # a second enter while the first decision is on its way
            return
        self._busy = True
        try:
            await attempt()
        except FactsChanged:
            # Shown facts that no longer hold cannot be decided on: the screen says so and
            # shows the request again.
            self.dismiss(False)
            return
        except BrokerError as exc:
            # A refusal may quote what an agent sent: shown as inert text.
            self.show_error(f"{inert_line(exc.message.rstrip('.'), 300)}. Nothing was decided.")
            return
        except Exception:
            # Never let an unexpected error take the operator's screen down mid-decision.
            log.exception("%s failed", self.TITLE_TEXT)
            self.show_error("Unexpected error; nothing more was done. See the log for details.")
            return
        finally:
            self._busy = False
        self.dismiss(True)

    @on(Input.Submitted)
    async def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not self.expired:
            await self.submit()

    @on(Button.Pressed, "#confirm")
    async def _confirm(self, event: Button.Pressed) -> None:
        event.stop()
        if not self.expired:
            await self.submit()

    @on(Button.Pressed, "#cancel")
    def _cancel(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(False)

    def action_cancel(self) -> None:
        self.dismiss(False)


def typed_amount(value: str, expected: Decimal, what: str = "amount") -> str | None:
    """Why a typed confirmation is not `expected` (None when it is), worded as the single
    approval's dialog words it."""
    try:
        typed = parse_usdc(value)
    except ValueError:
        return f"Not an amount. Type {format_usdc(expected)} to confirm the {what}."
    if typed != expected:
        return (
            f"{format_usdc(typed)} is not the {what}. Type {format_usdc(expected)} exactly;"
            " nothing was decided."
        )
    return None
