"""What the TUI tests share: reading the screen as text, waiting on the running app, pinning the
sandbox's address for stable screenshots, and filling a real ledger with pending requests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from helpers import runtime_ledger
from rich.cells import cell_len
from textual.pilot import Pilot
from textual.widgets._toast import Toast

from svc_console.config.paths import Paths
from svc_console.core.models import Estimate, RiskFlag, Severity, SpendRequest, Verdict
from svc_console.core.private_files import ensure_private_dir
from svc_console.core.states import State
from svc_console.ledger import Ledger
from svc_console.runtime import Runtime
from svc_console.tui.app import ConsoleApp
from svc_console.tui.approvals.screen import ApprovalsScreen
from svc_console.tui.usage.screen import UsageScreen
from svc_console.tui.widgets.queue import RequestQueue

PINNED_SANDBOX = "http://127.0.0.1:8402"
SEED_AGENTS = ("kilo", "alpha", "mike", "bravo", "zulu", "echo", "delta")


def screen_rows(app: ConsoleApp) -> dict[int, str]:
    """What the terminal shows, as plain text by row number; rows with nothing on them are left
    out. Read from the screen's full update as the SVG screenshot reads it (each run of text
    put at its cell's column, a run of spaces alone left out), without drawing the SVG: tests
    poll this while they wait, and the SVG took three quarters of its time."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    rows = {}
    for number, line in enumerate(update.strips):
        row = ""
        column = 0
        for strip in line:
            for segment in strip:
                text = segment.text
                if text != " " * len(text):
                    row = row.ljust(column) + text.replace("\xa0", " ")
                column += cell_len(text)
        if row:
            rows[number] = row.rstrip()
    return rows


def screen_text(app: ConsoleApp) -> str:
    """What the terminal shows, as plain text."""
    return "\n".join(screen_rows(app).values())


def notices(app: ConsoleApp) -> str:
    """The notifications on screen as one line of text: wrapped lines joined again. Each is read
    within its toast's region, so what shows beside a toast is not taken for its text."""
    rows = screen_rows(app)
    lines = []
    for toast in app.screen.query(Toast):
        region = toast.region
        for y in range(region.y, region.bottom):
            lines.append(rows.get(y, "")[region.x : region.right].lstrip("▌").strip())
    return " ".join(line for line in lines if line)


def listed_notices(app: ConsoleApp) -> str:
    """The notices said, as their list (`n`) shows them: the toast draws only the newest, and a
    test that waits for an older one reads it here."""
    return " ".join(f"{notification.title} {notification.message}" for notification in app.told)


def record_notifications(app: ConsoleApp) -> list[str]:
    """Every notification's text, in order, as the app is asked to show it."""
    seen: list[str] = []
    notify = app.notify

    def recording(message: str, **options: Any) -> None:
        seen.append(str(message))
        notify(message, **options)

    app.notify = recording  # type: ignore[method-assign]
    return seen


async def until(pilot: Pilot[Any], predicate: Callable[[], Any], timeout: float = 30.0) -> None:
    """Poll while the app keeps running: the broker works in background tasks and `pause()`
    alone never waits for them. The deadline is a safety net for a loaded machine, not a
    measure: the condition is an event, awaited."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await _pause(pilot, 0.05)
    # What the predicate saw (a row, a dialog) may not be on the terminal yet: one refresh puts
    # it there, so that a screenshot taken next shows it.
    await _pause(pilot, None)


async def _pause(pilot: Pilot[Any], delay: float | None) -> None:
    """The pilot's pause while the app runs; a plain sleep once it is exiting, when the pilot's
    would look for a screen that is gone (waiting for a return code, say)."""
    if pilot.app._exit or not pilot.app._screen_stack:
        await asyncio.sleep(delay or 0)
    else:
        await pilot.pause(delay)


def _announcers(app: ConsoleApp) -> list[Any]:
    stacks = app._screen_stacks.values()
    return [s.announcer for stack in stacks for s in stack if isinstance(s, ApprovalsScreen)]


def announcements_made(app: ConsoleApp) -> bool:
    """No arrival or departure is still being gathered into a notification."""
    return all(announcer.quiet for announcer in _announcers(app))


async def clear_notices(pilot: Pilot[Any]) -> None:
    """Clear the notifications once every announcement gathered so far is made, so none comes
    after (a screenshot must not catch one late). What is still being gathered is announced
    at once: waiting for its timer (up to `SPACING_S`) would be the test's longest wait."""
    for announcer in _announcers(pilot.app):
        if announcer._timer is not None:
            announcer._timer.stop()
            announcer._announce()
    await until(pilot, lambda: announcements_made(pilot.app))
    pilot.app.clear_notifications()


def queue(app: ConsoleApp) -> RequestQueue:
    return app.screen.query_one(RequestQueue)


def showing_queue(app: Any) -> bool:
    """The approvals screen is current and composed (the app switches to it while it starts),
    and every other screen can be reached (they are opened once it is drawn)."""
    return (
        isinstance(app.screen, ApprovalsScreen)
        and bool(app.screen.query(RequestQueue))
        and getattr(app, "screens_open", True)
    )


