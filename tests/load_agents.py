"""The load of `test_load.py`: N agents on the approval socket at once, in a process of their own.

    python tests/load_agents.py --socket PATH --agents 200 --seconds 60 [--tokens FILE]

Each agent has its own connection and asks as a real agent does: submit a request (its own
idempotency key), wait on it by id until it is final, then the next, until the time is up; then it
waits for the last one; with `--tokens` (a JSON object of name: token) each proves its name. The
socket is spoken by hand (not through `svc_console.agent`) so that
every reply can be counted: each call must be answered exactly once.

Prints `ready` once every agent is connected, starts on a line on stdin, and prints one JSON line
at the end: every ticket with the final state its agent saw, the calls answered more than once or
never, the errors, and the time the submitting took.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

FINAL = frozenset({"rejected", "denied", "succeeded", "failed", "expired", "cancelled", "unknown"})
WAIT_S = 30.0


class Connection:
    def __init__(self, name: str, token: str | None = None):
        self.name, self.token = name, token
        self.ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.answers: Counter[int] = Counter()

    async def open(self, path: str) -> None:
        self.reader, self.writer = await asyncio.open_unix_connection(path, limit=1 << 24)
        self.listening = asyncio.create_task(self._listen())
        hello = {"agent": self.name, **({"token": self.token} if self.token else {})}
        await self.call("console.hello", hello)

    async def _listen(self) -> None:
        while line := await self.reader.readline():
            reply = json.loads(line)
            self.answers[reply.get("id")] += 1
            future = self.waiting.pop(reply.get("id"), None)
            if future is not None and not future.done():
                future.set_result(reply)
        for future in self.waiting.values():
            if not future.done():
                future.set_exception(ConnectionError("the broker closed the connection"))

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        call_id = next(self.ids)
        future = asyncio.get_running_loop().create_future()
        self.waiting[call_id] = future
        message = {"jsonrpc": "2.0", "id": call_id, "method": method, "params": params}
        self.writer.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        await self.writer.drain()
        reply = await future
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error'].get('message')}")
        return reply["result"]

    def close(self) -> None:
        self.writer.close()
        self.listening.cancel()


async def agent(
    connection: Connection, deadline: float, tickets: dict[str, str], errors: list[str]
) -> None:
    for n in itertools.count():
        if time.monotonic() >= deadline:
            return
        try:
            ticket = await connection.call(
                "spend.submit",
                {
                    "agent": connection.name,
                    "kind": "market_call",
                    "endpoint_id": "ep_websearch_basic",
                    "inputs": {"query": f"{connection.name} asks {n}"},
                    "purpose": "load test",
                    "idempotency_key": f"{connection.name}-{n}",
                },
            )
            request_id = ticket["request_id"]
            tickets[request_id] = ticket["state"]
            state = ticket["state"]
            while state not in FINAL:
                waited = await connection.call(
                    "spend.wait", {"request_id": request_id, "timeout_s": WAIT_S}
                )
                if waited["id"] != request_id:
                    errors.append(f"waited on {request_id}, told of {waited['id']}")
                    break
                state = waited["state"]
            tickets[request_id] = state
        except (RuntimeError, ConnectionError, OSError) as exc:
            errors.append(f"{connection.name}: {exc}")
            return


async def main(args: argparse.Namespace) -> None:
    tokens = json.loads(Path(args.tokens).read_text()) if args.tokens else {}
    names = [f"load-{n:03d}" for n in range(args.agents)]
    connections = [Connection(name, tokens.get(name)) for name in names]
    await asyncio.gather(*(c.open(args.socket) for c in connections))
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    tickets: dict[str, str] = {}
    errors: list[str] = []
    started = time.monotonic()
    deadline = started + args.seconds
    await asyncio.gather(*(agent(c, deadline, tickets, errors) for c in connections))
    took = time.monotonic() - started
    twice = sum(1 for c in connections for n in c.answers.values() if n > 1)
    unanswered = sum(len(c.waiting) for c in connections)
    for connection in connections:
        connection.close()
    report = {
        "tickets": tickets,
        "answered_twice": twice,
        "unanswered": unanswered,
        "errors": errors[:20],
        "error_count": len(errors),
        "seconds": took,
    }
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", required=True)
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--tokens", help="a JSON file of the agents' tokens, by name")
    asyncio.run(main(parser.parse_args()))
