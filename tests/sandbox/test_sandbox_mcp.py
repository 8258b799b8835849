"""The sandbox's MCP endpoint over real HTTP: JSON-RPC 2.0 exactly, the MCP handshake, the nine
tools' schemas, annotations, arguments and limits, authentication, payments and compute jobs."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from eth_account import Account
from helpers import FakeClock
from jsonschema import Draft202012Validator
from signing import sign_x402

from svc_console.core.taxonomy import DOMAIN_TYPES, PRODUCT_CLASSES
from svc_console.sandbox.datasets import dataset_catalog
from svc_console.sandbox.mcp import MAX_BATCH, PROTOCOL_VERSIONS
from svc_console.sandbox.server import SandboxServer
from svc_console.sandbox.state import SandboxState

TOOL_NAMES = [
    "svc_auth_start",
    "svc_auth_complete",
    "list_datasets",
    "search_datasets",
    "list_market_apis",
    "try_dataset",
    "get_dataset",
    "svc_breed_agent",
    "merge_models",
]
PROTECTED = TOOL_NAMES[2:]
MERGE_CONFIG = """\
merge_method: ties
base_model: mistralai/Mistral-7B-v0.1
models:
  - model: teknium/OpenHermes-2.5-Mistral-7B
    parameters: {weight: 0.5, density: 0.6}
  - model: HuggingFaceH4/zephyr-7b-beta
    parameters: {weight: 0.5, density: [0.4, 0.8]}
parameters: {normalize: true}
dtype: float16
"""


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    folder = Path(tempfile.mkdtemp(prefix="svc-mcp-"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SVC_CONSOLE_HOME", str(folder))
        with SandboxServer() as running:
            running.state.set_balance(10_000)
            yield running


@pytest.fixture(scope="module")
def state(server: SandboxServer) -> SandboxState:
    return server.state


@pytest.fixture(scope="module")
def http(server: SandboxServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=20) as client:
        yield client


class Rpc:
    """Posts JSON-RPC bodies to /api/mcp; `key` is sent as the bearer credential."""

    def __init__(self, http: httpx.Client, key: str | None):
        self.http, self.key = http, key

    def post(self, body: Any, *, raw: bytes | None = None, **headers: str) -> httpx.Response:
        sent = {"Content-Type": "application/json", **headers}
        if self.key:
            sent.setdefault("Authorization", f"Bearer {self.key}")
        content = raw if raw is not None else json.dumps(body).encode()
        return self.http.post("/api/mcp", content=content, headers=sent)

    def answer(self, method: str, params: Any = None, id_: Any = 1) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            message["params"] = params
        response = self.post(message)
        assert response.status_code == 200, response.text
        return response.json()

    def call(self, tool: str, arguments: Any = None) -> dict[str, Any]:
        params: dict[str, Any] = {"name": tool}
        if arguments is not None:
            params["arguments"] = arguments
        return self.answer("tools/call", params)

    def result(self, tool: str, arguments: Any = None) -> dict[str, Any]:
        """A successful tool's structured content (both forms checked equal)."""
        answer = self.call(tool, arguments)
        assert "result" in answer, answer
        result = answer["result"]
        assert result["isError"] is False, result
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
        assert result["content"][0]["type"] == "text"
        return result["structuredContent"]

    def failure(self, tool: str, arguments: Any = None) -> dict[str, Any]:
        """A tool result with isError true: its structured content."""
        result = self.call(tool, arguments)["result"]
        assert result["isError"] is True, result
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
        assert result["structuredContent"]["sandbox"] is True
        return result["structuredContent"]

    def invalid(self, tool: str, arguments: Any) -> dict[str, Any]:
        """A -32602 error: its error object."""
        answer = self.call(tool, arguments)
        assert "error" in answer, answer
        assert answer["error"]["code"] == -32602, answer
        return answer["error"]


@pytest.fixture(scope="module")
def rpc(http: httpx.Client, state: SandboxState) -> Rpc:
    return Rpc(http, state.api_key)


@pytest.fixture(scope="module")
def anonymous(http: httpx.Client) -> Rpc:
    return Rpc(http, None)


def paid_dataset(tier: str = "standard") -> Any:
    return next(d for d in dataset_catalog().datasets if d.tier == tier and d.paid)


def free_dataset() -> Any:
    return next(d for d in dataset_catalog().datasets if not d.paid)


# --- JSON-RPC 2.0 ----------------------------------------------------------------------------


@pytest.mark.parametrize("id_", [1, "a-string-id", 0, -7])
def test_a_request_is_answered_with_its_own_id(rpc: Rpc, id_):
    answer = rpc.answer("ping", id_=id_)
    assert answer == {"jsonrpc": "2.0", "id": id_, "result": {}}


