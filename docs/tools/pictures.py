"""The guide's pictures, drawn by the console itself: each is a scripted demo state (the demo's
agents and requests, against the sandbox, on a clock that does not move) opened in the real
app at 120x40 and saved with Textual's own screenshot, as the snapshot tests do. `make docs`
writes them; tests/docs/test_pictures.py fails when a committed one is no longer what its
script draws."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "images"
SIZE = (120, 40)
SLOW_S = 120.0  # the longest a step may take on a loaded machine before the drawing fails
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "tui")]

# What the demo's agents ask for (svc_console/demo.py), one request each, oldest first.
ASKS = (
    ("video-bot", "ep_frameify_generate", {"prompt": "a lighthouse at dawn, slow pan",
     "duration_s": 10}, "the teaser clip for the weekly note"),
    ("research-bot", "ep_websearch_basic", {"query": "heat pump adoption by country",
     "max_results": 10}, "background for the weekly energy note"),
    ("scraper-7", "ep_scrape_page", {"url": "https://example.com/pricing"},
     "track competitor pricing changes"),
    ("quant-feed", "ep_fx_rates", {"symbol": "EURUSD"}, "mark the FX book to market"),
    ("watch-bot", "ep_websearch_basic", {"query": "grid outage latest news", "max_results": 5},
     "see whether the outage story has moved"),
    ("mcp-analyst", "ep_websearch_basic", {"query": "grid storage costs"},
     "draft the analyst note (via MCP)"),
)  # fmt: skip


@contextmanager
def scene() -> Any:
    """A home of its own, the sandbox, no OS keyring: what each picture starts from."""
    import keyring
    from keyring.backends import fail

    from svc_console.sandbox.server import SandboxServer

    home = Path(tempfile.mkdtemp(prefix="svc-doc-"))
    names = ("SVC_CONSOLE_HOME", "SVC_CONSOLE_SOCKET", "SVC_BASE_URL", "SVC_LEDGER_URL")
    saved = {name: os.environ.pop(name, None) for name in names}
    os.environ["SVC_CONSOLE_HOME"] = str(home)
    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    sandbox = SandboxServer()
    sandbox.start()
    try:
        yield home, sandbox
    finally:
        sandbox.stop()
        keyring.set_keyring(before)
        for key, value in saved.items():
            if value is not None:
                os.environ[key] = value
        shutil.rmtree(home, ignore_errors=True)


def console(home: Path, sandbox: Any, clock: Any) -> Any:
    from tui_support import build_console

    from svc_console.broker.config import BrokerConfig
    from svc_console.config.paths import Paths
    from svc_console.runtime import Runtime

    paths = Paths(home=home, socket=home / "svc.sock", explicit_home=True)

    def make_runtime(*, clock: Any = None, ids: bool = False, **config: Any) -> Runtime:
        import itertools

        counter = itertools.count(1)
        options = {"clock": clock, "new_id": lambda: f"req_{next(counter):04d}"}
        return Runtime(paths=paths, sandbox=sandbox, config=BrokerConfig(**config),
                       broker_options=options)  # fmt: skip

    return build_console(make_runtime, clock)


async def ask(pilot: Any, clock: Any, asks: tuple[tuple[Any, ...], ...] = ASKS) -> list[str]:
    """The demo's agents ask, a few seconds apart; each request ends up waiting."""
    from tui_support import until

    from svc_console.broker.params import SubmitParams
    from svc_console.core.states import State

    broker = pilot.app.runtime.broker
    ids = []
    for agent, endpoint, inputs, purpose in asks:
        params = SubmitParams(agent=agent, kind="market_call", endpoint_id=endpoint,
                              inputs=inputs, purpose=purpose)  # fmt: skip
        request = await broker.submit(params)
        await until(pilot, lambda r=request: broker.get(r.id).state == State.pending)
        ids.append(request.id)
        clock.advance(4)
    return ids


async def footer_drawn(pilot: Any, keys: str) -> None:
    """The screen's own footer is drawn (Textual composes it a frame after the screen)."""
    from tui_support import screen_rows, until

    await until(pilot, lambda: keys in screen_rows(pilot.app).get(SIZE[1] - 1, ""))


async def approvals(pilot: Any, clock: Any, sandbox: Any) -> None:
    from tui_support import clear_notices, rows, started

    await started(pilot)
    await ask(pilot, clock)
    clock.advance(20)
    await rows(pilot, len(ASKS))
    await clear_notices(pilot)
    await footer_drawn(pilot, "a Approve")


