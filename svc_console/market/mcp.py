"""Client of the marketplace's MCP endpoint: JSON-RPC 2.0 over HTTP POST, with batches.

`call_tool` returns a typed `ToolResult` or raises: `errors.Unauthorized` (HTTP 401),
`JsonRpcError` (a JSON-RPC error: `rpc_code`, message, `data`), or a `ToolError` for a result with
`isError: true` (`PaymentRequiredError` carrying the x402 challenge, `PaymentRefused` with the
sandbox's reason, `ToolWalletUnfunded` with the funding address, or a plain `ToolError` with the
structured content). `batch` sends several calls in one POST and matches the answers by id; each
item comes back as its result or as the exception it would have raised.

The credential (an sk_live_ key or an OAuth access token) is a `SecretStr` and never appears in a
repr or an exception.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError
from pydantic.alias_generators import to_camel

import svc_console
from svc_console.market import errors, http

MCP_PATH = "/api/mcp"  # where the service serves its MCP endpoint (SPEC.md)
PROTOCOL_VERSION = "2025-11-25"
JSON_RPC = "2.0"


# --- typed results -----------------------------------------------------------------------------


class _Mcp(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore"
    )


class ServerInfo(_Mcp):
    name: str
    version: str = ""
    title: str | None = None


class InitializeResult(_Mcp):
    protocol_version: str
    capabilities: dict[str, Any] = Field(default_factory=dict)
    server_info: ServerInfo
    instructions: str | None = None


class ToolAnnotations(_Mcp):
    title: str | None = None
    read_only_hint: bool = False
    destructive_hint: bool = True  # MCP's defaults: assume the worst when a server says nothing
    idempotent_hint: bool = False
    open_world_hint: bool = True


class ToolSpec(_Mcp):
    """One tool of `tools/list`."""

    name: str
    title: str | None = None
    description: str = ""
    input_schema: dict[str, Any]
    annotations: ToolAnnotations = Field(default_factory=ToolAnnotations)


class ToolResult(_Mcp):
    """A successful `tools/call` (isError false). `structured` is the JSON answer."""

    content: list[dict[str, Any]] = Field(default_factory=list)
    structured: dict[str, Any] | None = Field(None, alias="structuredContent")
    is_error: bool = False

    def data(self) -> dict[str, Any]:
        """The structured answer, or the JSON of the first text block when there is none."""
        if self.structured is not None:
            return self.structured
        for block in self.content:
            if block.get("type") == "text":
                try:
                    value = json.loads(block.get("text", ""))
                except ValueError:
                    break
                if isinstance(value, dict):
                    return value
        return {}


# --- errors ------------------------------------------------------------------------------------


class McpError(errors.MarketError):
    """Base of what the MCP endpoint can answer instead of a result."""

    code = "MCP_ERROR"


class JsonRpcError(McpError):
    """A JSON-RPC error object: -32700 parse, -32600 invalid request, -32601 unknown method,
    -32602 invalid params (the message names the argument), -32603 internal."""

    code = "JSON_RPC_ERROR"

    def __init__(self, rpc_code: int, message: str, data: Any = None):
        super().__init__(f"{message} (JSON-RPC {rpc_code})")
        self.rpc_code, self.rpc_message, self.data = rpc_code, message, data


class ToolError(McpError):
    """A tool result with isError true. `code` is the service's error word; `structured` the
    whole structured content (untrusted text)."""

    def __init__(self, tool: str, structured: dict[str, Any]):
        error = structured.get("error") if isinstance(structured.get("error"), dict) else {}
        code = str(error.get("code") or "TOOL_ERROR")
        message = str(error.get("message") or f"{tool} failed")
        errors.MarketError.__init__(self, message, code=code)
        self.tool, self.structured, self.error = tool, structured, error

    @property
    def payment_required(self) -> dict[str, Any] | None:
        value = self.structured.get("paymentRequired")
        return value if isinstance(value, dict) else None


class PaymentRequiredError(ToolError):
    """A paid tool called without payment: sign `payment_required` and call again."""


class PaymentRefused(ToolError):
    """The payment was refused (`reason`: wrong_amount, nonce_reused, expired, ...)."""

    @property
    def reason(self) -> str:
        return str(self.error.get("reason") or "")


class ToolWalletUnfunded(ToolError, errors.WalletUnfunded):
    """The wallet cannot cover the payment: fund it at `funding_url`, then retry once."""

    def __init__(self, tool: str, structured: dict[str, Any]):
        ToolError.__init__(self, tool, structured)
        self.funding_url = str(self.error.get("fundingUrl") or "")
        self.balance = _decimal(self.error.get("balanceUsdc"))
        self.required = _decimal(self.error.get("requiredUsdc")) or Decimal(0)


def _decimal(value: Any) -> Decimal | None:
    try:
        return Decimal(str(value)) if value is not None else None
    except ArithmeticError:
        return None


_TOOL_ERRORS: dict[str, type[ToolError]] = {
    "PAYMENT_REQUIRED": PaymentRequiredError,
    "PAYMENT_INVALID": PaymentRefused,
    "WALLET_UNFUNDED": ToolWalletUnfunded,
}


def tool_error(tool: str, structured: dict[str, Any]) -> ToolError:
    error = structured.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    return _TOOL_ERRORS.get(str(code), ToolError)(tool, structured)


# --- calls -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One request of a batch."""

    method: str
    params: dict[str, Any] | None = field(default=None)

    @classmethod
    def tool(cls, name: str, arguments: dict[str, Any] | None = None) -> Call:
        return cls("tools/call", {"name": name, "arguments": arguments or {}})

    @classmethod
    def list_tools(cls) -> Call:
        return cls("tools/list")

    @classmethod
    def ping(cls) -> Call:
        return cls("ping")