def test_a_batch_is_answered_in_order_and_notifications_get_nothing(rpc: Rpc):
    body = [
        {"jsonrpc": "2.0", "id": "first", "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "no/such/method"},
    ]
    response = rpc.post(body)
    assert response.status_code == 200
    answers = response.json()
    assert [a["id"] for a in answers] == ["first", 2, 3]
    assert answers[0]["result"] == {}
    assert len(answers[1]["result"]["tools"]) == 9
    assert answers[2]["error"]["code"] == -32601


def test_a_batch_of_one_is_answered_with_an_array(rpc: Rpc):
    answer = rpc.post([{"jsonrpc": "2.0", "id": 9, "method": "ping"}]).json()
    assert answer == [{"jsonrpc": "2.0", "id": 9, "result": {}}]


@pytest.mark.parametrize(
    "body",
    [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        [{"jsonrpc": "2.0", "method": "notifications/initialized"},
         {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}],
        {"jsonrpc": "2.0", "method": "ping"},
        {"jsonrpc": "2.0", "id": 5, "result": {}},
    ],
)  # fmt: skip
def test_nothing_to_answer_is_http_202_with_no_body(rpc: Rpc, body):
    response = rpc.post(body)
    assert response.status_code == 202
    assert response.content == b""


def test_a_tool_call_sent_as_a_notification_does_not_run(anonymous: Rpc, state: SandboxState):
    before = len(state.accounts.outbox.messages())
    params = {"name": "svc_auth_start", "arguments": {"email": "silent@example.com"}}
    response = anonymous.post({"jsonrpc": "2.0", "method": "tools/call", "params": params})
    assert response.status_code == 202
    assert len(state.accounts.outbox.messages()) == before


def test_an_empty_batch_is_one_invalid_request_error(rpc: Rpc):
    response = rpc.post(None, raw=b"[]")
    assert response.status_code == 400
    body = response.json()
    assert isinstance(body, dict)
    assert body["id"] is None and body["error"]["code"] == -32600


@pytest.mark.parametrize("raw", [b"{broken", b"", b'{"jsonrpc": "2.0", "id": 1, "method": "ping"',
                                 b'{"jsonrpc": "2.0", "id": NaN, "method": "ping"}'])  # fmt: skip
def test_broken_json_is_a_parse_error(rpc: Rpc, raw):
    response = rpc.post(None, raw=raw)
    assert response.status_code == 400
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "parse error: the body is not valid JSON"},
    }


@pytest.mark.parametrize(
    ("message", "id_"),
    [
        (1, None),
        ("ping", None),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None),
        ({"jsonrpc": "1.0", "id": 4, "method": "ping"}, 4),
        ({"id": 4, "method": "ping"}, 4),
        ({"jsonrpc": "2.0", "id": 4}, 4),
        ({"jsonrpc": "2.0", "id": 4, "method": 12}, 4),
        ({"jsonrpc": "2.0", "id": 4, "method": "ping", "params": "x"}, 4),
    ],
)
def test_invalid_requests_in_a_batch_get_minus_32600(rpc: Rpc, message, id_):
    body = [message, {"jsonrpc": "2.0", "id": "ok", "method": "ping"}]
    response = rpc.post(body)
    assert response.status_code == 200
    bad, good = response.json()
    assert bad["error"]["code"] == -32600 and bad["id"] == id_
    assert good == {"jsonrpc": "2.0", "id": "ok", "result": {}}


