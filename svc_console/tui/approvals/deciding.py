"""The operator's decisions on the approvals screen, in every scope: this request only (`a`, `d`),
for a while (`A`, `D`: a grant), always (`w`: a rule in a SKILLS.md file), and every marked
request at once (`a`, `d` while some are marked; `space` and `m` mark).

Every decision goes through the broker's public API, and is made on what the operator was shown
(`as_shown.py`): the request the detail shows when the key is pressed, with the digest of its
facts, which each dialog captures as it opens and its decision carries. A decision made straight
from a key reports the broker's refusal as a notification; one made in a dialog shows it in the
dialog, which stays open with nothing decided, except that a request changed since it was shown
closes the dialog and is shown again. A mixin of `ApprovalsScreen`, which owns the lists and the
marks.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

from svc_console.broker import BrokerError
from svc_console.broker.errors import FactsChanged
from svc_console.broker.params import ApproveParams, DenyParams
from svc_console.core.models import SpendRequest
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert_line
from svc_console.core.states import State
from svc_console.policy.live import LivePolicy
from svc_console.runtime import Runtime
from svc_console.services import always_rule
from svc_console.services.always_rule import Proposal
from svc_console.tui.approvals.always import AlwaysModal
from svc_console.tui.approvals.as_shown import AsShown
from svc_console.tui.approvals.bulk import MOST, BulkModal, Marks, outcome_text
from svc_console.tui.approvals.for_a_while import LASTING, ForAWhile, ForAWhileModal
from svc_console.tui.approvals.matching import question, waiting_like
from svc_console.tui.modals import ConfirmAmountModal, DenyReasonModal
from svc_console.tui.request_lists import PENDING
from svc_console.tui.widgets.queue import endpoint_name

log = logging.getLogger(__name__)


def _for(lasting: str) -> str:
    return next(label for key, label in LASTING if key == lasting)


class Deciding(AsShown):
    """The decision actions; the screen provides the broker, the lists, the marks and `reload`."""

    runtime: Runtime
    marks: Marks
    _approved_here: set[str]

    # -- this request only ----------------------------------------------------------------------

    async def action_approve(self) -> None:
        if len(self.marks):
            self._decide_marked(approve=True)
            return
        shown = self._shown_or_say_so("approve")
        if shown is None:
            return
        request, seen = shown
        amount = self.broker.confirmation_needed(request)
        if amount is None:
            await self._approve(request, None, seen)
            return
        modal = ConfirmAmountModal(request, amount, clock=self.broker.clock)

        async def confirmed(typed: Decimal | None) -> None:
            if typed is not None:
                await self._approve(modal.request, typed, modal.seen)

        self.app.push_screen(modal, confirmed)

    def action_deny(self) -> None:
        if len(self.marks):
            self._decide_marked(approve=False)
            return
        shown = self._shown_or_say_so("deny")
        if shown is None:
            return
        modal = DenyReasonModal(shown[0], clock=self.broker.clock)

        async def reasoned(reason: str | None) -> None:
            if reason is not None:
                await self._deny(modal.request, reason, modal.seen)

        self.app.push_screen(modal, reasoned)

    async def _approve(self, request: SpendRequest, amount: Decimal | None, seen: str) -> None:
        async def decide() -> SpendRequest:
            params = ApproveParams(request_id=request.id, confirm_amount=amount, seen=seen)
            return await self.broker.approve(params)

        # Noted before the call: the broker may report the outcome before approve() returns.
        self._approved_here.add(request.id)
        if await self._decide("approve", decide, request.id):
            if self.broker.get(request.id).state == State.pending:
                # The two-person rule: this was the first approval; the request waits on.
                self._approved_here.discard(request.id)
                self.notify(f"Approved {request.id}; it needs a second operator", markup=False)
                return
            self.notify(
                f"Approved {request.id}: {endpoint_name(request, 40)} for"
                f" {inert_line(request.agent, 40)}; executing",
                markup=False,
            )
        else:
            self._approved_here.discard(request.id)

    async def _deny(self, request: SpendRequest, reason: str, seen: str) -> None:
        async def decide() -> SpendRequest:
            params = DenyParams(request_id=request.id, reason=reason, seen=seen)
            return await self.broker.deny(params)

        if await self._decide("deny", decide, request.id):
            self.notify(f"Denied {request.id}", markup=False)

    async def _decide(
        self, verb: str, decide: Callable[[], Awaitable[Any]], request_id: str
    ) -> bool:
        """Run one broker decision on `request_id`; any failure becomes one notification."""
        try:
            await self._letting_go([request_id], verb, decide)
        except FactsChanged:
            return False  # said, and the request shown again
        except BrokerError as exc:
            self.notify(exc.message, title=f"Could not {verb}", severity="error", markup=False)
            return False
        except Exception:
            # Never let an unexpected error take the operator's screen down mid-decision.
            log.exception("%s failed", verb)
            self.notify(
                "Unexpected error; nothing more was done. See the log for details.",
                title=f"Could not {verb}",
                severity="error",
            )
            return False
        finally:
            self._decided()
        return True

    def _decided(self) -> None:
        # The broker's listener reloads soon; reload now so the row goes at once.
        self._counts_stale = True
        self.reload()

    # -- for a while ----------------------------------------------------------------------------

    def action_approve_for_a_while(self) -> None:
        self._for_a_while(approve=True)

    def action_deny_for_a_while(self) -> None:
        self._for_a_while(approve=False)

    def _for_a_while(self, *, approve: bool) -> None:
        verb = "approve" if approve else "deny"
        shown = self._shown_or_say_so(verb)
        if shown is None:
            return
        request = shown[0]
        confirm = self.broker.confirmation_needed(request) if approve else None
        said: list[str] = []

        async def decide(choice: ForAWhile) -> None:
            await self._letting_go([request.id], verb, lambda: grant(choice))

        async def grant(choice: ForAWhile) -> SpendRequest:
            if approve:
                params = ApproveParams(
                    request_id=request.id,
                    seen=choice.seen,
                    confirm_amount=choice.confirm,
                    grant_for=choice.lasting,
                    grant_total=choice.total,
                )
                self._approved_here.add(request.id)
                try:
                    after = await self.broker.approve(params)
                except Exception:
                    self._approved_here.discard(request.id)
                    raise
                said.append(
                    f"Approved {request.id}, and {inert_line(request.agent, 40)}'s calls to"
                    f" {endpoint_name(request, 40)} for {_for(choice.lasting)}"
                    f" (up to {format_usdc(choice.total)} USDC in all)"
                )
            else:
                assert choice.reason is not None
                params_deny = DenyParams(
                    request_id=request.id,
                    seen=choice.seen,
                    reason=choice.reason,
                    grant_for=choice.lasting,
                )
                after = await self.broker.deny(params_deny)
                said.append(
                    f"Denied {request.id}, and {inert_line(request.agent, 40)}'s calls to"
                    f" {endpoint_name(request, 40)} for {_for(choice.lasting)}"
                )
            return after

        def closed(decided: bool | None) -> None:
            self._decided()
            if decided and said:
                self.notify(said[0], markup=False)
                self._offer_matching(request, approve=approve)

        modal = ForAWhileModal(
            request, decide, approve=approve, confirm=confirm, clock=self.broker.clock
        )
        self.app.push_screen(modal, closed)

    # -- always ---------------------------------------------------------------------------------

    def action_approve_always(self) -> None:
        shown = self._shown_or_say_so("approve")
        if shown is None:
            return
        request = shown[0]
        if getattr(self.runtime, "attached", False):
            # The rule goes into the broker's SKILLS.md, through its own policy engine.
            self.notify(
                "A rule is written by the console running the broker. Approve here, or use"
                f" svc-console approvals approve {request.id} --always --policy FILE.",
                title="Cannot approve always from an attached console",
                severity="warning",
                markup=False,
            )
            return
        live = self.runtime.policy
        if not isinstance(live, LivePolicy) or not live.paths:
            self.notify(
                "No SKILLS.md file is in force to write a rule into.",
                title="Cannot approve always",
                severity="warning",
            )
            return
        files = [Path(path) for path in live.paths]

        async def decide(proposal: Proposal, confirm: Decimal | None, seen: str) -> None:
            params = ApproveParams(
                request_id=request.id,
                seen=seen,
                confirm_amount=confirm,
                note=f"always: {proposal.rule.name}"[:500],
            )
            self._approved_here.add(request.id)
            try:
                await self._letting_go([request.id], "approve", lambda: self.broker.approve(params))
            except Exception:
                self._approved_here.discard(request.id)
                raise
            self._save_rule(request, proposal)

        modal = AlwaysModal(
            request,
            files,
            self.runtime.paths.home,
            decide,
            confirm=self.broker.confirmation_needed(request),
            now=self.broker.clock(),
            clock=self.broker.clock,
        )

        def closed(decided: bool | None) -> None:
            self._decided()
            if decided:
                self._offer_matching(request, approve=True)

        self.app.push_screen(modal, closed)

    def _save_rule(self, request: SpendRequest, proposal: Proposal) -> None:
        """Save the rule once the approval is committed; a failure to save is said plainly,
        since the approval stands."""
        name = inert_line(proposal.name, 80)
        try:
            always_rule.save(proposal)
        except Exception as exc:
            log.exception("saving the rule for %s failed", request.id)
            self.notify(
                f"Approved {request.id}, but the rule was not saved to {name}:"
                f" {inert_line(exc, 200)}",
                title="Rule not saved",
                severity="error",
                markup=False,
            )
            return
        self.notify(
            f"Approved {request.id}; rule {inert_line(proposal.rule.name, 80)!r} saved to {name}:"
            " in force within a second",
            markup=False,
        )

    # -- several at once ------------------------------------------------------------------------

    def action_toggle_mark(self) -> None:
        request = self._selected_or_say_so("mark")
        if request is None:
            return
        self.marks.toggle(request)
        self.queue.show_mark(request.id, self.colours)
        self._show_status()
        # The next request comes under the cursor, so space, space, space marks a run of them.
        self.queue.action_cursor_down()

    def action_mark_matching(self) -> None:
        query = self.lists[PENDING.name].query(self.filter)
        matching = self.broker.ledger.window(query, offset=0, limit=MOST)
        added = self.marks.add(matching)
        self.reload()
        which = "the filter matches" if self.filter.active else "waiting"
        newly = f", {added} of them just now" if added != len(self.marks) else ""
        text = f"{len(self.marks)} marked{newly}: every request {which}"
        if len(self.marks) >= MOST:
            text += f", up to {MOST} at once"
        self.notify(text, markup=False)

    def action_clear_marks(self) -> None:
        self.marks.clear()
        self.reload()

    def _decide_marked(self, *, approve: bool) -> None:
        """The dialog for every marked request still waiting; each gets its own decision."""
        for request_id in self.marks.ids:
            if self.broker.get(request_id).state != State.pending:
                self.marks.discard(request_id)  # decided elsewhere or gone meanwhile
        if not len(self.marks):
            self.reload()
            self.notify("None of the marked requests is waiting any more.", severity="warning")
            return
        self._decide_many(self.marks.ids, approve=approve, marked=True)

    def _offer_matching(self, decided: SpendRequest, *, approve: bool) -> None:
        """After a grant or a rule: the requests already waiting that it matches, decided too
        if the operator says so, through the dialog of marked requests."""
        pending = self.lists[PENDING.name]
        matching = waiting_like(self.broker, pending, decided, approve=approve)
        if matching:
            title = question(len(matching), approve=approve)
            self._decide_many([r.id for r in matching], approve=approve, title=title)

    def _decide_many(
        self, ids: list[str], *, approve: bool, marked: bool = False, title: str | None = None
    ) -> None:
        requests, total = self.broker.pending_total(ids)
        typed = approve and self.broker.decisions.total_confirmation_needed(total)
        said: list[tuple[str, bool]] = []

        async def decide(confirm: Decimal | None, reason: str | None, seen: dict[str, str]) -> None:
            ids = [request.id for request in requests]

            async def many() -> dict[str, str]:
                if approve:
                    return await self.broker.approve_many(ids, confirm_total=confirm, seen=seen)
                assert reason is not None
                return await self.broker.deny_many(ids, reason, seen=seen)

            outcome = await self._letting_go(ids, "approve" if approve else "deny", many)
            said.append(outcome_text(outcome, approve))

        def closed(decided: bool | None) -> None:
            if decided and marked:
                self.marks.clear()
            self._decided()
            if said:
                text, all_done = said[0]
                self.notify(text, severity="information" if all_done else "warning", markup=False)

        modal = BulkModal(
            requests, total, decide, approve=approve, typed=typed, clock=self.broker.clock
        )
        if title is not None:
            modal.TITLE_TEXT = title
        self.app.push_screen(modal, closed)
