"""Hostile strings (tests/hostile_strings.py) shown to the operator: through the sanitiser, then end
to end as an agent's and a provider's fields over the real socket and sandbox, on the approvals
screen and in `svc-console approvals list`. Each must show as visible, harmless text: no escape or
control character, no bidi control or invisible character, markup shown literally and never acted
on, long values cut with a marker. Lookalike provider names are flagged."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import threading
import time
import unicodedata
from collections.abc import Iterator
from decimal import Decimal
from functools import cache
from types import MappingProxyType
from typing import Any

import pytest
import uvicorn
from helpers import FakeClock
from hostile_strings import HOMOGLYPH_NAMES, HOSTILE
from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.widgets import Static
from tui_support import build_console, queue, screen_text, started, until

from svc_console.agent import AgentError, AsyncAgent
from svc_console.broker import BrokerConfig
from svc_console.config.paths import Paths
from svc_console.core import names
from svc_console.core.models import EndpointRecord, Estimate, Severity
from svc_console.core.risk import assess
from svc_console.core.sanitize import DEFAULT_LIMIT, inert, inert_line
from svc_console.core.states import State
from svc_console.runtime import Runtime
from svc_console.sandbox import server as sandbox_server
from svc_console.sandbox.app import create_app
from svc_console.sandbox.catalog import WEBSEARCH_ID, Catalog, catalog
from svc_console.sandbox.state import SandboxState
from svc_console.tui.approvals.detail import RequestDetail, render
from svc_console.tui.colors import palette
from svc_console.tui.request_lists import PENDING

# Characters that must never reach the screen as themselves: controls, format characters (bidi,
# zero-width, tags), surrogates, line and paragraph separators, and the code points Unicode says
# render as nothing (Default_Ignorable_Code_Point, DerivedCoreProperties.txt), plus the braille
# blank, which draws an empty cell.
FORBIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}
DEFAULT_IGNORABLE = [
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
]
BRAILLE_BLANK = 0x2800
MARKER = "more characters]"
IDS = [name for name, _ in HOSTILE]


def unsafe(text: str, allowed: str = "") -> list[str]:
    """The characters of `text` that must not be shown as themselves."""
    return [f"U+{ord(char):04X}" for char in text if char not in allowed and _unsafe(char)]


@cache
def _unsafe(char: str) -> bool:
    # Asked of every character of every screen the hostile tests read: each is judged once.
    code = ord(char)
    return (
        unicodedata.category(char) in FORBIDDEN_CATEGORIES
        or code == BRAILLE_BLANK
        or any(low <= code <= high for low, high in DEFAULT_IGNORABLE)
    )


def rendered(text: str) -> tuple[str, list[Any]]:
    """What Rich draws for `text` shown as a `Text` (the way widgets show untrusted text): the
    plain output and every segment's style."""
    console = Console(width=10_000, color_system=None, force_terminal=False, record=True)
    segments = list(console.render(Text(text), console.options.update(no_wrap=True)))
    console.print(Text(text), soft_wrap=True, end="")
    return console.export_text(), [segment.style for segment in segments]


def acts(style: Any) -> bool:
    """Whether a style would make text a link or a clickable action."""
    if not style:
        return False
    if isinstance(style, str):
        style = Style.parse(style)
    return bool(style.link) or "@click" in (style.meta or {})


def test_the_corpus_holds_every_kind_of_trouble():
    assert len(HOSTILE) >= 60
    assert len(set(IDS)) == len(IDS)
    joined = "".join(text for _, text in HOSTILE)
    for needed in ("\x1b[", "\x1b]8;", "\x1b]52;", "\x1bP", "\r", "\x08", "[@click=", "[link="):
        assert needed in joined
    for needed in ("\u202e", "\u2066", "\u200b", "\ufeff", "\x00", "\x9b", "\ud800", "\t"):
        assert needed in joined
    assert any(len(text) > DEFAULT_LIMIT for _, text in HOSTILE)
    assert len(HOMOGLYPH_NAMES) >= 5


