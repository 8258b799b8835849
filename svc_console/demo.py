"""Simulated agents for `svc-console demo`: a few programs that ask to spend, every few seconds,
and the demo's SKILLS.md policy.

They use only the public socket protocol through `svc_console.agent`, exactly as a real agent
would, so this file doubles as the example docs/agents.md shows agent authors. One more speaks MCP
through `svc-console mcp`, as an agent in an MCP host does. One, `watch-bot`, is stuck in a loop:
it asks for the same search again and again, so the policy's brakes have something to stop.

Within the first two minutes a newcomer meets each path worth seeing: requests the policy
approves (within a budget), denies (an e-mail address in a scraped URL) or leaves to the operator;
a repeated call stopped by the brakes; a 1.50 USDC video clip above the typed-confirmation
threshold, which meets a wallet too poor to pay it (`DEMO_BALANCE`): the funding checkout, its
QR code and the single retry; a paid call the service then bills at three times its approval
(an `overbill` fault of the sandbox's), flagged on the usage screen; and usage that fills by itself.

`TRAFFIC` holds them all while the operator reads (the approvals screen's pause key in the demo):
each waits there before its next submission, and none is lost or hurried after.

Each is a registered agent with a token of its own (`enrol`), as agents should be: the tour shows
verified identities, and the policy's per-agent budgets and brakes count each apart (agents that
prove no name all count as one, `(unverified)`).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from svc_console.agent import AgentError, AsyncAgent, NotConnected
from svc_console.core.private_files import ensure_private_dir, read_private, write_private

log = logging.getLogger(__name__)


class Traffic:
    """Whether the simulated agents may submit now. Waiters are futures of the running loop,
    made per wait, so one `Traffic` serves whichever loop runs the agents."""

    def __init__(self) -> None:
        self.paused = False
        self._waiters: set[asyncio.Future[None]] = set()

    @property
    def held(self) -> int:
        """How many agents wait at the gate now."""
        return len(self._waiters)

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        for waiter in list(self._waiters):
            if not waiter.done():
                waiter.set_result(None)

    def toggle(self) -> bool:
        """Pause when running, resume when paused; True when now paused."""
        if self.paused:
            self.resume()
        else:
            self.pause()
        return self.paused

    async def go(self) -> None:
        """Return at once while running, else when resumed."""
        while self.paused:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.add(waiter)
            try:
                await waiter
            finally:
                self._waiters.discard(waiter)


TRAFFIC = Traffic()


@dataclass(frozen=True)
class Persona:
    name: str
    endpoint_id: str
    make_inputs: Callable[[random.Random], dict[str, Any]]
    purposes: tuple[str, ...]
    max_usdc: str | None = None
    interval_s: tuple[float, float] = (4.0, 9.0)


LOOPING_AGENT = "watch-bot"
# The sandbox wallet holds this much in the demo: enough for the small calls, not for the video
# clip (1.50 USDC), so approving it opens the funding checkout.
DEMO_BALANCE = Decimal("1.20")
# What the demo's funding page offers to add: the daily budget of its four agents (3 USDC each)
# and more, so after the checkout no approval of a ten-minute tour waits for funds again.
DEMO_TOP_UP = Decimal(15)
PERSONAS = (
    Persona(
        "research-bot",
        "ep_websearch_basic",
        lambda rng: {
            "query": rng.choice(
                [
                    "utility-scale solar prices 2026",
                    "EU battery regulation timeline",
                    "heat pump adoption by country",
                    "offshore wind auction results",
                ]
            ),
            "max_results": rng.choice([5, 10, 20]),
        },
        ("background for the weekly energy note", "check a claim before publishing"),
    ),
    Persona(
        "scraper-7",
        "ep_scrape_page",
        lambda rng: {
            "url": rng.choice(
                [
                    "https://example.com/pricing",
                    "https://example.org/team?contact=jane.doe@example.org",
                    "https://example.net/changelog",
                ]
            )
        },
        ("track competitor pricing changes", "refresh the vendor comparison table"),
        max_usdc="0.08",
    ),
    Persona(
        "quant-feed",
        "ep_fx_rates",
        lambda rng: {"symbol": rng.choice(["EURUSD", "USDJPY", "GBPUSD"])},
        ("mark the FX book to market", "hedge check before the close"),
    ),
    # Above the typed-confirmation threshold (1 USDC), and above what the demo's wallet holds.
    Persona(
        "video-bot",
        "ep_frameify_generate",
        lambda rng: {
            "prompt": rng.choice(
                ["a lighthouse at dawn, slow pan", "a heat pump explained in 10 seconds"]
            ),
            "duration_s": rng.choice([5, 10]),
        },
        ("the teaser clip for the weekly note",),
        interval_s=(40.0, 70.0),
    ),
    # A runaway loop: the very same call, on a steady beat, whatever came back last time.
    Persona(
        LOOPING_AGENT,
        "ep_websearch_basic",
        lambda rng: {"query": "grid outage latest news", "max_results": 5},
        ("see whether the outage story has moved",),
        interval_s=(3.0, 3.5),
    ),
)

# Everything waits for the operator, as with no policy at all, but for the looping agent's
# search: it goes through on its own, until the brakes see the same call a fourth time.
POLICY = """\
# SKILLS.md: the demo

