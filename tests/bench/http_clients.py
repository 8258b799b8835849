"""HTTP clients for the dry run compared: the client process's CPU per call, and calls a second.

    python http_clients.py --credentials FILE [--calls 2000] [--concurrency 32]

Each client makes the broker's dry-run call (the same POST, the same JSON body, parsed as JSON)
against the sandbox farm, `concurrency` at a time on one pooled client, after a warm-up. The
sandbox runs in other processes, so this process's CPU time is the client's own: what a
decision costs the broker in HTTP. Prints one JSON line per client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import quote

WARMUP = 200


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


async def _measure(call: Callable[[int], Awaitable[object]], calls: int, concurrency: int) -> dict:
    await asyncio.gather(*(call(n) for n in range(WARMUP)))
    next_call = iter(range(calls))  # shared: each worker takes the next number

    async def worker() -> None:
        for n in next_call:
            await call(n)

    cpu, wall = _cpu(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu, wall = _cpu() - cpu, time.perf_counter() - wall
    return {"cpu_ms_per_call": round(cpu * 1000 / calls, 3), "calls_per_s": round(calls / wall)}


def _body(n: int) -> dict:
    return {"endpointId": "ep_websearch_basic", "inputs": {"query": f"q {n}"}, "dryRun": True}


async def with_httpx(base: str, path: str, token: str, calls: int, concurrency: int) -> dict:
    import httpx

    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=100)
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits) as client:

        async def call(n: int) -> object:
            response = await client.post(path, json=_body(n))
            response.raise_for_status()
            return response.json()

        return await _measure(call, calls, concurrency)


async def with_aiohttp(base: str, path: str, token: str, calls: int, concurrency: int) -> dict:
    import aiohttp

    headers = {"Authorization": f"Bearer {token}"}
    connector = aiohttp.TCPConnector(limit=100)
    async with aiohttp.ClientSession(base, headers=headers, connector=connector) as session:

        async def call(n: int) -> object:
            async with session.post(path, json=_body(n)) as response:
                response.raise_for_status()
                return await response.json()

        return await _measure(call, calls, concurrency)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--credentials", required=True, type=Path)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--client", choices=("httpx", "aiohttp"), action="append")
    args = parser.parse_args()
    found = json.loads(args.credentials.read_text())
    path = f"/api/wallets/{quote(found['username'], safe='')}/actions/x402/fetch"
    clients = {"httpx": with_httpx, "aiohttp": with_aiohttp}
    for name in args.client or list(clients):
        measure = clients[name]
        figures = asyncio.run(
            measure(found["base_url"], path, found["api_token"], args.calls, args.concurrency)
        )
        print(json.dumps({"client": name, **figures}), flush=True)


if __name__ == "__main__":
    main()
