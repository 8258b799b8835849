"""Helpers the tests share (fixtures live in conftest.py)."""

import ast
import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any

from svc_console.config import logs
from svc_console.core.models import SpendRequest
from svc_console.core.states import State


class FakeClock:
    """A clock tests move by hand, so ages, lifetimes and snapshots are exact."""

    def __init__(self, start: float = 1_795_000_000.0):
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def eventually(predicate: Callable[[], Any], timeout: float = 15.0) -> Any:
    """Poll until `predicate()` is truthy: the broker works in background tasks."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


def process_gone(pid: int) -> bool:
    """No such process, or only its zombie left for whoever reaps it."""
    from pathlib import Path

    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


def runtime_ledger(paths: Any, **options: Any) -> Any:
    """The ledger the test's runtimes open (the sandbox's file, or the test's PostgreSQL
    database with SVC_TESTS_LEDGER=postgresql), opened for the test to seed or read."""
    from postgres import runtime_ledger_of

    from svc_console.ledger import Ledger

    return Ledger(paths.ledger(sandbox=True), url=runtime_ledger_of(paths.home), **options)


def stored_text(ledger: Any) -> str:
    """Every row of every table of an open ledger as text, on either engine: what a test
    searches for a secret that must never be stored."""
    db = ledger.db
    return "\n".join(
        repr(row)
        for table in db.table_names()
        for row in db.execute(f'SELECT * FROM "{table}"').fetchall()
    )


def seed_in_flight(
    paths: Any, request_id: str, *, endpoint_id: str, ceiling: str, agent: str = "research-bot"
) -> None:
    """A request approved and in flight in the sandbox ledger, as a console killed mid-call
    leaves it: the next start-up must turn it `unknown` and report it."""
    from decimal import Decimal

    from svc_console.core.models import Decision, SpendRequest
    from svc_console.core.private_files import ensure_private_dir
    from svc_console.core.states import State

    ensure_private_dir(paths.home)
    ledger = runtime_ledger(paths)
    try:
        request = SpendRequest(
            id=request_id,
            agent=agent,
            kind="market_call",
            endpoint_id=endpoint_id,
            inputs={"query": "heat pumps"},
            purpose="market sizing",
            state=State.received,
            created_at=1.0,
            updated_at=1.0,
        )
        ledger.insert_request(request)
        ledger.transition(request_id, State.inspecting, at=1.0)
        ledger.transition(request_id, State.pending, at=1.0, expires_at=10**10)
        decision = Decision(approved=True, by="operator", at=2.0, ceiling_usdc=Decimal(ceiling))
        decision_id = ledger.decide(request_id, decision, State.approved)
        ledger.start_execution(request_id, decision_id, 1, f"{request_id}-1", at=3.0)
    finally:
        ledger.close()


SEARCH = {"endpoint_id": "ep_websearch_basic", "inputs": {"query": "solar prices"}}


async def submit(runtime, agent_name="bot", token=None, **overrides):
    """Submit a web search as the named agent over the runtime's socket, as an agent would (with
    `token`: one that proves its name)."""
    from svc_console.agent import AsyncAgent

    params = {**SEARCH, "purpose": "background research", **overrides}
    async with AsyncAgent(agent_name, runtime.paths.socket, token=token) as agent:
        return await agent.submit(**params)


_TOKENS: dict[tuple[str, str], str] = {}


def agent_token(paths, name: str) -> str:
    """The token of agent `name`, registered in the home's registry the first time it is asked
    for: an agent that proves its name, as per-agent limits count only such (an unverified one
    counts as `(unverified)`)."""
    from svc_console.config.agent_registry import AgentRegistry

    key = (str(paths.agent_registry), name)
    if key not in _TOKENS:
        _TOKENS[key] = AgentRegistry(paths.agent_registry).add(name)
    return _TOKENS[key]


def operator(runtime):
    """A connection to the runtime's operator socket, as the CLI makes one."""
    from svc_console.agent import AsyncAgent

    return AsyncAgent(None, runtime.paths.operator_socket, token="", client="svc-console")


async def awaiting_funds(runtime, sandbox, *, balance: str = "0", agent: str = "research-bot"):
    """A web search approved while the sandbox wallet holds `balance` (less than its 0.01 USDC):
    it ends `awaiting_funds`. Returns its id."""
    from svc_console.broker.params import ApproveParams, SubmitParams
    from svc_console.core.states import State

    broker = runtime.broker
    sandbox.state.set_balance(balance)
    request = await broker.submit(
        SubmitParams(agent=agent, kind="market_call", purpose="background research", **SEARCH)
    )
    await eventually(lambda: broker.get(request.id).state == State.pending)
    await broker.approve(ApproveParams(request_id=request.id))
    await eventually(lambda: broker.get(request.id).state == State.awaiting_funds)
    # The state is read on the ledger's own connection as soon as it is written; its event is
    # linked into the chain when the group transaction commits, which this waits for.
    await runtime.ledger.committed()
    return request.id


