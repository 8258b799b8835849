"""Simulated agents for `svc-console demo`: a few programs that ask to spend, every few seconds.

They use only the public socket protocol through `svc_console.agent`, exactly as a real agent
would, so this file doubles as the example README shows agent authors.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from svc_console.agent import AgentError, AsyncAgent

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Persona:
    name: str
    endpoint_id: str
    make_inputs: Callable[[random.Random], dict[str, Any]]
    purposes: tuple[str, ...]
    max_usdc: str | None = None


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
)


async def run_persona(
    persona: Persona,
    socket_path: Path,
    *,
    interval_s: tuple[float, float] = (4.0, 9.0),
    max_open: int = 4,
    seed: int | None = None,
) -> None:
    """Submit a request now and then; wait for each outcome in the background, as agents do."""
    rng = random.Random(seed)
    open_requests: set[asyncio.Task[None]] = set()
    async with AsyncAgent(persona.name, socket_path) as agent:

        async def follow(request_id: str) -> None:
            request = await agent.wait_for_outcome(request_id)
            log.info("%s: %s ended %s", persona.name, request_id, request["state"])

        await asyncio.sleep(rng.uniform(0.5, 2.0))
        while True:
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


async def run_agents(socket_path: Path) -> None:
    await asyncio.gather(*(run_persona(p, socket_path) for p in PERSONAS))