def test_a_single_invalid_request_is_refused_with_http_400(rpc: Rpc):
    response = rpc.post({"jsonrpc": "2.0", "id": None, "method": "ping"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600


def test_an_unknown_method_is_minus_32601(rpc: Rpc):
    for method in ("resources/list", "server/discover", "notifications/initialized"):
        answer = rpc.answer(method)
        assert answer["error"]["code"] == -32601
        assert method in answer["error"]["message"]


def test_a_batch_holds_at_most_the_limit(rpc: Rpc):
    body = [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(MAX_BATCH + 1)]
    response = rpc.post(body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600
    assert len(rpc.post(body[:MAX_BATCH]).json()) == MAX_BATCH


@pytest.mark.parametrize(
    ("params", "names"),
    [
        ({}, "name"),
        ({"name": 3}, "name"),
        ({"name": "no_such_tool"}, "name"),
        ({"name": "list_datasets", "arguments": [1]}, "arguments"),
        ({"name": "list_datasets", "arguments": "limit=5"}, "arguments"),
        (["list_datasets"], "params"),
    ],
)
def test_bad_tools_call_params_are_minus_32602_naming_them(rpc: Rpc, params, names):
    answer = rpc.answer("tools/call", params)
    assert answer["error"]["code"] == -32602
    assert names in answer["error"]["message"]


def test_transport_rules_of_streamable_http(rpc: Rpc, http: httpx.Client, state: SandboxState):
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert http.get("/api/mcp").status_code == 405
    assert http.delete("/api/mcp").status_code == 405
    assert rpc.post(ping, **{"Content-Type": "text/plain"}).status_code == 415
    assert rpc.post(ping, Accept="text/html").status_code == 406
    assert rpc.post(ping, Accept="application/json, text/event-stream").status_code == 200
    assert rpc.post(ping, Origin="https://evil.example").status_code == 403
    assert rpc.post(ping, Origin="http://localhost:3000").status_code == 200
    assert rpc.post(ping, **{"MCP-Protocol-Version": "1999-01-01"}).status_code == 400
    assert rpc.post(ping, **{"MCP-Protocol-Version": "2025-06-18"}).status_code == 200
    response = rpc.post(ping)
    assert response.headers["x-sandbox"] == "true"
    assert "mcp-session-id" not in response.headers
    big = rpc.post(None, raw=b'{"pad": "' + b"x" * (1024 * 1024 + 10) + b'"}')
    assert big.status_code == 413


# --- the MCP handshake ------------------------------------------------------------------------


@pytest.mark.parametrize("version", PROTOCOL_VERSIONS)
def test_initialize_keeps_a_supported_version(anonymous: Rpc, version):
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t"}}
    result = anonymous.answer("initialize", params)["result"]
    assert result["protocolVersion"] == version
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["serverInfo"]["name"] == "svc-console-sandbox"
    assert "SANDBOX" in result["serverInfo"]["title"] and "SANDBOX" in result["instructions"]


def test_initialize_offers_its_newest_version_for_an_unknown_one(anonymous: Rpc):
    result = anonymous.answer("initialize", {"protocolVersion": "2099-01-01"})["result"]
    assert result["protocolVersion"] == PROTOCOL_VERSIONS[0]


@pytest.mark.parametrize("params", [{}, {"protocolVersion": 20250618}, None])
def test_initialize_needs_a_protocol_version(anonymous: Rpc, params):
    answer = anonymous.answer("initialize", params)
    assert answer["error"]["code"] == -32602
    assert "protocolVersion" in answer["error"]["message"]


# --- tools/list: schemas and annotations -------------------------------------------------------


@pytest.fixture(scope="module")
def listed(anonymous: Rpc) -> dict[str, dict[str, Any]]:
    tools = anonymous.answer("tools/list")["result"]["tools"]
    return {tool["name"]: tool for tool in tools}


def prop(tool: dict[str, Any], name: str) -> dict[str, Any]:
    """An argument's schema, the null branch of an optional one set aside."""
    schema = tool["inputSchema"]["properties"][name]
    branches = [b for b in schema.get("anyOf", [schema]) if b.get("type") != "null"]
    assert len(branches) == 1
    return {**schema, **branches[0]}


def test_tools_list_names_the_nine_tools(listed):
    assert list(listed) == TOOL_NAMES


@pytest.mark.parametrize(
    ("name", "read_only", "destructive"),
    [
        ("list_datasets", True, False),
        ("search_datasets", True, False),
        ("list_market_apis", True, False),
        ("try_dataset", True, False),
        ("get_dataset", False, False),
        ("svc_breed_agent", False, True),
        ("merge_models", False, True),
        ("svc_auth_start", False, False),
        ("svc_auth_complete", False, False),
    ],
)
def test_annotations(listed, name, read_only, destructive):
    annotations = listed[name]["annotations"]
    assert annotations["readOnlyHint"] is read_only
    assert annotations["destructiveHint"] is destructive
    assert listed[name]["description"]


def test_every_input_schema_is_a_closed_valid_json_schema(listed):
    for tool in listed.values():
        schema = tool["inputSchema"]
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False


def test_dataset_tools_state_every_argument(listed):
    for name in ("list_datasets", "search_datasets"):
        tool = listed[name]
        assert set(tool["inputSchema"]["properties"]) == {
            "query", "category", "tier", "modality", "format", "max_price_usdc",
            "required_fields", "sort_by", "limit",
        }  # fmt: skip
        assert tool["inputSchema"].get("required", []) == []
        assert prop(tool, "query")["type"] == "string"
        assert prop(tool, "tier")["enum"] == ["free", "standard", "premium", "enterprise"]
        assert prop(tool, "modality")["enum"] == ["structured", "document"]
        assert set(prop(tool, "format")["enum"]) == {
            "csv", "tsv", "json", "jsonl", "parquet", "txt", "md", "pdf",
        }  # fmt: skip
        assert prop(tool, "max_price_usdc")["type"] == "number"
        assert prop(tool, "required_fields")["type"] == "array"
        assert prop(tool, "required_fields")["items"]["type"] == "string"
        sort_by = prop(tool, "sort_by")
        assert sort_by["enum"] == ["newest", "popular", "price_asc", "price_desc"]
        assert sort_by["default"] == "newest"
        limit = prop(tool, "limit")
        assert (limit["type"], limit["minimum"], limit["maximum"], limit["default"]) == (
            "integer", 1, 100, 20,
        )  # fmt: skip


def test_market_tool_states_every_argument(listed):
    tool = listed["list_market_apis"]
    assert set(tool["inputSchema"]["properties"]) == {
        "query", "domain_type", "product_class", "chain", "verified_only", "max_price_usdc",
        "limit",
    }  # fmt: skip
    assert prop(tool, "domain_type")["enum"] == list(DOMAIN_TYPES)
    assert prop(tool, "product_class")["enum"] == list(PRODUCT_CLASSES)
    assert {"base", "solana", "stellar"} <= set(prop(tool, "chain")["enum"])
    assert prop(tool, "verified_only")["type"] == "boolean"
    assert prop(tool, "max_price_usdc")["type"] == "number"
    limit = prop(tool, "limit")
    assert (limit["type"], limit["maximum"], limit["default"]) == ("integer", 50, 25)


def test_the_other_tools_state_every_argument(listed):
    def arguments(name: str) -> tuple[set[str], set[str]]:
        schema = listed[name]["inputSchema"]
        return set(schema["properties"]), set(schema.get("required", []))

    assert arguments("svc_auth_start") == ({"email"}, {"email"})
    assert arguments("svc_auth_complete") == ({"email", "otp_code"}, {"email", "otp_code"})
    assert prop(listed["svc_auth_complete"], "otp_code")["pattern"] == r"^\d{6}$"
    assert arguments("try_dataset") == ({"dataset_id", "required_fields"}, {"dataset_id"})
    assert arguments("get_dataset") == (
        {"dataset_id", "payment_signature", "payment_proof", "x_payment"},
        {"dataset_id"},
    )
    assert arguments("svc_breed_agent") == (
        {"target_task", "base_model", "payment_signature"},
        set(),
    )
    assert arguments("merge_models") == ({"config_yaml", "payment_signature"}, {"config_yaml"})
    for name, argument in [
        ("get_dataset", "payment_signature"),
        ("get_dataset", "payment_proof"),
        ("get_dataset", "x_payment"),
        ("svc_breed_agent", "target_task"),
        ("svc_breed_agent", "base_model"),
        ("merge_models", "config_yaml"),
    ]:
        assert prop(listed[name], argument)["type"] == "string"
    assert "10 USDC" in prop(listed["svc_breed_agent"], "payment_signature")["description"]
    assert "15 USDC" in prop(listed["merge_models"], "payment_signature")["description"]


def test_tools_list_refuses_a_cursor(anonymous: Rpc):
    answer = anonymous.answer("tools/list", {"cursor": "page-2"})
    assert answer["error"]["code"] == -32602 and "cursor" in answer["error"]["message"]


# --- authentication ----------------------------------------------------------------------------


@pytest.mark.parametrize("tool", PROTECTED)
@pytest.mark.parametrize("credential", [None, "sk_live_not-a-real-key", "garbage"])
def test_protected_tools_need_a_key_or_token(http: httpx.Client, tool, credential):
    response = Rpc(http, credential).post(
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool}}
    )
    assert response.status_code == 401
    body = response.json()
    assert body["id"] == 7 and body["error"]["code"] == -32001
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer") and 'scope="mcp:tools"' in challenge
    assert ('error="invalid_token"' in challenge) is (credential is not None)


def test_the_handshake_and_the_auth_tools_need_no_key(anonymous: Rpc, state: SandboxState):
    assert "result" in anonymous.answer("initialize", {"protocolVersion": "2025-06-18"})
    assert "result" in anonymous.answer("tools/list")
    assert anonymous.result("svc_auth_start", {"email": "nokey@example.com"})["sent"] is True


def test_an_oauth_token_needs_scope_mcp_tools(http: httpx.Client, state: SandboxState):
    def token(scope: str) -> str:
        data = {"grant_type": "client_credentials", "client_secret": state.api_key, "scope": scope}
        return http.post("/oauth/token", data=data).json()["access_token"]

    with_scope = Rpc(http, token("mcp:tools"))
    assert with_scope.result("list_datasets", {"limit": 1})["total"] > 0
    without = Rpc(http, token("account:read")).post(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_datasets"}}
    )
    assert without.status_code == 401
    assert 'error="insufficient_scope"' in without.headers["www-authenticate"]


def test_a_batch_that_needs_a_key_is_refused_whole_and_nothing_runs(
    http: httpx.Client, state: SandboxState
):
    email = "mixed-batch@example.com"
    body = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "svc_auth_start", "arguments": {"email": email}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_datasets"}},
    ]  # fmt: skip
    response = Rpc(http, None).post(body)
    assert response.status_code == 401
    assert response.json()["id"] is None
    assert state.accounts.outbox.latest(email) is None
    both = Rpc(http, state.api_key).post(body).json()
    assert [a["result"]["isError"] for a in both] == [False, False]
    assert state.accounts.outbox.latest(email) is not None