async def secret_asked(pilot: Pilot[Any], kind: type[Any]) -> Any:
    """A passphrase or sign-in dialog of `kind`, settled: the field it asks first has the focus.
    Textual focuses the first input when the screen mounts and the dialog then moves the focus
    to the field it asks first, so the screen alone is not yet the state to type into."""

    def settled() -> bool:
        screen = pilot.app.screen
        focused = screen.focused if isinstance(screen, kind) else None
        return focused is not None and f"#{focused.id}" == screen.first_field()

    await until(pilot, settled)
    return pilot.app.screen


async def started(pilot: Pilot[Any]) -> None:
    await until(pilot, lambda: showing_queue(pilot.app))


async def rows(pilot: Pilot[Any], count: int) -> None:
    await until(pilot, lambda: showing_queue(pilot.app) and queue(pilot.app).row_count == count)


async def type_text(pilot: Pilot[Any], text: str) -> None:
    await pilot.press(*("space" if char == " " else char for char in text))


def pin_sandbox_address(runtime: Runtime) -> None:
    """The sandbox listens on a random port; show a fixed address so screenshots are stable."""
    start = runtime.start

    async def start_pinned() -> Any:
        broker = await start()
        broker.market.base_url = PINNED_SANDBOX
        return broker

    runtime.start = start_pinned  # type: ignore[method-assign]


def build_console(
    make_runtime: Callable[..., Runtime], clock: Callable[[], float], **options: Any
) -> ConsoleApp:
    """A console against the sandbox with the test clock, numbered request ids, the sandbox's
    address pinned and blinking off. Options go to the app (`theme`, `themes_dir`,
    `settings_file`, `after_start`) or else to `BrokerConfig`."""
    app_keys = ("theme", "themes_dir", "settings_file", "after_start")
    app_options = {key: options.pop(key) for key in app_keys if key in options}
    runtime = make_runtime(clock=clock, ids=True, **options)
    pin_sandbox_address(runtime)
    return ConsoleApp(runtime, cursor_blink=False, **app_options)


def attached_to(runtime: Runtime, hello: dict[str, Any]) -> Any:
    """A console attached to `runtime`'s broker (its `hello`), reading the ledger it writes."""
    from svc_console.services.attached_console import AttachedConsole

    return AttachedConsole(runtime.paths, hello, ledger_url=runtime.resolved_ledger_url())


def seed_pending(
    paths: Paths, count: int, now: float, url: str | None = None, agents: tuple[str, ...] = ()
) -> list[str]:
    """`count` requests waiting for the operator, written to the sandbox ledger through the
    ledger's own API before the console starts (as a previous run would have left them).

    Request n is n seconds younger than request n-1; amounts, agents and expiry times are spread
    so that each sort gives another order; every fifth request has a high risk flag and every
    third a warning. `agents` names the agents in turn instead of the seed's own names."""
    from svc_console.sandbox.catalog import catalog

    record = catalog().get("ep_websearch_basic")
    assert record is not None
    ensure_private_dir(paths.home)
    ledger = Ledger(paths.ledger(sandbox=True), url=url) if url else runtime_ledger(paths)
    ids = []
    try:
        for n in range(count):
            created = now - 10_000 + n
            request = SpendRequest(
                id=f"req_seed{n:04d}",
                agent=agents[n % len(agents)]
                if agents
                else f"{SEED_AGENTS[n % len(SEED_AGENTS)]}-bot",
                kind="market_call",
                endpoint_id=record.id,
                inputs={"query": f"topic {n}"},
                purpose=f"background for report {n}",
                state=State.received,
                created_at=created,
                updated_at=created,
            )
            ledger.insert_request(request)
            ledger.transition(request.id, State.inspecting, at=created)
            flags = []
            if n % 5 == 0:
                flags.append(RiskFlag(code="input_api_key", severity=Severity.high, reason="key"))
            if n % 3 == 0:
                flags.append(RiskFlag(code="dynamic_price", severity=Severity.warn, reason="range"))
            ledger.transition(
                request.id,
                State.pending,
                at=created,
                endpoint=record,
                estimate=Estimate(
                    amount_usdc=Decimal((n * 7) % 13 + 1) / 100, chain="base", protocol="x402"
                ),
                risk=flags,
                verdict=Verdict(outcome="ask", summary="the operator decides"),
                expires_at=now + 600 + (n * 7) % count,
            )
            ids.append(request.id)
    finally:
        ledger.close()
    return ids


def usage_settled(app: ConsoleApp) -> bool:
    """The usage screen is shown, counted, its visible rows and its whole summary loaded."""
    screen = app.screen
    if not isinstance(screen, UsageScreen) or screen.table.total is None:
        return False
    table, s = screen.table, screen.summary
    top = int(table.scroll_y)
    visible = range(top, min(table.total, top + table.page))
    return all(i in table.rows for i in visible) and None not in (
        s.totals,
        s.days,
        s.providers,
        s.agents,
    )
