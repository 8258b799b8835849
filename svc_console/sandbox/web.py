"""The sandbox's HTTP plumbing shared by every route module: error answers, body limits, bearer
credentials, the HTML page frame and the exception handlers that keep crashes inside the sandbox.

Every error body has one shape: `{"error": {"code", "message", ...details}, "sandbox": true}`.
"""

from __future__ import annotations

import hmac
import html
import json
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

MAX_BODY_BYTES = 1024 * 1024


class Refusal(Exception):
    """A request the sandbox answers with an error body instead of a result."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        **details: Any,
    ):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers, self.details = headers, details


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None, **details: Any
) -> JSONResponse:
    body = {"error": {"code": code, "message": message, **details}, "sandbox": True}
    return JSONResponse(body, status_code=status, headers=headers)


def bearer(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def same_secret(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


async def read_body(request: Request) -> bytes:
    too_large = Refusal(413, "PAYLOAD_TOO_LARGE", f"bodies are limited to {MAX_BODY_BYTES} bytes")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_large
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


async def json_object(request: Request, code: str, *, empty_ok: bool = False) -> dict[str, Any]:
    raw = await read_body(request)
    if empty_ok and not raw.strip():
        return {}
    try:
        data = json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        raise Refusal(400, code, "the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise Refusal(400, code, "the body must be a JSON object")
    return data


_PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"
    ),
}
_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;max-width:36em;margin:2em auto;line-height:1.5}}
.banner{{background:#fde68a;padding:.5em 1em;font-weight:bold}}</style></head>
<body><p class="banner">SANDBOX: no real money moves here. Balances are make-believe USDC.</p>
<h1>{title}</h1>
{content}
</body></html>
"""


def page(title: str, content: str, status: int = 200) -> HTMLResponse:
    """`content` must already be HTML-escaped where it holds anything not written here."""
    return HTMLResponse(
        _PAGE.format(title=html.escape(title), content=content),
        status_code=status,
        headers=_PAGE_HEADERS,
    )


async def on_refusal(request: Request, exc: Refusal) -> Response:
    return error_response(exc.status, exc.code, exc.message, exc.headers, **exc.details)


_HTTP_CODES = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}


async def on_http_error(request: Request, exc: HTTPException) -> Response:
    code = _HTTP_CODES.get(exc.status_code, f"HTTP_{exc.status_code}")
    return error_response(exc.status_code, code, str(exc.detail), exc.headers)


async def on_crash(request: Request, exc: Exception) -> Response:
    return error_response(500, "INTERNAL", f"the sandbox failed ({type(exc).__name__})")


class Quiet:
    """Keeps a crash inside the sandbox: the 500 answer is already sent, and letting the exception
    reach the server would print a traceback over the operator's terminal UI."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        except Exception:
            if scope["type"] != "http":
                raise
