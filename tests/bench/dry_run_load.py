"""The limit: how many dry runs a second the sandbox alone answers, with no broker in the way.

    python dry_run_load.py --credentials FILE [--connections 64] [--seconds 5]

A load generator in a process of its own, as lean as a client can be in Python: raw HTTP/1.1 on
asyncio streams, one request prepared once and written again on each keep-alive connection, the
answer read by its Content-Length and only its status checked. Every connection sends its next
dry run as soon as the last is answered, for the given seconds after a short warm-up, and the
answered ones are counted. Prints one JSON line: {"rate": answers a second, "answered", "failed",
"seconds", "cpu_s": this process's CPU time over the measure}. Whatever the broker does, a
decision needs one of these answers: this rate bounds the broker's throughput on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from urllib.parse import quote, urlsplit

WARMUP_S = 0.5
ENDPOINT = "ep_websearch_basic"


def _request(credentials: dict, host: str) -> bytes:
    body = json.dumps(
        {
            "endpointId": ENDPOINT,
            "inputs": {"query": "the limit"},
            "dryRun": True,
            "approved": False,
        }
    ).encode()
    path = f"/api/wallets/{quote(credentials['username'], safe='')}/actions/x402/fetch"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\n"
        f"Authorization: Bearer {credentials['api_token']}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _one_connection(
    host: str, port: int, request: bytes, until: list[float], counts: dict[str, int]
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.monotonic() < until[0]:
            writer.write(request)
            status = await reader.readline()
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            counted = time.monotonic() >= until[1]  # after the warm-up
            if counted:
                counts["answered" if b" 200 " in status else "failed"] += 1
    finally:
        writer.close()


async def measure(credentials: dict, connections: int, seconds: float) -> dict[str, float]:
    url = urlsplit(credentials["wallet_api_base"] or credentials["base_url"])
    host, port = url.hostname or "127.0.0.1", url.port or 80
    request = _request(credentials, f"{host}:{port}")
    start = time.monotonic()
    # [stop, end of warm-up]: shared by every connection.
    window = [start + WARMUP_S + seconds, start + WARMUP_S]
    counts = {"answered": 0, "failed": 0}
    cpu = [0.0]

    async def clock_cpu() -> None:
        await asyncio.sleep(WARMUP_S)
        cpu[0] = _cpu()

    await asyncio.gather(
        clock_cpu(),
        *(_one_connection(host, port, request, window, counts) for _ in range(connections)),
    )
    elapsed = time.monotonic() - window[1]
    return {
        "rate": counts["answered"] / elapsed,
        "answered": counts["answered"],
        "failed": counts["failed"],
        "seconds": round(elapsed, 3),
        "cpu_s": round(_cpu() - cpu[0], 3),
    }


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--credentials", required=True, type=Path)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    credentials = json.loads(args.credentials.read_text())
    result = asyncio.run(measure(credentials, args.connections, args.seconds))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
