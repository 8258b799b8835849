"""The whole hostile corpus (tests/hostile_strings.py) on the screens beyond the pending queue
(tests/test_hostile_text.py walks that one): the catalogue (records, skill.md and its fetch
errors), the approvals screen's announcements and history (upstream answers, error messages,
funding addresses) and the usage screen. Every string that can travel is sent where a provider,
the wallet proxy or the service would put it, through the real sandbox over HTTP, the real
ledger file and the running console; each screen is walked string by string and must show every
one as visible, harmless text: no control or invisible character drawn, no segment that links or
acts, markup drawn literally, long values cut, the title unchanged, the app still running after
clicks where a link or an action would be.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

import pytest
from helpers import FakeClock, eventually
from rich.text import Text
from test_hostile_text import MARKER, SENDABLE, ListingSandbox, acts, unsafe
from textual.widgets import Select, Static
from textual.widgets._markdown import MarkdownBlock
from tui_support import started, until, usage_settled

from svc_console.broker.params import ApproveParams, SubmitParams
from svc_console.config.paths import Paths
from svc_console.core.models import Kind
from svc_console.core.private_files import ensure_private_dir
from svc_console.core.sanitize import inert_line, inert_markdown
from svc_console.core.states import State
from svc_console.core.usage import UsageCharge, UsageFilter, iso_instant
from svc_console.ledger import Ledger
from svc_console.ledger.usage_write import sync_usage
from svc_console.runtime import Runtime
from svc_console.sandbox.app import create_app
from svc_console.sandbox.catalog import WEBSEARCH_ID, Catalog, catalog
from svc_console.tui.app import ConsoleApp
from svc_console.tui.approvals.detail import RequestDetail, render
from svc_console.tui.catalogue import screen as catalogue_screen
from svc_console.tui.catalogue.screen import MARKET, CatalogueScreen
from svc_console.tui.catalogue.skill_view import InertMarkdown
from svc_console.tui.colors import palette
from svc_console.tui.request_lists import HISTORY_LIST
from svc_console.tui.usage.dialogs import UsageFilterDialog
from svc_console.tui.usage.screen import UsageScreen
from svc_console.tui.usage.summary import SpendBreakdown

PREFIX = "ep_hostile_"
TEXTS = [text for _, text in SENDABLE]
NAMES = [name for name, _ in SENDABLE]


def endpoint_id(n: int) -> str:
    return f"{PREFIX}{n:03d}"


def number(endpoint: str) -> int:
    return int(endpoint.removeprefix(PREFIX))


# -- what the operator sees, checked -------------------------------------------------------------


def drawn(app: ConsoleApp) -> tuple[str, list[Any]]:
    """What the screen draws, from the compositor's strips (the segments the terminal is sent):
    the text, one line per row, and every segment's style."""
    strips = app.screen._compositor.render_strips()
    lines, styles = [], []
    for strip in strips:
        lines.append("".join(segment.text for segment in strip))
        styles.extend(segment.style for segment in strip if segment.style is not None)
    return "\n".join(lines), styles


def span_acts(style: Any) -> bool:
    """`acts` for a span's style, which a Textual `Content` may hold as a style string."""
    if isinstance(style, str):
        return re.search(r"@click|\blink\s*=", style) is not None
    return acts(style)


def assert_inert(text: str, spans: Any = (), *, where: str) -> None:
    """Text a widget holds: visible characters only (newlines and tabs, which it draws as line
    breaks and spaces, aside), no span that links or acts."""
    assert unsafe(text, allowed="\n\t") == [], where
    assert not [span for span in spans if span_acts(getattr(span, "style", span))], where


def assert_screen_inert(app: ConsoleApp, title: str, where: str) -> str:
    """The whole screen as drawn: visible characters only, nothing that links or acts; the app
    running under its own title. Returns the text drawn."""
    text, styles = drawn(app)
    assert unsafe(text, allowed="\n") == [], where
    assert not [style for style in styles if acts(style)], where
    assert app.is_running and app.return_code is None, where
    assert app.title == title, where
    return text