async def wallet(pilot: Any, clock: Any, sandbox: Any) -> None:
    """The clip approved while the wallet holds what the demo's small calls left of 1.20."""
    from tui_support import PINNED_SANDBOX, clear_notices, started, until

    from svc_console.broker.params import ApproveParams
    from svc_console.core.states import State
    from svc_console.tui.wallet.screen import WalletScreen

    await started(pilot)
    pilot.app.runtime.broker.market.wallet_api_base = PINNED_SANDBOX
    sandbox.state.set_balance("1.10")
    (clip,) = await ask(pilot, clock, ASKS[:1])
    broker = pilot.app.runtime.broker
    await broker.approve(ApproveParams(request_id=clip, confirm_amount=Decimal("1.50")))
    await until(pilot, lambda: broker.get(clip).state == State.awaiting_funds)
    await pilot.press("5")
    await until(pilot, lambda: isinstance(pilot.app.screen, WalletScreen))
    await until(pilot, lambda: pilot.app.screen.balance is not None)
    await clear_notices(pilot)
    await footer_drawn(pilot, "f Fund the wallet")


async def usage(pilot: Any, clock: Any, sandbox: Any) -> None:
    """Two months of charges, only the flagged ones shown (`x`)."""
    from test_tui_usage import sync_shown
    from tui_support import clear_notices, until, usage_settled

    app = pilot.app
    await until(pilot, lambda: getattr(app, "_started", False), timeout=SLOW_S)
    await pilot.press("3")  # the sync at start may take a while on a busy machine
    await until(pilot, lambda: usage_settled(app) and sync_shown(app), timeout=SLOW_S)
    await pilot.press("x")
    await until(
        pilot, lambda: usage_settled(pilot.app) and pilot.app.screen.filter.state == "flagged"
    )
    await clear_notices(pilot)
    await footer_drawn(pilot, "x Flagged")


def _usage_home(home: Path) -> Any:
    from helpers import FakeClock
    from test_tui_usage import NOON

    from svc_console.config.paths import Paths
    from svc_console.ledger.usage_seed import seed_usage

    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    seed_usage(
        Paths(home=home, socket=home / "svc.sock", explicit_home=True).ledger(sandbox=True),
        1000,
        days=60,
    )
    return FakeClock(NOON)


Script = Callable[[Any, Any, Any], Awaitable[None]]
PICTURES: dict[str, tuple[Script, Callable[[Path], Any] | None]] = {
    "approvals": (approvals, None),
    "wallet": (wallet, None),
    "usage": (usage, _usage_home),
}


def draw(name: str) -> str:
    """The picture `name` as the console draws it now: an SVG's text."""
    from helpers import FakeClock
    from test_tui_wallet import KEYS

    from svc_console.sandbox.wallet_keys import WalletKeys
    from svc_console.tui.wallet import screen as wallet_screen

    script, prepare = PICTURES[name]
    create, poll = WalletKeys.__dict__["create"], wallet_screen.POLL_S
    WalletKeys.create = classmethod(lambda cls: KEYS)  # fixed wallet addresses
    wallet_screen.POLL_S = 3600.0  # nothing changes while the picture is taken
    try:
        with scene() as (home, sandbox):
            clock = prepare(home) if prepare else FakeClock()
            app = console(home, sandbox, clock)

            async def run() -> str:
                async with app.run_test(size=SIZE) as pilot:
                    await script(pilot, clock, sandbox)
                    await pilot.pause()
                    return app.export_screenshot(title="svc-console")

            return asyncio.run(run())
    finally:
        WalletKeys.create = create
        wallet_screen.POLL_S = poll


# A request's age and time left, as the list shows them (`44s`, `14m&#160;16s`, `2h&#160;5m`).
_DURATION = re.compile(r"(?:&#160;)*(?<![\w.])\d+[hms](?:&#160;\d+[ms])?(?![\w.])(?:&#160;)*")


def structure(svg: str) -> str:
    """What a picture shows, without what differs from one drawing to the next: Textual names
    its CSS classes after a hash of the run (`terminal-1234-r5`), and a request's age and time
    left depend on the moment the broker took it in, which the script does not fix: with the
    spaces that pad them in their cells, since `8s` is padded more than `32s`."""
    return _DURATION.sub("N", re.sub(r"terminal-\d+", "terminal", svg))


def write_all() -> list[Path]:
    IMAGES.mkdir(exist_ok=True)
    written = []
    for name in PICTURES:
        path = IMAGES / f"{name}.svg"
        path.write_text(draw(name))
        written.append(path)
    return written
