"""Which request a decision is made on, and on what facts: the request the detail shows when the
key is pressed, with the digest of its facts as shown (`core/shown_facts.py`). A mixin of the
approvals screen, beside `Deciding`.

The detail is drawn a message after the cursor moves, so a key handled in between (typed fast, a
loaded machine, keys arriving together from a browser) would otherwise decide the row the cursor
reached, which the operator has not seen: such a key decides nothing, and the detail is drawn.
A request that changed since it was drawn (repriced, re-quoted, its verdict changed) is said and
shown again, whether the screen finds it so or the broker refuses the decision for it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from svc_console.broker import Broker
from svc_console.broker.errors import FactsChanged
from svc_console.core.models import SpendRequest
from svc_console.core.shown_facts import changed_since_shown, facts_digest
from svc_console.core.states import State
from svc_console.tui.approvals.detail import RequestDetail
from svc_console.tui.request_lists import PAGE_SIZE, PENDING, Filter, ListState
from svc_console.tui.widgets.queue import RequestQueue


class AsShown:
    """The screen provides the broker, the lists, the queue, the detail and `reload`."""

    broker: Broker
    filter: Filter
    lists: dict[str, ListState]
    queue: RequestQueue
    _counts_stale: bool
    notify: Callable[..., Any]
    reload: Callable[..., None]
    query_one: Callable[..., Any]
    _show_selected: Callable[[], None]
    _decided: Callable[[], None]

    def _shown_or_say_so(self, verb: str) -> tuple[SpendRequest, str] | None:
        """The selected request as the detail shows it, read again from the ledger, and the
        digest of the facts the detail showed; None (and why, said) when it cannot be decided:
        the detail was not yet drawn for the row the cursor moved to, or the request changed
        since it was drawn (it is shown again)."""
        request = self._selected_or_say_so(verb)
        if request is None:
            return None
        shown = self.query_one(RequestDetail).request
        if shown is None or shown.id != request.id:
            # The detail is drawn a message after the cursor moves: a key handled in between
            # (typed fast, a loaded machine, keys arriving together from a browser) would
            # decide a request the operator has not seen.
            self._show_selected()
            self.notify(
                f"{request.id} was not yet shown when the key was pressed; nothing was decided."
                " It is shown now.",
                title=f"Could not {verb}",
                severity="warning",
                markup=False,
            )
            return None
        seen = facts_digest(shown)
        if facts_digest(request) != seen:
            self._show_changed(changed_since_shown(request), [request.id], verb)
            return None
        return request, seen

    def _show_changed(self, message: str, request_ids: list[str], verb: str) -> None:
        """A request changed since the operator was shown it: say so, and show it again."""
        self.notify(message, title=f"Could not {verb}", severity="error", markup=False)
        self._counts_stale = True
        state = self.lists[PENDING.name]
        at = self.broker.ledger.position(state.query(self.filter), request_ids[0])
        if at is None:  # no longer listed: the page as it is now
            self.reload()
            return
        state.page = at // PAGE_SIZE
        self.reload(cursor=at % PAGE_SIZE)

    def _selected_or_say_so(self, verb: str) -> SpendRequest | None:
        """The request under the cursor, read again from the ledger: a row on screen may be a
        moment older than the request (expired, or decided elsewhere, since the page was read).
        A selection that left the list decides nothing: the operator chooses again."""
        gone = self.queue.gone_id
        if gone is not None:
            self.notify(
                f"{gone} is no longer selected, as it left the list; nothing was decided. Move"
                " the cursor to choose another request.",
                title=f"Could not {verb}",
                severity="warning",
                markup=False,
            )
            return None
        request = self.queue.selected
        if request is None:
            self.notify("No request is selected.", severity="warning")
            return None
        fresh = self.broker.get(request.id)
        if fresh.state != State.pending:
            # The broker's own words for the same refusal, had the decision reached it.
            self.notify(
                f"request {request.id} is {fresh.state}, not pending; nothing was decided.",
                title=f"Could not {verb}",
                severity="error",
                markup=False,
            )
            self._decided()
            return None
        return fresh

    async def _letting_go(
        self, request_ids: list[str], verb: str, decide: Callable[[], Awaitable[Any]]
    ) -> Any:
        """Decide; while the decision is made the selection lets go of these requests (their
        leaving is no loss of selection), and holds them again when it is not. A request that
        changed since it was shown is said and shown again."""
        self.queue.let_go(request_ids)
        try:
            result = await decide()
        except FactsChanged as exc:
            self.queue.hold(request_ids)
            self._show_changed(exc.message, list(exc.data.get("request_ids") or request_ids), verb)
            raise
        except BaseException:
            self.queue.hold(request_ids)
            raise
        # Still waiting (a first approval under the two-person rule), or left out of several.
        if isinstance(result, SpendRequest):
            self.queue.hold([result.id] if result.state == State.pending else [])
        elif isinstance(result, dict):
            self.queue.hold(
                [
                    rid
                    for rid, said in result.items()
                    if said == "pending" or said.startswith("not ")
                ]
            )
        return result
