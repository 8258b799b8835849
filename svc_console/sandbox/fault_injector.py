"""The ASGI middleware that makes the sandbox misbehave as the armed faults say (`sandbox.faults`
documents the kinds): it delays, delists and reprices before the route runs, answers an injected
5xx instead of it, or cuts or garbles the answer it gave.

Outermost around the app, so every route (but the switch's own) can be made to fail.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
from decimal import Decimal
from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from svc_console.sandbox.faults import (
    ADMIN_PREFIX,
    DEFAULT_FACTOR,
    DEFAULT_STATUS,
    ROUTE_GROUPS,
    Fault,
    handling,
    repriced,
)
from svc_console.sandbox.web import MAX_BODY_BYTES, error_response

if TYPE_CHECKING:
    from svc_console.sandbox.catalog import Catalog
    from svc_console.sandbox.state import SandboxState

_STATUS_CODES = {
    500: "INTERNAL",
    502: "BAD_GATEWAY",
    503: "SERVICE_UNAVAILABLE",
    504: "GATEWAY_TIMEOUT",
}


async def _buffered(receive: Receive) -> tuple[bytes | None, Receive]:
    """Reads the request body (when it fits) and returns a `receive` that replays it."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None, receive
        chunk = message.get("body", b"")
        size += len(chunk)
        chunks.append(chunk)
        if size > MAX_BODY_BYTES:
            return None, receive
        if not message.get("more_body", False):
            break
    body, replayed = b"".join(chunks), False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


def _is_dry_run(body: bytes | None) -> bool:
    try:
        return json.loads(body or b"{}").get("dryRun") is True
    except (ValueError, AttributeError):
        return False


def _with_length(headers: list[tuple[bytes, bytes]], length: int) -> list[tuple[bytes, bytes]]:
    kept = [(k, v) for k, v in headers if k.lower() != b"content-length"]
    return [*kept, (b"content-length", str(length).encode())]


class FaultInjector:
    """ASGI middleware that applies `state.faults` to each request."""

    def __init__(self, app: ASGIApp, state: SandboxState, listing: Catalog):
        self.app, self.state, self.catalog = app, state, listing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path.startswith(ADMIN_PREFIX):
            await self.app(scope, receive, send)
            return
        with handling(path):  # an overbill fires later, at the charge, and matches on the path
            await self._faulted(path, scope, receive, send)

    async def _faulted(self, path: str, scope: Scope, receive: Receive, send: Send) -> None:
        dry_run = False
        # Whether a proxy call is a dry run decides which faults it meets (`Fault.meets`).
        if self.state.faults.armed() and fnmatch.fnmatchcase(path, ROUTE_GROUPS["proxy"][0]):
            body, receive = await _buffered(receive)
            dry_run = _is_dry_run(body)
        fired = self.state.faults.fire(path, dry_run=dry_run)
        if not fired:
            await self.app(scope, receive, send)
            return
        delay = sum(f.delay_ms or 0 for f in fired if f.kind == "latency")
        if delay:
            await asyncio.sleep(delay / 1000)
        for fault in (f for f in fired if f.kind == "delist"):
            receive = await self._delist(fault, scope, receive)
        error = next((f for f in fired if f.kind == "error"), None)
        if error is not None:
            status = error.status or DEFAULT_STATUS
            response = error_response(
                status,
                _STATUS_CODES.get(status, f"HTTP_{status}"),
                f"the sandbox injected this failure (fault {error.id}); nothing was executed",
                fault=error.id,
            )
            await response(scope, receive, send)
            return
        factor = Decimal(1)
        for fault in (f for f in fired if f.kind == "reprice"):
            factor *= fault.factor or DEFAULT_FACTOR
        moved = next((f.chain for f in fired if f.kind == "reprice" and f.chain), None)
        with repriced(factor, moved):
            mangle = next((f for f in fired if f.kind in ("drop", "malformed")), None)
            if mangle is None:
                await self.app(scope, receive, send)
            else:
                await self._mangled(mangle.kind, scope, receive, send)

    async def _delist(self, fault: Fault, scope: Scope, receive: Receive) -> Receive:
        if fault.endpoint_id is not None:
            targets = [fault.endpoint_id]
        elif fault.provider is not None:
            targets = self._provider_endpoints(fault.provider)
        else:
            targets, receive = await self._named_by_request(scope, receive)
        for endpoint_id in targets:
            if self.state.in_registry(endpoint_id):
                self.state.remove_from_registry(endpoint_id)
                self.state.faults.note_delisted([endpoint_id])
        return receive

    def _provider_endpoints(self, provider: str) -> list[str]:
        wanted = {provider, f"prov_{provider}"}
        return [r.id for r in self.catalog.endpoints if r.provider in wanted]

    async def _named_by_request(self, scope: Scope, receive: Receive) -> tuple[list[str], Receive]:
        parts = scope["path"].split("/")
        if scope["path"].startswith("/api/market/") and len(parts) > 3 and parts[3]:
            return self._provider_endpoints(parts[3]), receive
        if fnmatch.fnmatchcase(scope["path"], ROUTE_GROUPS["proxy"][0]):
            body, receive = await _buffered(receive)
            try:
                endpoint_id = json.loads(body or b"{}").get("endpointId")
            except (ValueError, AttributeError):
                endpoint_id = None
            return ([endpoint_id] if isinstance(endpoint_id, str) else []), receive
        return [], receive

    async def _mangled(self, kind: str, scope: Scope, receive: Receive, send: Send) -> None:
        start: Message | None = None
        parts: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))

        await self.app(scope, receive, capture)
        if start is None:
            return
        body = b"".join(parts)
        headers = list(start.get("headers", []))
        if kind == "drop":
            # Promise the whole body, send half, and return: the server closes the connection on
            # an answer left incomplete, as a crashed proxy or a cut network would.
            await send({**start, "headers": _with_length(headers, max(len(body), 1))})
            await send(
                {"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True}
            )
            return
        garbled = body[: len(body) // 2] + b'\x00\xff"<sandbox: malformed body>'
        await send({**start, "headers": _with_length(headers, len(garbled))})
        await send({"type": "http.response.body", "body": garbled})
