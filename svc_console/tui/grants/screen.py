"""The grants screen: the decisions the operator made "for a while" (`A` / `D` on the approvals
screen, `approvals approve ID --for`), each approving or denying one agent's calls to one endpoint
until its time is up, it is revoked, or the console stops. The grants in force by default, the
ended ones too on `e`; `r` revokes the selected one after a confirmation.

Grants are few, so the screen reads them whole from the broker (`broker.grants`), once a second
(one ends by the clock alone) and whenever the broker reports a change (a grant is made with a
decision, and what it approved grows with each call it lets through); the table is drawn again
only when a row reads differently.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Static

from svc_console.broker import Broker, BrokerError
from svc_console.broker.deciders import Decider
from svc_console.core.models import SpendRequest
from svc_console.core.sanitize import inert_line
from svc_console.ledger.grants import GrantRow
from svc_console.runtime import Runtime
from svc_console.tui import bindings
from svc_console.tui.bindings import Command
from svc_console.tui.colors import Palette, palette
from svc_console.tui.grants.table import GrantsTable, clock_time, usdc
from svc_console.tui.navigation import register_screen
from svc_console.tui.policies.dialogs import ConfirmPolicyChange
from svc_console.tui.widgets.banner import service_banner
from svc_console.tui.widgets.chrome import ConsoleFooter, heading

log = logging.getLogger(__name__)

TICK_S = 1.0
RECENT = 100  # ended grants shown, latest first

COMMANDS = (
    Command(
        "grants.revoke",
        "r",
        "revoke",
        "Revoke",
        "End the selected grant now: calls like it go to the operator again",
    ),
    Command("grants.down", "j", "cursor(1)", "Next", "Select the next grant", show=False),
    Command("grants.up", "k", "cursor(-1)", "Previous", "Select the previous grant", show=False),
    Command(
        "grants.ended",
        "e",
        "toggle_ended",
        "Ended too",
        "Show the grants that ended (revoked, expired, the console stopped) with those in force",
    ),
)


@register_screen("grants", title="Grants", key="7", order=7)
class GrantsScreen(Screen[None]):
    """Grants in force (and ended ones on `e`); `r` revokes the selected one."""

    BINDINGS = bindings.define("grants", COMMANDS)
    AUTO_FOCUS = "#grants-table"
    SUB_TITLE = "grants"
    DEFAULT_CSS = """
    GrantsScreen Header { dock: none; }
    #grants-status { height: 1; padding: 0 1; background: $panel; }
    #grants-table { height: 1fr; }
    #grants-detail { height: auto; max-height: 4; padding: 0 1; background: $surface; }
    #grants-empty { display: none; height: 1fr; content-align: center middle; color: $text-muted; }
    GrantsScreen.-empty #grants-table, GrantsScreen.-empty #grants-detail { display: none; }
    GrantsScreen.-empty #grants-empty { display: block; }
    """

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(id="grants")
        assert runtime.broker is not None, "the grants screen needs a started runtime"
        self.runtime = runtime
        self.broker: Broker = runtime.broker
        self.show_ended = False
        self._unsubscribe: Callable[[], None] | None = None

    def compose(self) -> ComposeResult:
        banner = service_banner(self.broker.market, self.runtime.agent_warning)
        if banner is not None:
            yield banner
        yield from heading()
        yield Static("", id="grants-status", markup=False)
        yield GrantsTable(id="grants-table")
        yield Static("", id="grants-detail", markup=False)
        yield Static("", id="grants-empty", markup=False)
        yield ConsoleFooter()

    @property
    def table(self) -> GrantsTable:
        return self.query_one(GrantsTable)

    @property
    def colours(self) -> Palette:
        return palette(self.app)

    def on_mount(self) -> None:
        self._unsubscribe = self.broker.subscribe(self._broker_changed)
        self.set_interval(TICK_S, self.reload, name="grants-clock")
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.reload(force=True))
        self.reload()

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def on_screen_resume(self) -> None:
        self.reload()

    def _broker_changed(self, _request: SpendRequest) -> None:
        # Called by the broker, synchronously: only hand it to the message loop.
        self.call_later(self.reload)

    # -- what is shown --------------------------------------------------------------------------

    def grants(self) -> list[GrantRow]:
        if self.show_ended:
            return self.broker.grants.recent(RECENT)
        return self.broker.grants.in_force()

    def reload(self, *, force: bool = False) -> None:
        try:
            grants = self.grants()
        except Exception:
            log.exception("reading the grants failed")
            return
        now, colours = self.broker.clock(), self.colours
        changed = self.table.show(grants, now, colours, force=force)
        in_force = sum(1 for grant in grants if grant.ended_at is None)
        which = (
            f"{in_force} in force" if not self.show_ended else f"latest {len(grants)}, ended too"
        )
        self.query_one("#grants-status", Static).update(
            Text.assemble((" Grants ", "reverse bold"), f" {which}")
        )
        self._show_empty(not grants)
        if changed:
            self._show_selected()

    def _show_empty(self, empty: bool) -> None:
        if empty:
            text = (
                "No grant in force.\nA on a pending request approves calls like it for a while;"
                " D denies them."
                if not self.show_ended
                else "No grant yet."
            )
            self.query_one("#grants-empty", Static).update(Text(text, justify="center"))
        self.set_class(empty, "-empty")

    def _show_selected(self) -> None:
        grant = self.table.selected
        detail = self.query_one("#grants-detail", Static)
        self.refresh_bindings()  # `r` is offered only on a grant in force
        if grant is None:
            detail.update("")
            return
        text = Text.assemble(
            ("made ", "dim"),
            clock_time(grant.created_at),
            (" by ", "dim"),
            inert_line(grant.created_by, 40),
            (" from request ", "dim"),
            inert_line(grant.request_id, 40),
        )
        if grant.effect == "approve":
            text.append(
                f" · approves each call up to {usdc(grant.per_call_max_usdc)} USDC,"
                f" {usdc(grant.used_usdc)} of {usdc(grant.total_usdc)} USDC used"
            )
        if grant.ended_at is not None:
            text.append(
                f"\nended {clock_time(grant.ended_at)} by {inert_line(grant.ended_by or '-', 40)}:"
                f" {inert_line(grant.ended_reason or '-', 120)}",
                style=self.colours.label,
            )
        detail.update(text)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_selected()

    # -- actions --------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "revoke":
            grant = self.table.selected if self.is_mounted else None
            return grant is not None and grant.ended_at is None
        return True

    def action_cursor(self, step: int) -> None:
        if step > 0:
            self.table.action_cursor_down()
        else:
            self.table.action_cursor_up()

    def action_toggle_ended(self) -> None:
        self.show_ended = not self.show_ended
        self.reload(force=True)
        self.refresh_bindings()

    def action_revoke(self) -> None:
        grant = self.table.selected
        if grant is None or grant.ended_at is not None:
            self.notify("No grant in force is selected.", severity="warning")
            return
        effect = "approves" if grant.effect == "approve" else "denies"
        explain = (
            f"Grant {grant.id} {effect} {inert_line(grant.agent, 40)}'s calls to"
            f" {inert_line(grant.target, 60)}. Revoked, those calls go to the operator again"
            " (or to the policy's rules)."
        )
        key = self._key_of("grants.revoke")
        confirm = ConfirmPolicyChange(
            f"Revoke grant {grant.id}?", explain, "Revoke", "Keep it", key=key
        )

        def answered(revoke: bool | None) -> None:
            if revoke:
                self._revoke(grant)

        self.app.push_screen(confirm, answered)

    def _key_of(self, command_id: str) -> str:
        """The key that runs a command of this screen, as the operator's keymap has it."""
        command = next(c for c in COMMANDS if c.id == command_id)
        return bindings.keys_of(command, getattr(self.app, "keymap", {}))[0]

    def _revoke(self, grant: GrantRow) -> None:
        try:
            # Named as the console's decisions are: the operator signed in, or the setting.
            operator = self.broker.decisions.console_operator
            self.broker.grants.revoke(grant.id, Decider.this_process(operator))
        except BrokerError as exc:
            self.notify(exc.message, title="Could not revoke", severity="error", markup=False)
        except Exception:
            log.exception("revoking grant %s failed", grant.id)
            self.notify(
                "Unexpected error; see the log for details.",
                title="Could not revoke",
                severity="error",
            )
        else:
            self.notify(f"Grant {grant.id} revoked", markup=False)
        self.reload()
        self.refresh_bindings()