def assert_shown_as_text(shown: str, text: str, reach: int, where: str) -> None:
    """What makes each kind of hostile string visible, for the part of `text` a field shows (its
    first `reach` characters once sanitised): escapes and bidi overrides as tokens, markup as its
    own characters. Compared without white space, which wrapping adds."""
    head = inert_line(text, len(text) * 10)[:reach]
    flat = "".join(shown.split())
    for token in ("<ESC>", "<U+202E>", "[@click=", "[link="):
        if token in head:
            assert token in flat, (where, token)


async def soon(predicate: Any, timeout: float = 30.0) -> None:
    """`until` for a change the app makes in a few milliseconds (the next row's detail): polled
    often, so walking hundreds of rows takes what the app needs, not the poll's step."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.002)


def static_text(static: Static) -> Text:
    content = static.content
    assert isinstance(content, Text), type(content)
    return content


# -- a marketplace of hostile providers ----------------------------------------------------------


def hostile_catalogue() -> Catalog:
    """One endpoint per corpus string: its name, provider (id and name), description, tags, an
    optional input named and described by it, and the outputs its skill.md lists."""
    base = catalog()
    good = base.get(WEBSEARCH_ID)
    assert good is not None
    schema = good.inputs
    records = []
    for n, text in enumerate(TEXTS):
        properties = {**schema["properties"], text: {"type": "string", "description": text}}
        records.append(
            good.model_copy(
                update={
                    "id": endpoint_id(n),
                    "name": text,
                    "provider": text,
                    "provider_name": text,
                    "description": text,
                    "tags": [text, "hostile"],
                    "inputs": {**schema, "properties": properties},
                }
            )
        )
    return Catalog(
        endpoints=tuple(records),
        by_id=MappingProxyType({r.id: r for r in records}),
        kinds=MappingProxyType({r.id: base.kind(WEBSEARCH_ID) for r in records}),
        outputs=MappingProxyType({r.id: text for r, text in zip(records, TEXTS, strict=True)}),
        provider_count=len(records),
        _haystacks=MappingProxyType({r.id: "hostile" for r in records}),
    )


# What an agent asks for decides how the interposed provider answers (see HostileAnswers).
ANSWERED, FAILS, UNFUNDED, REFUSED = "answered", "fails", "unfunded", "refused"
OUTCOMES = {ANSWERED: State.succeeded, FAILS: State.failed, UNFUNDED: State.awaiting_funds}


async def _body(receive: Any) -> tuple[bytes, Any]:
    """The request's body, and a `receive` that gives it again to the app behind."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body, given = b"".join(chunks), False

    async def replay() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


async def _answer(send: Any, status: int, payload: dict[str, Any]) -> None:
    data = json.dumps(payload, ensure_ascii=False).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