# --- the auth tools ------------------------------------------------------------------------------


def test_sign_in_through_mcp_gives_a_key_the_endpoint_accepts(
    anonymous: Rpc, http: httpx.Client, state: SandboxState, server: SandboxServer
):
    email = "mcp-login@example.com"
    sent = anonymous.result("svc_auth_start", {"email": email})
    assert sent["expiresInSeconds"] == 600
    wrong = anonymous.failure("svc_auth_complete", {"email": email, "otp_code": "000000"})
    if wrong["error"]["code"] != "OTP_USED":  # "000000" could be the code itself
        assert wrong["error"]["code"] in ("OTP_INVALID", "OTP_SUPERSEDED")
    code = state.accounts.outbox.latest_code(email, "login")
    done = anonymous.result("svc_auth_complete", {"email": email, "otp_code": code})
    assert done["apiKey"].startswith("sk_live_") and done["mcpServerUrl"].endswith("/api/mcp")
    assert done["mcpServerUrl"] == server.base_url + "/api/mcp"
    assert (
        Account.from_key(done["walletConfig"]["evm"]["privateKey"]).address
        == (done["walletConfig"]["evm"]["address"])
    )
    again = anonymous.failure("svc_auth_complete", {"email": email, "otp_code": code})
    assert again["error"]["code"] == "OTP_USED"
    assert Rpc(http, done["apiKey"]).result("list_datasets", {"limit": 1})["datasets"]


