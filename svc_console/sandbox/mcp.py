"""The MCP endpoint, `POST /api/mcp`: JSON-RPC 2.0 over HTTP, as MCP's Streamable HTTP transport
allows it (every POST answered with plain JSON; no server-sent events, no session).

JSON-RPC, exactly:
- A body holds one message or a batch (an array, at most `MAX_BATCH` messages). Requests are
  answered in the order sent; notifications (no `id`) and JSON-RPC responses get no answer; a body
  with nothing to answer gets HTTP 202 and no body.
- Broken JSON: -32700. `[]`, a message that is not a request object, an `id` that is not a string
  or a number: -32600 with `id: null`. Unknown method: -32601. Bad params or tool arguments: -32602,
  the message naming the argument. A tool that fails unexpectedly: -32603 for that call only.
- HTTP status: 200 for every answer to a request that could be read (errors included, batches
  always); 400 when the whole body is refused (-32700, or -32600 with `id: null` for a single
  message); 401 when a call needs a credential that is missing or wrong; 202 when nothing needs an
  answer.

MCP: `initialize` (the client's protocol version when supported, else the newest this server
speaks), `notifications/initialized`, `ping`, `tools/list`, `tools/call`. The server is stateless:
it issues no `Mcp-Session-Id`, `GET` and `DELETE` on the endpoint answer 405, a request header
`MCP-Protocol-Version` must name a supported version, `Content-Type` must be `application/json`,
`Accept` (when sent) must allow `application/json`, and an `Origin` other than this server's or
loopback is refused (DNS rebinding).

Authentication: `svc_auth_start` and `svc_auth_complete`, `initialize`, `ping` and `tools/list`
need none. Every other tool needs `Authorization: Bearer` with an `sk_live_` key or an OAuth token
carrying scope `mcp:tools`. When any call of a body needs one and it is missing or wrong, the whole
body is refused with HTTP 401 and nothing in it runs, so a batch never half-runs.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import svc_console
from svc_console.sandbox import tools
from svc_console.sandbox.queries import InvalidArguments
from svc_console.sandbox.web import Refusal, bearer, read_body
from svc_console.sandbox.x402 import X402Gate

if TYPE_CHECKING:
    from svc_console.sandbox.catalog import Catalog
    from svc_console.sandbox.state import SandboxState

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_VERSION = PROTOCOL_VERSIONS[0]
MAX_BATCH = 50

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# Outside JSON-RPC's reserved range's defined codes: the body of an HTTP 401.
UNAUTHORIZED = -32001

SERVER_INFO = {
    "name": "svc-console-sandbox",
    "title": "svc-console sandbox marketplace (SANDBOX: no real money moves)",
    "version": svc_console.__version__,
}
INSTRUCTIONS = (
    "SANDBOX: a local stand-in for the Agent Data and API Marketplace; no real money moves."
    " Without a key, call svc_auth_start and svc_auth_complete to get an sk_live_ key, then send"
    " it as Authorization: Bearer. Discovery and trial tools are free; get_dataset on paid tiers,"
    " svc_breed_agent (10 USDC) and merge_models (15 USDC) answer with an x402 challenge to sign."
)
_HEADERS = {"X-Sandbox": "true", "Cache-Control": "no-store"}
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}
_NO_ID = object()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _error(id_: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": error}


def _result(id_: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


class ParamsError(Exception):
    """-32602 for one request."""

    def __init__(self, message: str, data: Any = None):
        super().__init__(message)
        self.message, self.data = message, data


@dataclass(frozen=True)
class Message:
    """One readable JSON-RPC message of a body: a request (with `id`) or a notification."""

    id: Any  # _NO_ID for a notification
    method: str
    params: Any

    @property
    def is_request(self) -> bool:
        return self.id is not _NO_ID


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def read_message(item: Any) -> Message | dict[str, Any] | None:
    """A Message, an error answer (-32600) for an unreadable one, or None for a client's
    JSON-RPC response (never answered)."""
    if not isinstance(item, dict):
        return _error(None, INVALID_REQUEST, "a JSON-RPC message must be an object")
    has_id = "id" in item
    id_ = item.get("id")
    if has_id and not _valid_id(id_):
        return _error(None, INVALID_REQUEST, "id must be a string or an integer")
    answer_id = id_ if has_id else None
    if item.get("jsonrpc") != "2.0":
        return _error(answer_id, INVALID_REQUEST, 'jsonrpc must be "2.0"')
    if "method" not in item and ("result" in item or "error" in item) and has_id:
        return None  # a response to a server request; this server sends none, so it is dropped
    method = item.get("method")
    if not isinstance(method, str) or not method:
        return _error(answer_id, INVALID_REQUEST, "method must be a non-empty string")
    params = item.get("params")
    if "params" in item and not isinstance(params, dict | list):
        return _error(answer_id, INVALID_REQUEST, "params must be an object or an array")
    return Message(id=id_ if has_id else _NO_ID, method=method, params=params)


def _object_params(message: Message) -> dict[str, Any]:
    if message.params is None:
        return {}
    if not isinstance(message.params, dict):
        raise ParamsError(f"{message.method} takes params as an object")
    return message.params


class McpEndpoint:
    def __init__(self, state: SandboxState, listing: Catalog):
        self.state, self.listing = state, listing
        self.gate = X402Gate(state)

    # --- HTTP ---------------------------------------------------------------------------------

    @staticmethod
    def _refuse(status: int, code: int, message: str, **headers: str) -> Response:
        return JSONResponse(
            _error(None, code, message), status_code=status, headers={**_HEADERS, **headers}
        )

    @staticmethod
    def _origin_allowed(origin: str, request: Request) -> bool:
        host = urlsplit(origin).hostname
        if host is None:
            return False
        return host in _LOOPBACK or host == request.url.hostname

    @staticmethod
    def _accepts_json(accept: str) -> bool:
        for part in accept.split(","):
            media = part.split(";")[0].strip().lower()
            if media in ("application/json", "application/*", "*/*"):
                return True
        return False

    async def handle(self, request: Request) -> Response:
        origin = request.headers.get("origin")
        if origin is not None and not self._origin_allowed(origin, request):
            return self._refuse(403, INVALID_REQUEST, "requests from that Origin are refused")
        accept = request.headers.get("accept")
        if accept and not self._accepts_json(accept):
            return self._refuse(406, INVALID_REQUEST, "answers are application/json")
        content_type = request.headers.get("content-type", "")
        if content_type.split(";")[0].strip().lower() != "application/json":
            return self._refuse(415, INVALID_REQUEST, "send Content-Type: application/json")
        version = request.headers.get("mcp-protocol-version")
        if version is not None and version not in PROTOCOL_VERSIONS:
            return self._refuse(
                400,
                INVALID_REQUEST,
                f"unsupported MCP-Protocol-Version; supported: {', '.join(PROTOCOL_VERSIONS)}",
            )
        try:
            raw = await read_body(request)
        except Refusal as refusal:
            return self._refuse(refusal.status, INVALID_REQUEST, refusal.message)
        try:
            body = json.loads(raw, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            return self._refuse(400, PARSE_ERROR, "parse error: the body is not valid JSON")
        batch = isinstance(body, list)
        if batch and not body:
            return self._refuse(400, INVALID_REQUEST, "an empty batch is not a request")
        if batch and len(body) > MAX_BATCH:
            return self._refuse(400, INVALID_REQUEST, f"a batch holds at most {MAX_BATCH} messages")
        messages = [read_message(item) for item in (body if batch else [body])]

        caller = self.state.accounts.caller(bearer(request))
        if any(self._needs_auth(m) for m in messages) and not (
            caller is not None and "mcp:tools" in caller.scopes
        ):
            return self._unauthorized(request, messages, batch, caller is not None)

        base_url = (self.state.base_url or str(request.base_url)).rstrip("/")
        ctx = tools.Context(self.state, self.listing, self.gate, base_url, caller)
        answers = await run_in_threadpool(self._answer_all, messages, ctx)
        if not answers:
            return Response(status_code=202, headers=_HEADERS)
        if batch:
            return JSONResponse(answers, headers=_HEADERS)
        answer = answers[0]
        refused = "error" in answer and answer["id"] is None
        return JSONResponse(answer, status_code=400 if refused else 200, headers=_HEADERS)

    @staticmethod
    def _needs_auth(message: Message | dict[str, Any] | None) -> bool:
        if not isinstance(message, Message) or not message.is_request:
            return False
        if message.method != "tools/call" or not isinstance(message.params, dict):
            return False
        name = message.params.get("name")
        tool = tools.TOOLS.get(name) if isinstance(name, str) else None
        return tool is not None and tool.needs_auth

    def _unauthorized(
        self, request: Request, messages: list[Any], batch: bool, known: bool
    ) -> Response:
        base = (self.state.base_url or str(request.base_url)).rstrip("/")
        challenge = (
            f'Bearer realm="svc-console sandbox", scope="mcp:tools",'
            f' resource_metadata="{base}/.well-known/oauth-protected-resource/api/mcp"'
        )
        if known:
            # A valid credential without the scope (an account:read token).
            message = "this token lacks scope mcp:tools"
            challenge += ', error="insufficient_scope"'
        elif bearer(request) is not None:
            message = "the API key or token is not valid"
            challenge += ', error="invalid_token"'
        else:
            message = "this tool needs an sk_live_ API key or an OAuth token with scope mcp:tools"
        single = messages[0] if not batch and isinstance(messages[0], Message) else None
        id_ = single.id if single is not None else None
        return JSONResponse(
            _error(id_, UNAUTHORIZED, message, {"httpStatus": 401}),
            status_code=401,
            headers={**_HEADERS, "WWW-Authenticate": challenge},
        )

    # --- JSON-RPC -----------------------------------------------------------------------------

    def _answer_all(self, messages: list[Any], ctx: tools.Context) -> list[dict[str, Any]]:
        answers = []
        for message in messages:
            if message is None:
                continue
            if isinstance(message, dict):
                answers.append(message)
                continue
            if not message.is_request:
                # Notifications are never answered. A method that is a request (tools/call)
                # sent as a notification does not run: nothing is charged without an answer.
                continue
            answers.append(self._answer(message, ctx))
        return answers

    def _answer(self, message: Message, ctx: tools.Context) -> dict[str, Any]:
        try:
            return _result(message.id, self._dispatch(message, ctx))
        except ParamsError as exc:
            return _error(message.id, INVALID_PARAMS, exc.message, exc.data)
        except _MethodNotFound:
            return _error(message.id, METHOD_NOT_FOUND, f"method not found: {message.method[:80]}")
        except Exception as exc:  # one call fails, the rest of the batch still answers
            return _error(message.id, INTERNAL_ERROR, f"internal error ({type(exc).__name__})")

    def _dispatch(self, message: Message, ctx: tools.Context) -> dict[str, Any]:
        method = message.method
        if method == "initialize":
            return self._initialize(_object_params(message))
        if method == "ping":
            _object_params(message)
            return {}
        if method == "tools/list":
            params = _object_params(message)
            if params.get("cursor") is not None:
                raise ParamsError("cursor: this server lists every tool on one page")
            return {
                "tools": _tool_list(),
                "_meta": {"sandbox": True},
            }
        if method == "tools/call":
            return self._call(_object_params(message), ctx)
        raise _MethodNotFound

    @staticmethod
    def _initialize(params: dict[str, Any]) -> dict[str, Any]:
        wanted = params.get("protocolVersion")
        if not isinstance(wanted, str):
            raise ParamsError("protocolVersion: is required (a string such as 2025-11-25)")
        capabilities = params.get("capabilities", {})
        if not isinstance(capabilities, dict):
            raise ParamsError("capabilities: must be an object")
        return {
            "protocolVersion": wanted if wanted in PROTOCOL_VERSIONS else LATEST_VERSION,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": SERVER_INFO,
            "instructions": INSTRUCTIONS,
        }

    @staticmethod
    def _call(params: dict[str, Any], ctx: tools.Context) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str):
            raise ParamsError("name: is required (the tool's name)")
        if name not in tools.TOOLS:
            raise ParamsError(
                f"name: unknown tool {name[:80]!r}; tools/list names the nine",
                {"tools": list(tools.TOOLS)},
            )
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ParamsError("arguments: must be an object")
        try:
            return tools.call(ctx, name, arguments)
        except InvalidArguments as exc:
            raise ParamsError(
                f"invalid arguments for {name}: {exc.message}",
                {"tool": name, "errors": exc.as_json()},
            ) from None


class _MethodNotFound(Exception):
    pass


@functools.cache
def _tool_list() -> list[dict[str, Any]]:
    """What `tools/list` answers: built once, the tools never change while serving."""
    return [tool.describe() for tool in tools.TOOLS.values()]


def routes(state: SandboxState, listing: Catalog) -> list[Route]:
    endpoint = McpEndpoint(state, listing)
    return [Route("/api/mcp", endpoint.handle, methods=["POST"])]