@pytest.mark.parametrize(("name", "text"), HOSTILE, ids=IDS)
def test_inert_leaves_only_visible_text(name: str, text: str):
    shown, line = inert(text), inert_line(text)
    assert unsafe(shown, allowed="\n\t") == []
    assert unsafe(line) == []
    assert "\n" not in line and "\t" not in line
    if "\x1b" in text:
        assert "<ESC>" in shown or MARKER in shown
    if "\u202e" in text:
        assert "<U+202E>" in shown


@pytest.mark.parametrize(("name", "text"), HOSTILE, ids=IDS)
def test_long_values_are_cut_with_a_marker(name: str, text: str):
    for cut, limit in ((inert(text), DEFAULT_LIMIT), (inert_line(text), 80), (inert(text, 10), 10)):
        if len(cut) > limit:
            head, _, tail = cut.rpartition("… [")
            assert len(head) == limit and tail.endswith(MARKER)


@pytest.mark.parametrize(("name", "text"), HOSTILE, ids=IDS)
def test_markup_is_shown_literally_and_never_links_or_acts(name: str, text: str):
    for shown in (inert(text, 400), inert_line(text, 400)):
        plain, styles = rendered(shown)
        # Rich draws the text as it is (tabs expanded): no tag consumed, no emoji code replaced.
        assert plain == shown.expandtabs(8)
        assert not any(acts(style) for style in styles)
        static = Static(shown, markup=False).render()
        assert static.plain == shown
        assert not any(acts(getattr(span, "style", None)) for span in static.spans)


def test_every_invisible_or_control_character_is_marked():
    """Not only the corpus: every code point of those categories this Python knows, so a newer
    Unicode cannot slip a format character past the sanitiser unnoticed."""
    everything = "".join(
        chr(code)
        for code in range(0x110000)
        if code not in (0x09, 0x0A)
        and (
            unicodedata.category(chr(code)) in FORBIDDEN_CATEGORIES
            or any(low <= code <= high for low, high in DEFAULT_IGNORABLE)
        )
    )
    assert len(everything) > 2000
    assert unsafe(inert_line(everything, limit=len(everything) * 10)) == []
    assert unsafe(inert(everything, limit=len(everything) * 10), allowed="\n\t") == []


def test_emoji_and_letters_of_every_script_stay_as_they_are():
    for text in ("naïve café", "\u0645\u0631\u062d\u0628\u0627", "日本語", "\U0001f600", "Ωmega"):
        assert inert(text) == text and inert_line(text) == text


# -- lookalike provider names -------------------------------------------------------------------


def websearch(**changes: Any) -> EndpointRecord:
    record = catalog().get(WEBSEARCH_ID)
    assert record is not None
    return record.model_copy(update=changes)


@pytest.mark.parametrize("name", HOMOGLYPH_NAMES)
def test_a_lookalike_provider_name_is_flagged_with_its_code_points(name: str):
    flags = assess(
        websearch(provider_name=name),
        Estimate(amount_usdc=Decimal("0.01"), chain="base", protocol="x402"),
        {},
        first_use_of_provider=False,
    )
    [flag] = [f for f in flags if f.code == "lookalike_name"]
    assert flag.severity == Severity.warn
    first = next(char for char in name if ord(char) > 0x7F and char.isalnum())
    assert f"U+{ord(first):04X} {unicodedata.name(first)}" in flag.reason
    assert unsafe(flag.reason) == []


def test_ascii_names_are_not_flagged_and_long_lists_are_counted():
    plain = Estimate(amount_usdc=Decimal("0.01"), chain="base", protocol="x402")
    for name in ("OpenAI", "paypal-data", "0penAl", "API Data (v2)"):
        flags = assess(websearch(provider_name=name), plain, {}, first_use_of_provider=False)
        assert "lookalike_name" not in [f.code for f in flags]
    [flag] = [
        f
        for f in assess(
            websearch(provider="\u0430\u0431\u0432\u0433\u0434\u0435"),
            plain,
            {},
            first_use_of_provider=False,
        )
        if f.code == "lookalike_name"
    ]
    assert flag.reason.endswith("and 2 more")