@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    [
        ("svc_auth_start", {}, "email"),
        ("svc_auth_start", {"email": "nope"}, "email"),
        ("svc_auth_start", {"email": "a@example.com", "extra": 1}, "extra"),
        ("svc_auth_complete", {"email": "a@example.com", "otp_code": "12345"}, "otp_code"),
        ("svc_auth_complete", {"email": "a@example.com", "otp_code": 123456}, "otp_code"),
        ("svc_auth_complete", {"otp_code": "123456"}, "email"),
    ],
)
def test_auth_tool_arguments(anonymous: Rpc, tool, arguments, named):
    error = anonymous.invalid(tool, arguments)
    assert named in error["message"]
    assert any(e["argument"] == named for e in error["data"]["errors"])


# --- discovery and evaluation: arguments and limits --------------------------------------------


@pytest.mark.parametrize("tool", ["list_datasets", "search_datasets"])
@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"limit": "20"}, "limit"),
        ({"limit": True}, "limit"),
        ({"limit": 2.5}, "limit"),
        ({"sort_by": "oldest"}, "sort_by"),
        ({"tier": "gold"}, "tier"),
        ({"modality": "audio"}, "modality"),
        ({"format": "xlsx"}, "format"),
        ({"max_price_usdc": -1}, "max_price_usdc"),
        ({"max_price_usdc": "cheap"}, "max_price_usdc"),
        ({"required_fields": "date"}, "required_fields"),
        ({"query": 5}, "query"),
        ({"page": 2}, "page"),
    ],
)
def test_dataset_arguments_out_of_range_are_errors_not_clamped(rpc: Rpc, tool, arguments, named):
    error = rpc.invalid(tool, arguments)
    assert named in error["message"] and tool in error["message"]


@pytest.mark.parametrize("tool", ["list_datasets", "search_datasets"])
def test_dataset_limits_and_defaults(rpc: Rpc, tool):
    default = rpc.result(tool)
    assert default["total"] >= 100 and len(default["datasets"]) == 20
    assert len(rpc.result(tool, {"limit": 100})["datasets"]) == 100
    assert len(rpc.result(tool, {"limit": 1})["datasets"]) == 1