def _typed(call: Call, result: Any) -> Any:
    """The typed form of a result (or the ToolError a failed tool result stands for)."""
    if not isinstance(result, dict):
        raise errors.MalformedResponse(f"{call.method} answered a non-object result")
    try:
        if call.method == "tools/call":
            parsed = ToolResult.model_validate(result)
            if parsed.is_error:
                name = str((call.params or {}).get("name", "tool"))
                return tool_error(name, parsed.data())
            return parsed
        if call.method == "tools/list":
            return [ToolSpec.model_validate(tool) for tool in result["tools"]]
        if call.method == "initialize":
            return InitializeResult.model_validate(result)
    except (ValidationError, KeyError, TypeError) as exc:
        raise errors.MalformedResponse(
            f"{call.method} answered an unexpected result ({type(exc).__name__})"
        ) from None
    return result


def _sse_messages(text: str) -> list[Any]:
    """JSON-RPC messages of a text/event-stream answer (one per `data:` event)."""
    messages, data = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif not line and data:
            with contextlib.suppress(ValueError):  # a broken event is skipped, not fatal
                messages.append(json.loads("\n".join(data)))
            data = []
    return messages


class McpClient(http.LazyClient):
    """`url` is the MCP endpoint (`mcpServerUrl`, e.g. `<base_url>/api/mcp`); `credential` an
    sk_live_ key or an OAuth access token with scope mcp:tools (None for the auth tools only)."""

    def __init__(
        self,
        url: str,
        *,
        credential: str | SecretStr | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout_s: float = 60.0,
    ):
        self.url = url
        secret = credential.get_secret_value() if isinstance(credential, SecretStr) else credential
        self._credential = SecretStr(secret or "")
        self._options = {
            "timeout": http.timeout(timeout_s),
            "limits": http.limits(),
            "transport": transport,
        }
        self._ids = itertools.count(1)
        self._session_id: str | None = None
        self.protocol_version: str | None = None

    def __repr__(self) -> str:
        return f"McpClient({self.url!r})"

    async def __aenter__(self) -> McpClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- HTTP ---------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if self._credential.get_secret_value():
            headers["Authorization"] = f"Bearer {self._credential.get_secret_value()}"
        if self._session_id:
            headers["Mcp-Session-Id"] = self._session_id
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    async def _post(self, body: Any) -> tuple[httpx.Response, list[Any]]:
        response = await http.send(
            self._client, "POST", self.url, content=json.dumps(body), headers=self._headers()
        )
        if response.status_code == 401:
            raise errors.Unauthorized(
                "the MCP endpoint refused the credentials (401): this tool needs an sk_live_ key"
                " or an OAuth token with scope mcp:tools"
            )
        if response.status_code == 202 or not response.content:
            return response, []
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return response, _sse_messages(response.text)
        try:
            data = response.json()
        except ValueError:
            http.raise_for_error(response)
            raise errors.MalformedResponse("the MCP endpoint answered something not JSON") from None
        rpc = isinstance(data, list) or (isinstance(data, dict) and data.get("jsonrpc") == JSON_RPC)
        if not response.is_success and not rpc:
            http.raise_for_error(response)  # not a JSON-RPC answer: a wrong address, a 5xx
        return response, data if isinstance(data, list) else [data]

    # --- requests -------------------------------------------------------------------------------

    async def batch(self, calls: Sequence[Call]) -> list[Any]:
        """Sends every call in one POST; returns, in the order given, each typed result or the
        exception it stands for (like `asyncio.gather(return_exceptions=True)`). A failure of the
        whole POST (401, unreachable, a refused body) is raised instead."""
        if not calls:
            return []
        ids = [next(self._ids) for _ in calls]
        body = [self._message(i, call) for i, call in zip(ids, calls, strict=True)]
        response, messages = await self._post(body)
        answers: dict[Any, dict[str, Any]] = {}
        for message in messages:
            if isinstance(message, dict) and message.get("id") in ids:
                answers[message["id"]] = message
            elif isinstance(message, dict) and message.get("id") is None and "error" in message:
                raise self._rpc_error(message)  # the batch as a whole was refused
        if not response.is_success and not answers:
            http.raise_for_error(response)
        return [self._outcome(call, answers.get(i)) for i, call in zip(ids, calls, strict=True)]

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """One call; its typed result, or raises what `batch` would have returned."""
        call = Call(method, params)
        id_ = next(self._ids)
        response, messages = await self._post(self._message(id_, call))
        answer = next((m for m in messages if isinstance(m, dict) and m.get("id") == id_), None)
        if answer is None:
            refused = next((m for m in messages if isinstance(m, dict) and "error" in m), None)
            if refused is not None:
                raise self._rpc_error(refused)
            http.raise_for_error(response)
        outcome = self._outcome(call, answer)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """A notification: no answer is expected (HTTP 202)."""
        message: dict[str, Any] = {"jsonrpc": JSON_RPC, "method": method}
        if params is not None:
            message["params"] = params
        response, _ = await self._post(message)
        http.raise_for_error(response)

    @staticmethod
    def _message(id_: int, call: Call) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": JSON_RPC, "id": id_, "method": call.method}
        if call.params is not None:
            message["params"] = call.params
        return message

    @staticmethod
    def _rpc_error(message: dict[str, Any]) -> JsonRpcError:
        error = message.get("error")
        if not isinstance(error, dict):
            return JsonRpcError(-32603, "the error answer holds no error object")
        code = error.get("code")
        return JsonRpcError(
            code if isinstance(code, int) else -32603,
            str(error.get("message") or "error"),
            error.get("data"),
        )

    def _outcome(self, call: Call, answer: dict[str, Any] | None) -> Any:
        if answer is None:
            return errors.MalformedResponse(f"no answer came back for {call.method}")
        if "error" in answer:
            return self._rpc_error(answer)
        if "result" not in answer:
            return errors.MalformedResponse(f"the answer to {call.method} holds no result")
        try:
            return _typed(call, answer["result"])
        except errors.MalformedResponse as exc:
            return exc

    # --- MCP ------------------------------------------------------------------------------------

    async def initialize(self, client_name: str = "svc-console") -> InitializeResult:
        """The handshake: `initialize`, then `notifications/initialized`."""
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": client_name, "version": svc_console.__version__},
        }
        call = Call("initialize", params)
        id_ = next(self._ids)
        response, messages = await self._post(self._message(id_, call))
        session = response.headers.get("mcp-session-id")
        if session:
            self._session_id = session
        answer = next((m for m in messages if isinstance(m, dict) and m.get("id") == id_), None)
        result = self._outcome(call, answer)
        if isinstance(result, Exception):
            raise result
        self.protocol_version = result.protocol_version
        await self.notify("notifications/initialized")
        return result

    async def ping(self) -> None:
        await self.request("ping")

    async def list_tools(self) -> list[ToolSpec]:
        return await self.request("tools/list")

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        return await self.request("tools/call", {"name": name, "arguments": arguments or {}})