# -- end to end: the socket, the sandbox, the approvals screen, the command line -----------------

# What can travel: a lone surrogate is not UTF-8, so no agent and no provider can send one (the
# socket refuses it, HTTP bodies cannot hold it).
SENDABLE = [(name, text) for name, text in HOSTILE if "surrogate" not in name]


class ListingSandbox:
    """The sandbox marketplace over real HTTP, listing providers of our own choosing."""

    def __init__(self, listing: Catalog):
        self.listing = listing
        self.state = SandboxState(registry=[record.id for record in listing.endpoints])
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self.state.base_url is not None
        return self.state.base_url

    def app(self) -> Any:
        """What is served: the sandbox's app over this listing."""
        return create_app(self.state, self.listing)

    def start(self) -> None:
        sock = sandbox_server._bind("127.0.0.1", 0)
        config = uvicorn.Config(self.app(), log_config=None, access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, args=([sock],), daemon=True)
        self._thread.start()
        while not self._server.started:
            time.sleep(0.01)
        self.state.base_url = sandbox_server._base_url(sock)

    def stop(self) -> None:
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(10)


def hostile_listing() -> Catalog:
    """One endpoint per hostile string, named, described and provided by it."""
    base = catalog()
    records = [
        websearch(id=f"ep_hostile_{n:03d}", name=text, provider_name=text, description=text)
        for n, (_, text) in enumerate(SENDABLE)
    ]
    return Catalog(
        endpoints=tuple(records),
        by_id=MappingProxyType({r.id: r for r in records}),
        kinds=MappingProxyType({r.id: base.kind(WEBSEARCH_ID) for r in records}),
        outputs=MappingProxyType({r.id: base.outputs[WEBSEARCH_ID] for r in records}),
        provider_count=len(records),
        _haystacks=MappingProxyType({r.id: r.name.lower() for r in records}),
    )


@pytest.fixture(scope="module")
def hostile_sandbox() -> Iterator[ListingSandbox]:
    server = ListingSandbox(hostile_listing())
    server.start()
    yield server
    server.stop()


def no_action_in(renderable: Any, console: Console) -> None:
    for segment in console.render(renderable, console.options.update_width(120)):
        assert not acts(segment.style), segment


def _refused_as(text: str) -> str:
    try:
        names.canonical(text)
    except ValueError:
        return "invalid_params"
    return "not_authorised"


async def submit_everything(socket_path: Any) -> list[str]:
    """Each hostile string as an agent's name (refused), and as the purpose and inputs of a
    request for the endpoint it names; lone surrogates are refused by the client, which cannot
    send them as UTF-8 (the socket refuses them too: tests/test_socket_fuzz.py)."""
    ids = []
    async with AsyncAgent("hostile-bot", socket_path) as agent:
        for name, text in HOSTILE:
            with pytest.raises(AgentError) as refused:
                await agent.call(
                    "spend.submit",
                    {
                        "agent": text,
                        "kind": "market_call",
                        "endpoint_id": WEBSEARCH_ID,
                        "inputs": {"query": "x"},
                        "purpose": "an agent name",
                    },
                )
            # A string whose NFKC form is a plain name (full-width, mathematical letters) is
            # that name, which is not the one this connection speaks for; any other is no name.
            assert refused.value.reason == _refused_as(text), name
            assert unsafe(refused.value.message) == []
            if (name, text) not in SENDABLE:
                with pytest.raises(AgentError) as refused:
                    await agent.submit(
                        endpoint_id=WEBSEARCH_ID, inputs={"query": text}, purpose=text
                    )
                assert "lone surrogate" in refused.value.message
                continue
            n = SENDABLE.index((name, text))
            ticket = await agent.submit(
                endpoint_id=f"ep_hostile_{n:03d}", inputs={"query": text}, purpose=text[:2000]
            )
            ids.append(ticket["request_id"])
    return ids