def test_dataset_filters_and_sorting(rpc: Rpc):
    cheap = rpc.result("list_datasets", {"max_price_usdc": 1, "limit": 100})["datasets"]
    assert cheap and all(Decimal(d["priceUsdc"]) <= 1 for d in cheap)
    free = rpc.result("list_datasets", {"tier": "free", "format": "csv", "limit": 100})
    assert free["datasets"] and all(
        d["tier"] == "free" and d["format"] == "csv" for d in free["datasets"]
    )
    ordered = rpc.result("list_datasets", {"sort_by": "price_asc", "limit": 50})["datasets"]
    prices = [Decimal(d["priceUsdc"]) for d in ordered]
    assert prices == sorted(prices)
    column = dataset_catalog().datasets[0].column_names[0]
    wanted = rpc.result("search_datasets", {"required_fields": [column], "limit": 100})
    assert wanted["total"] >= 1
    found = rpc.result("search_datasets", {"query": dataset_catalog().datasets[0].title})
    assert dataset_catalog().datasets[0].id in [d["id"] for d in found["datasets"]]


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"limit": 51}, "limit"),
        ({"limit": 0}, "limit"),
        ({"domain_type": "A23"}, "domain_type"),
        ({"product_class": "B7"}, "product_class"),
        ({"chain": "bitcoin"}, "chain"),
        ({"verified_only": "yes"}, "verified_only"),
        ({"max_price_usdc": "x"}, "max_price_usdc"),
        ({"provider": "p"}, "provider"),
    ],
)
def test_market_arguments_are_checked(rpc: Rpc, arguments, named):
    assert named in rpc.invalid("list_market_apis", arguments)["message"]


def test_market_apis_limits_and_filters(rpc: Rpc):
    default = rpc.result("list_market_apis")
    assert len(default["apis"]) == 25 and default["total"] > 1000
    assert len(rpc.result("list_market_apis", {"limit": 50})["apis"]) == 50
    search = rpc.result(
        "list_market_apis", {"domain_type": "A7", "verified_only": True, "limit": 50}
    )
    assert search["apis"] and all(
        a["domain_type"] == "A7" and a["verified"] for a in search["apis"]
    )
    cheap = rpc.result("list_market_apis", {"max_price_usdc": 0.01, "chain": "solana"})["apis"]
    for api in cheap:
        pricing = api["pricing"]
        ceiling = pricing.get("amountUsdc") or pricing.get("maxUsdc")
        assert Decimal(ceiling) <= Decimal("0.01") and "solana" in api["chains"]


def test_try_dataset_gives_preview_coverage_and_the_datacard(
    rpc: Rpc, http: httpx.Client, state: SandboxState
):
    dataset = dataset_catalog().datasets[0]
    present = dataset.column_names[0]
    trial = rpc.result(
        "try_dataset", {"dataset_id": dataset.id, "required_fields": [present, "no_such_col"]}
    )
    assert trial["preview"]["rows"] and trial["preview"]["columns"]
    assert present in json.dumps(trial["coverage"]) and "no_such_col" in json.dumps(
        trial["coverage"]
    )
    key = {"Authorization": f"Bearer {state.api_key}"}
    card = http.get(f"/api/datasets/{dataset.id}/card.json", headers=key).json()
    assert {k: v for k, v in card.items() if k != "sandbox"} == {
        k: v for k, v in trial["datacard"].items() if k != "sandbox"
    }
    assert rpc.failure("try_dataset", {"dataset_id": "ds_nope"})["error"]["code"] == "NOT_FOUND"
    assert "dataset_id" in rpc.invalid("try_dataset", {})["message"]
    assert (
        "required_fields"
        in rpc.invalid("try_dataset", {"dataset_id": dataset.id, "required_fields": [1]})["message"]
    )


# --- get_dataset and payments ------------------------------------------------------------------


def test_a_free_dataset_is_delivered_at_once(rpc: Rpc, state: SandboxState):
    before = len(state.charges)
    dataset = free_dataset()
    delivered = rpc.result("get_dataset", {"dataset_id": dataset.id})
    assert delivered["datasetId"] == dataset.id and delivered["chargedUsdc"] == "0.00"
    assert delivered["content"]
    assert len(state.charges) == before