Most requests wait for the operator. Two kinds of small web search go through on their own:
research-bot's, within a daily budget of its own, and watch-bot's. watch-bot is stuck in a loop,
asking for the same search every few seconds; after three identical calls in ten minutes, the next
one waits for the operator, flagged as a repeated call.

The demo's agents are registered, each with its token, so the rules below that name them apply to
them alone. An agent that proves no name matches no rule written for a named agent, and every such
agent counts as one, `(unverified)`, against the per-agent budget.

```policy
auto_approve:
  - name: research-bot's small searches
    when:
      agents: [research-bot]
      endpoints: [ep_websearch_basic]
      max_usdc: 0.02
    budgets:
      - window: day
        max_usdc: 0.05
  - name: watch-bot's searches
    when:
      agents: [watch-bot]
      endpoints: [ep_websearch_basic]
      max_usdc: 0.01
budgets:
  - name: daily per agent
    per: agent
    window: day
    warn_usdc: 1
    max_usdc: 3
```

## What never leaves

No e-mail address goes out in a request: a scraper asking for a page whose address holds one is
denied, and the verdict says which input held it.

```policy
never_send: [emails]
```

## Brakes

Five requests in a row denied (by the operator or by a rule) or failed upstream pause an agent's
rules: its requests all wait for the operator until the operator resumes it (`R` on the
approvals screen, or `svc-console agents resume NAME`).

```policy
repeats:
  max_same: 3
  window: 10m
  then: ask
circuit_breaker:
  failures: 5
  window: 15m
  then: pause_agent
```
"""


async def prepare(base_url: str, api_key: str) -> None:
    """The demo's sandbox, over its admin routes (it is served by another process): a wallet too
    poor for the video clip (see DEMO_BALANCE) whose checkout offers a tour's worth
    (DEMO_TOP_UP), and one paid call billed above its approval, for
    the usage screen's reconciliation to flag."""
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=60.0) as sandbox:
        funds = {"balanceUsdc": str(DEMO_BALANCE), "topUpUsdc": str(DEMO_TOP_UP)}
        answer = await sandbox.put("/sandbox/balance", json=funds)
        answer.raise_for_status()
        overbill = {"kind": "overbill", "factor": 3, "count": 1}
        answer = await sandbox.post("/sandbox/faults", json=overbill)
        answer.raise_for_status()


def write_policy(folder: Path) -> Path:
    """The demo's SKILLS.md, written afresh into `folder`: each demo starts from it, whatever
    the last one's operator edited on the policies screen."""
    path = ensure_private_dir(folder) / "demo-SKILLS.md"
    path.write_text(POLICY)
    return path


TOKENS_FILE = "demo-agents.json"


def enrol(registry_path: Path, folder: Path, agents: Iterable[str]) -> dict[str, str]:
    """The token of each of `agents`, registered the first time a demo runs and kept (owner-only)
    in `folder` for the demos after. A name the registry holds otherwise (an agent of yours
    named so, or one you revoked) is left as it is: that agent sits the demo out."""
    import json

    from svc_console.config.agent_registry import AgentRegistry, RegistryError

    path = folder / TOKENS_FILE
    try:
        kept: dict[str, str] = json.loads(read_private(path))
    except FileNotFoundError:
        kept = {}
    except ValueError:
        kept = {}  # unreadable: the agents are enrolled again where they can be
    registry = AgentRegistry(registry_path)
    tokens = {}
    for name in agents:
        token = kept.get(name)
        if token is not None and registry.authenticate(name, token) is not None:
            tokens[name] = token
            continue
        if registry.get(name) is not None:
            log.warning("agent %s is registered, not by the demo: it sits the demo out", name)
            continue
        try:
            tokens[name] = registry.add(name)
        except RegistryError as exc:
            log.warning("agent %s sits the demo out: %s", name, exc)
    if tokens != kept:
        write_private(path, json.dumps(tokens, indent=2))
    return tokens