async def test_hostile_fields_are_inert_on_the_approvals_screen_and_in_approvals_list(
    paths: Paths,
    clock: FakeClock,
    hostile_sandbox: ListingSandbox,
):
    def make_runtime(*, clock: Any = None, ids: bool = False, **config: Any) -> Runtime:
        counter = itertools.count(1)
        options = {"clock": clock, "new_id": lambda: f"req_{next(counter):04d}"}
        return Runtime(
            paths=paths,
            sandbox=hostile_sandbox,
            config=BrokerConfig(**config),
            broker_options=options,
        )

    app = build_console(make_runtime, clock)
    async with app.run_test(size=(150, 50)) as pilot:
        await started(pilot)
        broker = app.runtime.broker
        ids = await asyncio.wait_for(submit_everything(app.runtime.paths.socket), 120)
        assert len(ids) == len(SENDABLE)

        def inspected() -> bool:
            return all(broker.get(i).state not in (State.received, State.inspecting) for i in ids)

        await until(pilot, inspected, 60)
        stuck = {
            SENDABLE[n][0]: (str(broker.get(i).state), broker.get(i).reason)
            for n, i in enumerate(ids)
            if broker.get(i).state != State.pending
        }
        assert not stuck

        # Walk the whole queue, page after page; every request's detail and row are inert.
        detail = app.screen.query_one(RequestDetail)
        seen: dict[str, str] = {}
        while len(seen) < len(ids):
            await until(pilot, lambda: detail.shown_id is not None and detail.shown_id not in seen)
            request = broker.get(detail.shown_id)
            text = detail.text
            assert unsafe(text, allowed="\n") == [], request.purpose[:60]
            no_action_in(render(request, palette(app)), app.console)
            row = queue(app).get_row(detail.shown_id)
            assert all(
                unsafe(cell.plain) == [] and not any(acts(s.style) for s in cell.spans)
                for cell in row
            )
            seen[detail.shown_id] = text
            await pilot.press("down")
            if len(seen) % 25 == 0:
                assert unsafe(screen_text(app), allowed="\n") == []
        assert unsafe(screen_text(app), allowed="\n") == []

        shown = {request_id: seen[request_id] for request_id in ids}
        for request_id, (name, text) in zip(ids, SENDABLE, strict=True):
            page = shown[request_id]
            if "\x1b" in text:
                assert "<ESC>" in page, name
            if "\u202e" in text:
                assert "<U+202E>" in page, name
            if "[@click=" in text or "[link=" in text:
                assert text[:8] in page, name  # the markup itself, drawn as text
            if text in HOMOGLYPH_NAMES:
                assert "lookalike_name" in page and "U+" in page, name
            if len(text) > 2000:
                assert MARKER in page, name

        # Clicking where a link or an action would be does nothing.
        for selector in ("#detail", f"#{PENDING.name}"):
            await pilot.click(selector)
            await pilot.pause()
        assert app.is_running and app.return_code is None
        assert "\x1b" not in app.title and "pwned" not in app.title

        # The command line lists them inert too, one line each (its own process: the running
        # app holds this one's standard output).
        listed = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "svc_console", "approvals", "list", "--limit", "1000"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert listed.returncode == 0, listed.stderr
        out = listed.stdout
        assert unsafe(out, allowed="\n") == []
        header, *lines = out.splitlines()
        assert header.startswith("ID") and header.endswith("AGENT WROTE")
        assert len(lines) == len(ids)
        assert {line.split()[0] for line in lines} == set(ids)
        assert any("<ESC>" in line for line in lines) and any("<U+202E>" in line for line in lines)