async def fund_like_a_browser(checkout_url: str):
    """Open the checkout page and submit its form as it stands: what an operator's browser does.
    Returns the amount credited (a Decimal)."""
    import re
    from decimal import Decimal

    import httpx

    async with httpx.AsyncClient() as browser:
        page = await browser.get(checkout_url)
        assert page.status_code == 200
        token = re.search(r'name="token" value="([^"]+)"', page.text)
        amount = re.search(r'name="amount" value="([^"]+)"', page.text)
        assert token and amount
        funded = await browser.post(
            checkout_url, data={"token": token.group(1), "amount": amount.group(1)}
        )
        assert funded.status_code == 200, funded.text
    return Decimal(amount.group(1))


def plain_request(request_id: str = "req_1") -> SpendRequest:
    """A request as an agent submits it, with nothing decided yet: what ledger tests write."""
    return SpendRequest(
        id=request_id, agent="bot", kind="market_call", endpoint_id="ep", inputs={"q": 1},
        purpose="p", state=State.received, created_at=1.0, updated_at=1.0,
        max_usdc=Decimal("0.5"),
    )  # fmt: skip


def rejected_requests(path: Any, first: int = 0, count: int = 6, url: str | None = None) -> None:
    """Requests written to the ledger at `path` as the broker writes them: each received,
    inspected and rejected (three audit events each)."""
    from svc_console.ledger import Ledger

    ledger = Ledger(path, url=url)
    try:
        for n in range(first, first + count):
            request_id = f"req_{n:03d}"
            ledger.insert_request(plain_request(request_id))
            ledger.transition(request_id, State.inspecting, at=2.0 + n)
            ledger.transition(request_id, State.rejected, at=3.0 + n, reason=f"no {n}")
    finally:
        ledger.close()


async def proxy_execute(
    wallet: Any,
    protocol: str,
    endpoint_id: str,
    inputs: dict[str, Any],
    *,
    ceiling_usdc: Decimal,
    chain: str,
    idempotency_key: str,
) -> Any:
    """A paying call to the wallet proxy as any client of it would send one (the console's own
    are the signer's, within a mandate): for tests of the proxy itself."""
    from svc_console.market.signer import ApprovedBody

    body = {
        "endpointId": endpoint_id,
        "inputs": inputs,
        "dryRun": False,
        "approved": True,
        "maxUsdc": str(ceiling_usdc),
        "chain": chain,
        "idempotencyKey": idempotency_key,
    }
    return await wallet.pay(ApprovedBody(protocol, body, idempotency_key))


@contextlib.asynccontextmanager
async def logged_runtime(
    make_runtime: Callable[..., Any],
    paths: Any,
    level: int = logging.DEBUG,
    payer_key: str | None = None,
) -> AsyncIterator[Any]:
    """A started broker with svc-console's own log file under the home, at `level` (and the
    wallet key `payer_key`, handed to its signer at the start); the file's handler is taken off
    the root logger afterwards."""
    log_file = logs.configure(paths.logs, level=level)
    rt = make_runtime()
    rt.payer_key = payer_key
    await rt.start()
    try:
        yield rt
    finally:
        await rt.stop()
        root = logging.getLogger()
        for handler in list(root.handlers):
            if getattr(handler, "baseFilename", None) == str(log_file):
                root.removeHandler(handler)
                handler.close()


def parse_sources(paths: Iterable[Path]) -> list[tuple[Path, ast.Module]]:
    """Each module's syntax tree, parsed with the garbage collector paused. CPython 3.11 keeps
    one count of depth for every syntax tree being built: a collection during a parse can
    finalise an earlier test's task whose exception was never read, whose logged traceback
    parses a line of code for its carets, and the outer parse then fails ("AST constructor
    recursion depth mismatch"). Collected first, so such garbage is written out before."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return [(path, ast.parse(path.read_text(encoding="utf-8"))) for path in paths]
    finally:
        if was_enabled:
            gc.enable()


def committed_rows(ledger: Any, sql: str) -> list[tuple]:
    """What another connection to `ledger` sees: only what was committed."""
    from svc_console.ledger.engine import open_database

    other = open_database(ledger.path, ledger.url)
    try:
        return [tuple(row) for row in other.execute(sql).fetchall()]
    finally:
        other.close()