async def run_persona(
    persona: Persona,
    socket_path: Path,
    *,
    interval_s: tuple[float, float] | None = None,
    max_open: int = 4,
    seed: int | None = None,
    traffic: Traffic = TRAFFIC,
    token: str | None = None,
) -> None:
    """Submit a request now and then (every `interval_s`, by default the persona's); wait for
    each outcome in the background, as agents do. `token`: the agent's, to prove its name."""
    rng = random.Random(seed)
    interval_s = interval_s or persona.interval_s
    open_requests: set[asyncio.Task[None]] = set()
    async with AsyncAgent(persona.name, socket_path, token=token) as agent:

        async def follow(request_id: str) -> None:
            try:
                request = await agent.wait_for_outcome(request_id)
            except NotConnected:
                return  # the console stopped, and the demo's agents with it
            log.info("%s: %s ended %s", persona.name, request_id, request["state"])

        await asyncio.sleep(rng.uniform(0.5, 2.0))
        while True:
            await traffic.go()
            if len(open_requests) < max_open:
                try:
                    ticket = await agent.submit(
                        endpoint_id=persona.endpoint_id,
                        inputs=persona.make_inputs(rng),
                        purpose=rng.choice(persona.purposes),
                        max_usdc=persona.max_usdc,
                    )
                except AgentError as exc:
                    log.warning("%s: submit refused: %s", persona.name, exc.message)
                else:
                    task = asyncio.create_task(follow(ticket["request_id"]))
                    open_requests.add(task)
                    task.add_done_callback(open_requests.discard)
            await asyncio.sleep(rng.uniform(*interval_s))


MCP_AGENT = "mcp-analyst"


async def run_mcp_agent(
    socket_path: Path,
    *,
    interval_s: tuple[float, float] = (8.0, 15.0),
    traffic: Traffic = TRAFFIC,
    token: str | None = None,
) -> None:
    """An agent of an MCP host: it launches the bridge (with the agent's `token`, as a host
    would), looks the market up with a free tool, then calls a paid API now and then; each call
    waits for the operator."""
    import os
    import sys

    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {"SVC_CONSOLE_SOCKET": str(socket_path)}
    if token is not None:
        env["SVC_AGENT_TOKEN"] = token
    if "SVC_CONSOLE_HOME" in os.environ:
        env["SVC_CONSOLE_HOME"] = os.environ["SVC_CONSOLE_HOME"]
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "svc_console", "mcp", "--agent", MCP_AGENT], env=env
    )
    rng = random.Random()
    with open(os.devnull, "w") as quiet:  # the bridge's stderr must not draw over the screen
        async with stdio_client(params, errlog=quiet) as streams, ClientSession(*streams) as mcp:
            await mcp.initialize()
            apis = await mcp.call_tool("list_market_apis", {"domain_type": "A7", "limit": 5})
            log.info(
                "%s: %d search APIs listed",
                MCP_AGENT,
                len((apis.structured_content or {}).get("apis", [])),
            )
            while True:
                await asyncio.sleep(rng.uniform(*interval_s))
                await traffic.go()
                result = await mcp.call_tool(
                    "call_market_api",
                    {
                        "endpoint_id": "ep_websearch_basic",
                        "inputs": {"query": rng.choice(["grid storage costs", "EV sales Q3"])},
                        "purpose": "draft the analyst note (via MCP)",
                    },
                )
                log.info("%s: call ended, error=%s", MCP_AGENT, result.is_error)


async def run_agents(socket_path: Path, traffic: Traffic = TRAFFIC, paths: Any = None) -> None:
    """Every simulated agent, each registered with its token (`enrol`); `paths`: the home's
    (`config.paths.Paths`), by default the environment's."""
    if paths is None:
        from svc_console.config.paths import resolve_paths

        paths = resolve_paths()
    tokens = enrol(paths.agent_registry, paths.sandbox, [*(p.name for p in PERSONAS), MCP_AGENT])
    agents = [
        run_persona(p, socket_path, traffic=traffic, token=tokens[p.name])
        for p in PERSONAS
        if p.name in tokens
    ]
    if MCP_AGENT in tokens:
        agents.append(run_mcp_agent(socket_path, traffic=traffic, token=tokens[MCP_AGENT]))
    await asyncio.gather(*agents)