def test_a_paid_dataset_answers_its_challenge_then_delivers_once_paid(
    rpc: Rpc, state: SandboxState, server: SandboxServer
):
    dataset = paid_dataset()
    refused = rpc.failure("get_dataset", {"dataset_id": dataset.id})
    assert refused["error"]["code"] == "PAYMENT_REQUIRED"
    required = refused["paymentRequired"]
    assert required["x402Version"] == 2
    assert required["resource"]["url"] == (f"{server.base_url}/api/datasets/{dataset.id}/access")
    offer = required["accepts"][0]
    assert offer["scheme"] == "exact" and offer["network"] == "eip155:8453"
    assert Decimal(offer["amount"]) == dataset.price_usdc * 1_000_000

    balance = state.balance
    signature = sign_x402(required)
    paid = rpc.result("get_dataset", {"dataset_id": dataset.id, "payment_signature": signature})
    assert paid["content"] and Decimal(paid["chargedUsdc"]) == dataset.price_usdc
    assert state.balance == balance - dataset.price_usdc
    usage = rpc.http.get(
        "/api/agent/usage", params={"limit": 200}, headers={"Authorization": f"Bearer {rpc.key}"}
    ).json()["charges"][-1]
    assert (usage["kind"], usage["resourceId"]) == ("dataset", dataset.id)
    assert usage["receipt"] == paid["payment"]["transaction"]
    replay = rpc.failure("get_dataset", {"dataset_id": dataset.id, "payment_signature": signature})
    assert replay["error"]["code"] == "PAYMENT_INVALID"
    assert replay["error"]["reason"] == "nonce_reused"
    assert state.balance == balance - dataset.price_usdc
    # The legacy proof re-delivers what the payment bought, charging nothing.
    proof = rpc.result(
        "get_dataset", {"dataset_id": dataset.id, "payment_proof": paid["payment"]["transaction"]}
    )
    assert proof["chargedUsdc"] == "0.00" and proof["content"] == paid["content"]
    assert state.balance == balance - dataset.price_usdc


def test_an_unfunded_wallet_is_a_tool_error_with_the_funding_address(rpc: Rpc, state: SandboxState):
    dataset = paid_dataset("premium")
    required = rpc.failure("get_dataset", {"dataset_id": dataset.id})["paymentRequired"]
    balance = state.balance
    state.set_balance(0)
    try:
        unfunded = rpc.failure(
            "get_dataset", {"dataset_id": dataset.id, "payment_signature": sign_x402(required)}
        )
    finally:
        state.set_balance(balance)
    error = unfunded["error"]
    assert error["code"] == "WALLET_UNFUNDED"
    assert error["fundingUrl"].endswith(f"/fund/{state.username}")
    assert Decimal(error["requiredUsdc"]) == dataset.price_usdc
    assert unfunded["paymentRequired"] == required
    assert state.balance == balance


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({}, "dataset_id"),
        ({"dataset_id": ""}, "dataset_id"),
        ({"dataset_id": 12}, "dataset_id"),
        ({"dataset_id": "x", "payment_signature": 5}, "payment_signature"),
        ({"dataset_id": "x", "tip": "1"}, "tip"),
    ],
)
def test_get_dataset_arguments(rpc: Rpc, arguments, named):
    assert named in rpc.invalid("get_dataset", arguments)["message"]


def test_garbage_payments_are_tool_errors(rpc: Rpc):
    dataset = paid_dataset()
    for argument in ("payment_signature", "x_payment", "payment_proof"):
        bad = rpc.failure("get_dataset", {"dataset_id": dataset.id, argument: "bm90IGpzb24="})
        assert bad["error"]["code"] == "PAYMENT_INVALID" and bad["error"]["reason"]
        assert bad["paymentRequired"]["accepts"]


# --- compute tools and jobs ----------------------------------------------------------------------


def pay(rpc: Rpc, tool: str, arguments: dict[str, Any], required: dict[str, Any] | None = None):
    if required is None:
        required = rpc.failure(tool, arguments)["paymentRequired"]
    return rpc.call(tool, {**arguments, "payment_signature": sign_x402(required)})["result"]


def test_breeding_costs_exactly_10_usdc_and_returns_a_job(
    rpc: Rpc, http: httpx.Client, state: SandboxState
):
    challenge = rpc.failure("svc_breed_agent", {"target_task": "summarization"})
    assert challenge["error"]["code"] == "PAYMENT_REQUIRED"
    assert challenge["paymentRequired"]["accepts"][0]["amount"] == "10000000"
    balance = state.balance
    result = pay(rpc, "svc_breed_agent", {"target_task": "summarization"})
    assert result["isError"] is False
    started = result["structuredContent"]
    assert started["jobId"].startswith("job_") and started["status"] == "queued"
    assert started["chargedUsdc"] == "10.00" and state.balance == balance - 10
    assert started["job"]["params"]["target_task"] == "summarization"

    key = {"Authorization": f"Bearer {state.api_key}"}
    seen = [http.get(f"/api/jobs/{started['jobId']}", headers=key).json() for _ in range(3)]
    assert [job["status"] for job in seen] == ["running", "succeeded", "succeeded"]
    assert seen[-1]["result"]["metrics"]["task"] == "summarization"
    assert http.get(f"/api/jobs/{started['jobId']}").status_code == 401
    assert http.get("/api/jobs/job_unknown", headers=key).status_code == 404