class HostileAnswers:
    """ASGI middleware in front of the sandbox: the wallet proxy's answers about endpoint n carry
    corpus string n wherever a compromised provider or proxy could put it. The agent's `query`
    input says which answer: `answered` runs the call (the sandbox charges) and then its outcome's
    content type, body, chain and receipt are the string; `fails` is a 502 whose error code and
    message are it; `unfunded` a WALLET_UNFUNDED whose message and funding address are it;
    `refused` a dry run refused with it as the message. With `fail_skills` set, every skill.md
    fetch fails with the string as its error."""

    def __init__(self, app: Any):
        self.app = app
        self.fail_skills = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http":
            await self.app(scope, receive, send)
        elif self.fail_skills and path.endswith("/skill.md"):
            text = TEXTS[number(path.split("/")[3])]
            await _answer(send, 503, {"error": {"code": text, "message": text}})
        elif path.startswith("/api/wallets/") and "/actions/" in path:
            body, receive = await _body(receive)
            await self._proxy(json.loads(body), scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _proxy(self, call: dict[str, Any], scope: Any, receive: Any, send: Any) -> None:
        text = TEXTS[number(call["endpointId"])]
        wanted = call["inputs"]["query"]
        error: dict[str, Any] | None = None
        if call["dryRun"] and wanted == REFUSED:
            error = {"code": "BAD_GATEWAY", "message": text}
        elif not call["dryRun"] and wanted == FAILS:
            error = {"code": text, "message": text}
        elif not call["dryRun"] and wanted == UNFUNDED:
            error = {
                "code": "WALLET_UNFUNDED",
                "message": text,
                "fundingUrl": text,
                "balanceUsdc": "0",
                "requiredUsdc": "0.01",
            }
        if error is not None:
            status = 402 if error["code"] == "WALLET_UNFUNDED" else 502
            await _answer(send, status, {"error": error})
            return
        if call["dryRun"]:
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] = {}
        parts: list[bytes] = []

        async def keep(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            else:
                parts.append(message.get("body", b""))

        await self.app(scope, receive, keep)
        outcome = json.loads(b"".join(parts))
        assert start["status"] == 200, outcome
        outcome.update(contentType=text, body=text, chain=text)
        outcome["receipt"].update(network=text, transaction=text)
        await _answer(send, 200, outcome)


class HostileMarket(ListingSandbox):
    """The sandbox listing `hostile_catalogue()` over real HTTP, behind `HostileAnswers`."""

    def __init__(self) -> None:
        super().__init__(hostile_catalogue())
        self.answers = HostileAnswers(create_app(self.state, self.listing))

    def app(self) -> Any:
        return self.answers


@pytest.fixture(scope="module")
def hostile_market() -> Iterator[HostileMarket]:
    server = HostileMarket()
    server.start()
    yield server
    server.stop()


def console(paths: Paths, market: HostileMarket, clock: FakeClock) -> ConsoleApp:
    runtime = Runtime(paths=paths, sandbox=market, broker_options={"clock": clock})
    return ConsoleApp(runtime, cursor_blink=False)


def test_the_corpus_strings_are_told_apart():
    """Each string names one endpoint, one charge, one provider filter."""
    assert len(set(TEXTS)) == len(TEXTS) >= 60


# -- the catalogue ---------------------------------------------------------------------------------


async def open_synced_catalogue(pilot: Any) -> CatalogueScreen:
    """The catalogue screen, first visited with an empty cache: it syncs from the service over
    HTTP, then lists every hostile endpoint."""
    app = pilot.app
    await started(pilot)
    await pilot.press("2")

    def synced() -> bool:
        scr = app.screen
        if not isinstance(scr, CatalogueScreen) or scr.syncing:
            return False
        matches = scr.tabs[MARKET].matches
        return matches is not None and matches.total == len(TEXTS)

    await until(pilot, synced, 60)
    scr = app.screen
    assert isinstance(scr, CatalogueScreen) and scr.sync_error is None
    return scr


async def next_endpoint(scr: CatalogueScreen, seen: set[int]) -> tuple[int, str]:
    """Move to the next row (the next page after the last row) and wait for its selection.
    The screen's actions are called as its keys call them, without the pilot's wait for an idle
    app after each key: walking every row, that wait would be most of the test's time."""
    table = scr.table(MARKET)
    if seen and table.cursor_row < len(table.ids) - 1:
        scr.action_move(1)  # what j does
    elif seen:
        scr.action_page(1)  # what ] does
    done = {endpoint_id(n) for n in seen}
    await soon(lambda: scr.tabs[MARKET].selected not in (None, *done))
    endpoint = scr.tabs[MARKET].selected
    assert endpoint is not None
    return number(endpoint), endpoint


def blocks(scr: CatalogueScreen) -> list[MarkdownBlock]:
    return list(scr.query_one(InertMarkdown).query(MarkdownBlock))


def skill_on_screen(scr: CatalogueScreen, endpoint: str) -> bool:
    """The selected endpoint's skill.md is the document drawn: fetched and wholly mounted."""
    markdown = scr.query_one(InertMarkdown)
    text = scr.skills.get(endpoint)
    return text is not None and markdown.display and markdown.shown == inert_markdown(text)


async def test_every_hostile_record_and_skill_md_is_inert_on_the_catalogue_screen(
    paths: Paths, clock: FakeClock, hostile_market: HostileMarket, monkeypatch: pytest.MonkeyPatch
):
    """Every endpoint in turn: its row, its record (name, provider, tags, inputs, description)
    and the skill.md the service generates from it, all inert; then zoomed and clicked."""
    # skill.md is fetched once the cursor rests; walking every row, it need not rest long.
    monkeypatch.setattr(catalogue_screen, "DETAIL_DELAY_S", 0.01)
    app = console(paths, hostile_market, clock)
    async with app.run_test(size=(120, 40)) as pilot:
        scr = await open_synced_catalogue(pilot)
        title = app.title
        table = scr.table(MARKET)
        seen: set[int] = set()
        while len(seen) < len(TEXTS):
            n, endpoint = await next_endpoint(scr, seen)
            text, where = TEXTS[n], NAMES[n]
            await soon(lambda: skill_on_screen(scr, endpoint))  # noqa: B023
            shown = blocks(scr)
            # The record: name, id, provider, tags, inputs and description.
            record = static_text(scr.query_one("#endpoint-record", Static))
            assert_inert(record.plain, record.spans, where=where)
            assert_shown_as_text(record.plain, text, 80, where)
            if len(text) > 80:
                assert MARKER in record.plain, where
            # skill.md, every block of it (most are scrolled out of view).
            for block in shown:
                assert_inert(block._content.plain, block._content.spans, where=where)
            skill = "\n".join(block._content.plain for block in shown)
            assert_shown_as_text(skill, text, 1000, where)
            # Its row in the list, and the whole screen as drawn.
            for cell in table.get_row(endpoint):
                assert_inert(cell.plain, cell.spans, where=where)
            await pilot.pause(0)
            assert endpoint in assert_screen_inert(app, title, where), where  # its record's id
            seen.add(n)

        # Zoomed, clicked where a link or an action would be, entered: nothing happens.
        await pilot.press("z")
        await pilot.pause()
        await pilot.click(InertMarkdown)
        await pilot.click("#endpoint-record")
        await pilot.press("enter")
        assert_screen_inert(app, title, "zoomed and clicked")
        await until(pilot, lambda: isinstance(app.screen, CatalogueScreen))


async def test_every_hostile_skill_md_error_is_inert_on_the_catalogue_screen(
    paths: Paths, clock: FakeClock, hostile_market: HostileMarket, monkeypatch: pytest.MonkeyPatch
):
    """Each endpoint's skill.md answered by a 503 whose error code and message are its string:
    the pane says it could not be fetched, and why, inert."""
    monkeypatch.setattr(catalogue_screen, "DETAIL_DELAY_S", 0.01)
    hostile_market.answers.fail_skills = True
    try:
        app = console(paths, hostile_market, clock)
        async with app.run_test(size=(120, 40)) as pilot:
            scr = await open_synced_catalogue(pilot)
            title = app.title
            status = scr.query_one("#skill-status", Static)
            seen: set[int] = set()
            said: Any = None
            while len(seen) < len(TEXTS):
                n, endpoint = await next_endpoint(scr, seen)
                text, where = TEXTS[n], NAMES[n]

                def failed() -> bool:
                    content = status.content
                    return content is not said and "could not be fetched" in str(content)  # noqa: B023

                await soon(failed)
                said = status.content
                line = static_text(status)
                assert_inert(line.plain, line.spans, where=where)
                assert_shown_as_text(line.plain, text, 160, where)
                assert not scr.query_one(InertMarkdown).display, where
                await pilot.pause(0)
                assert endpoint in assert_screen_inert(app, title, where), where
                seen.add(n)
    finally:
        hostile_market.answers.fail_skills = False


# -- the approvals screen: upstream answers and error messages -----------------------------------

ENDED = (State.succeeded, State.failed, State.awaiting_funds, State.rejected)
BATCH = 49  # requests approved one after the other before their outcomes are awaited
# How much of its string each outcome's announcement shows: the chain, the error, the address.
NOTICE_REACH = {ANSWERED: 20, FAILS: 100, UNFUNDED: 100}


async def submit_every_request(
    paths: Paths, market: HostileMarket, clock: FakeClock, *, approve: bool
) -> dict[str, tuple[int, str]]:
    """For each corpus string, one request per way `HostileAnswers` answers it, submitted (and
    with `approve`, approved and run to its end) by the broker with no screen open: the socket
    and the pending queue have their own test. Returns request id -> (string number, asked)."""
    counter = itertools.count(1)
    runtime = Runtime(
        paths=paths,
        sandbox=market,
        broker_options={"clock": clock, "new_id": lambda: f"req_{next(counter):04d}"},
    )
    broker = await runtime.start()
    try:
        asked: dict[str, tuple[int, str]] = {}
        for n in range(len(TEXTS)):
            for wanted in (ANSWERED, FAILS, UNFUNDED, REFUSED):
                request = await broker.submit(
                    SubmitParams(
                        agent="hostile-bot",
                        kind=Kind.market_call,
                        endpoint_id=endpoint_id(n),
                        inputs={"query": wanted},
                        purpose=f"{wanted} {n}",
                    )
                )
                asked[request.id] = (n, wanted)

        def none_in(*states: State) -> bool:
            return broker.ledger.count_in_states(states) == 0

        await eventually(lambda: none_in(State.received, State.inspecting), 60)
        if approve:
            for request_id, (_, wanted) in asked.items():
                if wanted != REFUSED:
                    await broker.approve(ApproveParams(request_id=request_id))
            await eventually(lambda: none_in(State.approved, State.executing), 60)
        return asked
    finally:
        await runtime.stop()


def assert_ended_as_asked(broker: Any, asked: dict[str, tuple[int, str]], ids: Any) -> None:
    for request_id in ids:
        n, wanted = asked[request_id]
        state = broker.get(request_id).state
        assert state == OUTCOMES.get(wanted, State.rejected), (NAMES[n], wanted, state)


def record_notices(app: ConsoleApp) -> list[dict[str, Any]]:
    """Every notification the app is asked to show, as asked (toasts time out on screen)."""
    seen: list[dict[str, Any]] = []
    notify = app.notify

    def recording(message: str, **options: Any) -> None:
        seen.append({"message": message, **options})
        notify(message, **options)

    app.notify = recording  # type: ignore[method-assign]
    return seen


def outcome_notice(notices: list[dict[str, Any]], request_id: str) -> str:
    """The announcement of the request's outcome ("req_0001 failed: …"), or "" before it."""
    said = [n["message"] for n in notices if n["message"].startswith(f"{request_id} ")]
    assert len(said) <= 1, said
    return said[0] if said else ""


def assert_notices_inert(notices: list[dict[str, Any]]) -> None:
    """Each notification asked for is shown as text, never parsed as markup, and inert."""
    for notice in notices:
        where = repr(notice["message"][:60])
        assert notice.get("markup", True) is False, where
        assert_inert(str(notice["message"]), where=where)
        assert_inert(str(notice.get("title", "")), where=where)


async def test_hostile_outcomes_are_announced_inert_when_approved_on_screen(
    paths: Paths, clock: FakeClock, hostile_market: HostileMarket
):
    """The operator approves every waiting request in turn (what `a` does); each approval and
    each outcome is announced, with the endpoint's name and the upstream's chain, funding address
    or error message. (A short terminal: the queue is drawn again at every decision.)"""
    asked = await submit_every_request(paths, hostile_market, clock, approve=False)
    app = console(paths, hostile_market, clock)
    async with app.run_test(size=(120, 24), notifications=True) as pilot:
        await started(pilot)
        title = app.title
        scr = app.screen
        broker = app.runtime.broker
        notices = record_notices(app)
        checked = 0
        await until(pilot, lambda: scr.queue.row_count > 0)
        approved: list[str] = []
        while scr.queue.row_count:
            batch = []
            for _ in range(min(BATCH, scr.queue.row_count)):
                request = scr.queue.selected
                assert request is not None and request.id not in batch
                await scr.action_approve()
                batch.append(request.id)
            await soon(lambda: all(broker.get(i).state in ENDED for i in batch), 120)  # noqa: B023
            assert_ended_as_asked(broker, asked, batch)
            approved += batch
            await soon(lambda: all(outcome_notice(notices, i) for i in batch))  # noqa: B023
            # Every announcement (each outcome's with its string), the screen with the toasts
            # still up, then no more toasts (hundreds would pile up).
            assert_notices_inert(notices[checked:])
            checked = len(notices)
            for request_id in batch:
                n, wanted = asked[request_id]
                notice = outcome_notice(notices, request_id)
                assert_shown_as_text(notice, TEXTS[n], NOTICE_REACH[wanted], f"{NAMES[n]} {wanted}")
            await pilot.pause()
            assert_screen_inert(app, title, f"announcing {batch[0]} to {batch[-1]}")
            app.clear_notifications()
        assert len(approved) == len(TEXTS) * len(OUTCOMES)


async def test_hostile_upstream_answers_and_errors_are_inert_in_the_history(
    paths: Paths, clock: FakeClock, hostile_market: HostileMarket
):
    """Every request's row and detail in the history: the upstream's content type, chain and
    receipt of those that succeeded, the error of those that failed or were refused at the dry
    run, the funding address of those waiting for funds."""
    asked = await submit_every_request(paths, hostile_market, clock, approve=True)
    app = console(paths, hostile_market, clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        title = app.title
        scr = app.screen
        broker = app.runtime.broker
        assert_ended_as_asked(broker, asked, asked)
        await pilot.press("h")
        await until(pilot, lambda: scr.active == HISTORY_LIST.name and scr.table.row_count > 0)
        detail = scr.query_one(RequestDetail)
        seen: set[str] = set()
        while len(seen) < len(asked):
            await soon(lambda: detail.shown_id is not None and detail.shown_id not in seen)
            request_id = detail.shown_id
            n, wanted = asked[request_id]
            text, where = TEXTS[n], f"{NAMES[n]} {wanted}"
            request = broker.get(request_id)
            shown = detail.text
            assert_inert(shown, where=where)
            options = app.console.options.update_width(detail.size.width)
            for segment in app.console.render(render(request, palette(app)), options):
                assert not acts(segment.style), where
            for cell in scr.table.get_row(request_id):
                assert_inert(cell.plain, cell.spans, where=where)
            if wanted == ANSWERED:
                assert request.outcome is not None and request.outcome.body == text, where
                assert request.outcome.content_type == text, where
                assert_shown_as_text(shown, text, 60, where)
            else:
                assert_shown_as_text(shown, text, 200, where)
            if wanted == UNFUNDED:
                assert request.funding_url == text, where
            if len(text) > 500:  # longer than any field of the detail shows
                assert MARKER.replace(" ", "") in "".join(shown.split()), where
            seen.add(request_id)
            if len(seen) % 3 == 0:  # the whole screen too, of every variant in turn
                await pilot.pause(0)
                assert request_id in assert_screen_inert(app, title, where), where
            scr.table.action_cursor_down()  # what the down arrow does
        await pilot.pause()
        assert_screen_inert(app, title, "the whole history")
        for selector in ("#detail", f"#{HISTORY_LIST.name}"):
            await pilot.click(selector)
            await pilot.pause()
        assert_screen_inert(app, title, "clicked")


# -- the usage screen ------------------------------------------------------------------------------


def hostile_charges(now: float) -> list[UsageCharge]:
    """Charge n as the service reports it, every text of it corpus string n: the agent, the
    resource bought, its provider and domain type, the chain, the receipt, the idempotency key.
    Newest first is string 0 first."""
    return [
        UsageCharge.model_validate(
            {
                "id": f"ch_hostile_{n:03d}",
                "createdAt": iso_instant(now - 3600 - 60 * n),
                "agent": text,
                "resourceId": text,
                "provider": text,
                "domainType": text,
                "chain": text,
                "protocol": "x402",
                "amountUsdc": f"{(n + 1) / 100:.2f}",
                "idempotencyKey": text,
                "receipt": text,
            }
        )
        for n, text in enumerate(TEXTS)
    ]


def usage_shows(app: ConsoleApp, charge_id: str) -> bool:
    """The usage screen shows its table, its summary and the detail of `charge_id`."""
    scr = app.screen
    if not isinstance(scr, UsageScreen) or not usage_settled(app):
        return False
    return charge_id in str(scr.query_one("#usage-detail", Static).content)


async def test_every_hostile_usage_text_is_inert_on_the_usage_screen(
    paths: Paths, clock: FakeClock, hostile_market: HostileMarket
):
    """Charges stored as a sync from the service stores them (tests/test_tui_usage.py syncs over
    HTTP), every text of each one a corpus string: the table, the filter line, the breakdowns
    per provider and per agent, the detail and the filter dialog's lists show them inert."""
    ensure_private_dir(paths.home)
    ledger = Ledger(paths.ledger(sandbox=True))
    try:
        sync_usage(ledger, hostile_charges(clock.now), now=clock.now, service="https://svc.example")
    finally:
        ledger.close()
    app = console(paths, hostile_market, clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot)
        title = app.title
        # The hostile market serves charges of its own: the sync at start stores them too, and
        # the screen shows them as they arrive. Waited for, so the table holds both.
        follower = app.runtime.usage
        await until(pilot, lambda: follower.last_synced_at or follower.last_error)
        await pilot.press("3")
        await until(pilot, lambda: usage_settled(app) and app.screen.table.selected is not None)
        scr = app.screen
        await until(pilot, lambda: usage_shows(app, scr.table.selected.id))
        assert isinstance(scr, UsageScreen) and scr.table.total >= len(TEXTS)
        assert scr.table.total == scr.summary.totals.count
        await pilot.pause()
        assert_screen_inert(app, title, "every charge")
        # The filter dialog offers every agent, provider, chain and domain type the ledger holds:
        # each list, opened, shows them inert.
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, UsageFilterDialog))
        for field in ("agent", "provider", "chain", "domain_type"):
            select = app.screen.query_one(f"#{field}", Select)
            prompts = [prompt for prompt, _ in select._options]
            assert len(prompts) >= len(TEXTS) + 1  # and "any", and the market's own
            for prompt in prompts:
                shown = prompt if isinstance(prompt, Text) else Text(str(prompt))
                assert_inert(shown.plain, shown.spans, where=field)
            select.focus()
            await pilot.press("enter")
            await until(pilot, lambda: select.expanded)  # noqa: B023
            await pilot.pause()
            assert_screen_inert(app, title, f"the {field} list")
            await pilot.press("escape")
            await until(pilot, lambda: not select.expanded)  # noqa: B023
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is scr)
        # One string after the other as the provider filter (what the dialog sets when it is
        # chosen there): the filter line, the table, both breakdowns and the detail show it.
        for n, text in enumerate(TEXTS):
            where = NAMES[n]
            scr._set_filter(UsageFilter(provider=text))
            # This charge, and the market's own of that provider when the sync stored one.
            await soon(
                lambda: (
                    scr.filter.provider == text  # noqa: B023
                    and usage_settled(app)
                    and scr.table.selected is not None
                    and usage_shows(app, scr.table.selected.id)
                )
            )
            charge = scr.table.selected.id
            assert all(row.provider == text for row in scr.table.rows.values()), where
            for part, reach in (("#usage-filters", 30), ("#usage-detail", 30)):
                line = static_text(scr.query_one(part, Static))
                assert_inert(line.plain, line.spans, where=where)
                assert_shown_as_text(line.plain, text, reach, where)
            for breakdown in ("#usage-providers", "#usage-agents"):
                drawn_text = scr.query_one(breakdown, SpendBreakdown).render()
                assert_inert(drawn_text.plain, drawn_text.spans, where=where)
                assert_shown_as_text(drawn_text.plain, text, 8, where)
            await pilot.pause(0)
            assert charge in assert_screen_inert(app, title, where), where
        for target in ("#usage-providers", "#usage-agents", "#usage-detail", "#usage-table"):
            await pilot.click(target)
        await pilot.pause()
        assert_screen_inert(app, title, "clicked")