def test_a_payment_for_another_amount_is_refused(rpc: Rpc, state: SandboxState):
    fifteen = rpc.failure("merge_models", {"config_yaml": MERGE_CONFIG})["paymentRequired"]
    balance = state.balance
    refused = pay(rpc, "svc_breed_agent", {}, required=fifteen)
    assert refused["isError"] is True
    assert refused["structuredContent"]["error"]["reason"] == "wrong_amount"
    ten = rpc.failure("svc_breed_agent", {})["paymentRequired"]
    refused = pay(rpc, "merge_models", {"config_yaml": MERGE_CONFIG}, required=ten)
    assert refused["structuredContent"]["error"]["reason"] == "wrong_amount"
    assert state.balance == balance


def test_merging_costs_exactly_15_usdc_and_returns_a_job(rpc: Rpc, state: SandboxState):
    balance = state.balance
    result = pay(rpc, "merge_models", {"config_yaml": MERGE_CONFIG})
    started = result["structuredContent"]
    assert started["chargedUsdc"] == "15.00" and state.balance == balance - 15
    assert started["job"]["params"]["merge_method"] == "ties"
    assert started["job"]["params"]["models"] == [
        "teknium/OpenHermes-2.5-Mistral-7B",
        "HuggingFaceH4/zephyr-7b-beta",
    ]


def test_a_job_also_advances_with_time(rpc: Rpc, state: SandboxState):
    clock, real = FakeClock(), state.jobs.clock
    state.jobs.clock = clock
    try:
        job = pay(rpc, "svc_breed_agent", {})["structuredContent"]["jobId"]
        assert state.jobs.peek(job)["status"] == "queued"
        clock.advance(5)
        assert state.jobs.peek(job)["status"] == "running"
        clock.advance(5)
        assert state.jobs.peek(job)["status"] == "succeeded"
    finally:
        state.jobs.clock = real


def test_a_job_is_seen_only_by_its_agent(rpc: Rpc, http: httpx.Client, state: SandboxState):
    job = pay(rpc, "svc_breed_agent", {})["structuredContent"]["jobId"]
    email = "other-agent@example.com"
    http.post("/api/agent/auth/send-otp", json={"email": email})
    code = state.accounts.outbox.latest_code(email)
    other = http.post("/api/agent/auth/verify-otp", json={"email": email, "otp_code": code})
    headers = {"Authorization": f"Bearer {other.json()['apiKey']}"}
    assert http.get(f"/api/jobs/{job}", headers=headers).status_code == 404


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ("merge_method: [unclosed", "not valid YAML"),
        ("- just\n- a list", "mapping"),
        ("merge_method: blend\nmodels: [{model: a/b}, {model: c/d}]", "merge_method"),
        ("merge_method: ties\nmodels: [{model: a/b}, {model: c/d}]", "base_model"),
        ("merge_method: slerp\nbase_model: a/b\nmodels: [{model: a/b}, {model: c/d}, {model: e/f}]",
         "exactly 2"),
        ("merge_method: linear\nmodels: []", "models"),
        ("merge_method: linear\nmodels: [{name: a/b}, {model: c/d}]", "model"),
        ("merge_method: linear\nmodels: [{model: a/b}, {model: c/d}]\ndtype: int4", "dtype"),
        ("merge_method: linear\nmodels: [{model: a/b, parameters: {weight: high}}, {model: c/d}]",
         "weight"),
        ("merge_method: linear\nmodels: [{model: a/b}, {model: c/d}]\nlayers: 3", "layers"),
    ],
)  # fmt: skip
def test_merge_config_is_validated_before_anything_is_charged(
    rpc: Rpc, state: SandboxState, config, words
):
    charges = len(state.charges)
    error = rpc.invalid("merge_models", {"config_yaml": config, "payment_signature": "x"})
    assert "config_yaml" in error["message"] and words in error["message"]
    assert len(state.charges) == charges


@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    [
        ("merge_models", {}, "config_yaml"),
        ("merge_models", {"config_yaml": ""}, "config_yaml"),
        ("merge_models", {"config_yaml": MERGE_CONFIG, "payment_proof": "x"}, "payment_proof"),
        ("svc_breed_agent", {"target_task": "Not A Task!"}, "target_task"),
        ("svc_breed_agent", {"target_task": 3}, "target_task"),
        ("svc_breed_agent", {"base_model": ""}, "base_model"),
        ("svc_breed_agent", {"gpus": 8}, "gpus"),
    ],
)
def test_compute_tool_arguments(rpc: Rpc, tool, arguments, named):
    assert named in rpc.invalid(tool, arguments)["message"]
