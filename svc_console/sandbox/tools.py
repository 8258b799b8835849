"""The nine MCP tools of SPEC.md: their argument models (input schemas), annotations and what each
call does. The JSON-RPC framing, authentication and batching are `sandbox.mcp`'s; the merge
configuration `merge_models` checks is `sandbox.merge_config`'s.

Every answer is a tool result with the same JSON twice: a text block (for clients that only read
`content`) and `structuredContent`. Business failures (payment required, payment invalid, wallet
unfunded, a dataset that does not exist, a refused one-time code) are results with `isError: true`
and `structuredContent = {"error": {"code", "message", ...}, ..., "sandbox": true}`; arguments
that break the schema raise `queries.InvalidArguments` (JSON-RPC -32602) before anything runs or
is charged.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from pydantic import BaseModel, Field, field_validator

from svc_console.core.catalogue import ToolInfo
from svc_console.core.money import format_usdc
from svc_console.sandbox.accounts import (
    CODE_LIFETIME_S,
    AccountError,
    Caller,
    check_code,
    normal_email,
)
from svc_console.sandbox.datasets import Dataset, dataset_catalog
from svc_console.sandbox.merge_config import MERGE_METHODS, parse_merge_config
from svc_console.sandbox.publishing import board_for
from svc_console.sandbox.queries import (
    TOOLS_SUMMARY,
    Arguments,
    DatasetQuery,
    GetDatasetArgs,
    MarketQuery,
    TryDatasetArgs,
    parse_arguments,
    search_market,
)
from svc_console.sandbox.x402 import PaymentInvalid, X402Gate

if TYPE_CHECKING:
    from svc_console.sandbox.catalog import Catalog
    from svc_console.sandbox.state import SandboxState

BREED_PRICE_USDC = Decimal(10)
MERGE_PRICE_USDC = Decimal(15)
MAX_SIGNATURE_CHARS = 16_384
MAX_CONFIG_YAML_CHARS = 64 * 1024


class ToolFailure(Exception):
    """A business failure: answered as a tool result with `isError: true`."""

    def __init__(self, code: str, message: str, **extra: Any):
        super().__init__(message)
        self.code, self.message, self.extra = code, message, extra

    def structured(self) -> dict[str, Any]:
        details = {k: v for k, v in self.extra.items() if k != "paymentRequired"}
        body: dict[str, Any] = {"error": {"code": self.code, "message": self.message, **details}}
        if "paymentRequired" in self.extra:
            body["paymentRequired"] = self.extra["paymentRequired"]
        return {**body, "sandbox": True}


def tool_result(structured: dict[str, Any], *, is_error: bool = False) -> dict[str, Any]:
    text = json.dumps(structured, separators=(",", ":"), ensure_ascii=False)
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": is_error,
    }


# --- argument models of the tools sandbox.queries does not define ------------------------------

_SIGNATURE = "base64 x402 v2 PAYMENT-SIGNATURE, made by signing this tool's 402 challenge"


class AuthStartArgs(Arguments):
    email: str = Field(max_length=254, description="the operator's e-mail address")

    @field_validator("email")
    @classmethod
    def _email(cls, value: str) -> str:
        return normal_email(value)


class AuthCompleteArgs(Arguments):
    email: str = Field(max_length=254, description="the same address as in svc_auth_start")
    otp_code: str = Field(pattern=r"^\d{6}$", description="the 6-digit code from the e-mail")

    @field_validator("email")
    @classmethod
    def _email(cls, value: str) -> str:
        return normal_email(value)

    @field_validator("otp_code")
    @classmethod
    def _code(cls, value: str) -> str:
        return check_code(value)


class BreedAgentArgs(Arguments):
    target_task: str = Field(
        "text-classification",
        pattern=r"^[a-z0-9][a-z0-9-]{1,63}$",
        description="the NLP task to optimise, e.g. text-classification or summarization",
        examples=["text-classification", "summarization", "question-answering"],
    )
    base_model: str | None = Field(
        None, min_length=1, max_length=200, description="optional hint: the model to start from"
    )
    payment_signature: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_SIGNATURE_CHARS,
        description=_SIGNATURE + "; must cover exactly 10 USDC",
    )


class MergeModelsArgs(Arguments):
    config_yaml: str = Field(
        min_length=1,
        max_length=MAX_CONFIG_YAML_CHARS,
        description=(
            "a model-merge configuration in YAML: merge_method (one of "
            + ", ".join(MERGE_METHODS)
            + "), models (a list of {model: org/name, parameters?: {...}}), base_model (needed"
            " by every method but linear and passthrough), parameters?, dtype? (float16,"
            " bfloat16, float32)"
        ),
    )
    payment_signature: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_SIGNATURE_CHARS,
        description=_SIGNATURE + "; must cover exactly 15 USDC",
    )

    @field_validator("config_yaml")
    @classmethod
    def _config(cls, value: str) -> str:
        parse_merge_config(value)
        return value


# --- the tools ---------------------------------------------------------------------------------


@dataclass
class Context:
    """What one tool call may use: the sandbox, the caller (None for the auth tools without a
    credential) and the address clients reach the sandbox at."""

    state: SandboxState
    listing: Catalog
    gate: X402Gate
    base_url: str
    caller: Caller | None


@dataclass(frozen=True)
class Tool:
    """One tool: its summary (`queries.TOOLS_SUMMARY`: category, cost, description, read-only and
    destructive flags, shared with `/api/content/tools`), argument model and implementation."""

    title: str
    summary: ToolInfo
    args: type[BaseModel]
    run: Callable[[Context, Any], dict[str, Any]]

    @property
    def name(self) -> str:
        return self.summary.name

    @property
    def needs_auth(self) -> bool:
        return self.summary.auth != "none"

    def describe(self) -> dict[str, Any]:
        """The tool as `tools/list` returns it."""
        s = self.summary
        auth = (
            "No credential needed."
            if not self.needs_auth
            else "Needs an sk_live_ API key or an OAuth token with scope mcp:tools."
        )
        return {
            "name": s.name,
            "title": self.title,
            "description": f"{s.description} Cost: {s.cost}. {auth}",
            "inputSchema": self.args.model_json_schema(),
            "annotations": {
                "title": self.title,
                "readOnlyHint": s.read_only,
                "destructiveHint": s.destructive,
                "idempotentHint": s.read_only,
                # Discovery reads a closed catalogue; the rest reach out (e-mail, payment, GPUs).
                "openWorldHint": not s.read_only,
            },
        }


def _auth_start(ctx: Context, args: AuthStartArgs) -> dict[str, Any]:
    try:
        sent = ctx.state.accounts.send_code(args.email, "login")
    except AccountError as exc:
        raise ToolFailure(exc.code, exc.message, **exc.details) from None
    return {
        "sent": True,
        "email": sent.email,
        "expiresInSeconds": CODE_LIFETIME_S,
        "delivery": "sandbox outbox (no e-mail leaves this machine)",
        "next": "call svc_auth_complete with the same email and the 6-digit otp_code",
        "sandbox": True,
    }


def _auth_complete(ctx: Context, args: AuthCompleteArgs) -> dict[str, Any]:
    try:
        login = ctx.state.accounts.login(args.email, args.otp_code)
    except AccountError as exc:
        raise ToolFailure(exc.code, exc.message, **exc.details) from None
    answer: dict[str, Any] = {
        "apiKey": login.api_key,
        "agentId": login.agent_id,
        "mcpServerUrl": f"{ctx.base_url}/api/mcp",
        "firstLogin": login.wallet_config is not None,
    }
    if login.wallet_config is not None:
        answer["walletConfig"] = login.wallet_config
    return {**answer, "sandbox": True}


def _published(ctx: Context) -> frozenset[str]:
    return board_for(ctx.state, dataset_catalog()).published_drafts()


def _find_dataset(ctx: Context, dataset_id: str) -> Dataset:
    """A listed dataset (seeded drafts count once published), or ToolFailure NOT_FOUND."""
    catalog = dataset_catalog()
    dataset = catalog.get(dataset_id)
    if dataset is None and dataset_id in _published(ctx):
        dataset = catalog.find(dataset_id)
    if dataset is None:
        raise ToolFailure("NOT_FOUND", "no dataset with that id", datasetId=dataset_id[:200])
    return dataset


def _datasets(ctx: Context, args: DatasetQuery) -> dict[str, Any]:
    listings, total = dataset_catalog().query(args, also=_published(ctx))
    return {"datasets": listings, "total": total, "limit": args.limit, "sandbox": True}


def _market(ctx: Context, args: MarketQuery) -> dict[str, Any]:
    records, total = search_market(ctx.listing, args)
    return {
        "apis": [record.model_dump(mode="json") for record in records],
        "total": total,
        "limit": args.limit,
        "sandbox": True,
    }


def _try_dataset(ctx: Context, args: TryDatasetArgs) -> dict[str, Any]:
    dataset = _find_dataset(ctx, args.dataset_id)
    return {**dataset_catalog().trial(dataset.id, args.required_fields), "sandbox": True}


def _pay(
    ctx: Context,
    required: dict[str, Any],
    price: Decimal,
    signature: str | None,
    *,
    charge_for: str,
    **legacy: str | None,
) -> Any:
    """Settles through the x402 gate, or raises the ToolFailure an agent can act on."""
    if signature is None and not any(legacy.values()):
        raise ToolFailure(
            "PAYMENT_REQUIRED",
            "this call is paid: sign the paymentRequired challenge and call again with"
            " payment_signature",
            paymentRequired=required,
        )
    try:
        return ctx.gate.settle(
            required, payment_signature=signature, charge_for=charge_for, **legacy
        )
    except PaymentInvalid as exc:
        if exc.reason == "insufficient_funds":
            balance = ctx.state.balance
            raise ToolFailure(
                "WALLET_UNFUNDED",
                f"the wallet holds {format_usdc(balance)} USDC and this call costs"
                f" {format_usdc(price)} USDC; fund it and retry",
                fundingUrl=ctx.state.funding_url(ctx.base_url),
                balanceUsdc=format_usdc(balance),
                requiredUsdc=format_usdc(price),
                paymentRequired=required,
            ) from None
        raise ToolFailure(
            "PAYMENT_INVALID", exc.message, reason=exc.reason, paymentRequired=required
        ) from None


def _get_dataset(ctx: Context, args: GetDatasetArgs) -> dict[str, Any]:
    catalog = dataset_catalog()
    dataset = _find_dataset(ctx, args.dataset_id)
    if not dataset.paid:
        return {
            "datasetId": dataset.id,
            "tier": dataset.tier,
            "chargedUsdc": "0.00",
            "content": catalog.content(dataset.id),
            "sandbox": True,
        }
    resource = f"{ctx.base_url}/api/datasets/{quote(dataset.id, safe='')}/access"
    price = ctx.gate.runtime_amount(dataset.price_usdc)
    required = ctx.gate.required(resource, price, f"Dataset {dataset.id} ({dataset.tier} tier)")
    settlement = _pay(
        ctx,
        required,
        price,
        args.payment_signature,
        charge_for=f"dataset:{dataset.id}",  # as the REST access route records it
        payment_proof=args.payment_proof,
        x_payment=args.x_payment,
    )
    return {
        "datasetId": dataset.id,
        "tier": dataset.tier,
        # A re-presented payment_proof re-delivers what it bought and charges nothing again.
        "chargedUsdc": "0.00" if settlement.proof else format_usdc(settlement.amount_usdc),
        "payment": settlement.as_json(),
        "content": catalog.content(dataset.id),
        "sandbox": True,
    }


def _job(
    ctx: Context, tool: str, price: Decimal, params: dict[str, Any], signature: str | None
) -> dict[str, Any]:
    caller = ctx.caller
    if caller is None:  # a real check, before anything is charged: it must hold under -O too
        raise ToolFailure(
            "UNAUTHORIZED", f"{tool} needs an sk_live_ API key or an OAuth token (mcp:tools)"
        )
    resource = f"{ctx.base_url}/api/mcp/tools/{tool}"
    purpose = "GPU fine-tuning job" if tool == "svc_breed_agent" else "model-merge job"
    price = ctx.gate.runtime_amount(price)
    required = ctx.gate.required(resource, price, f"{purpose} ({format_usdc(price)} USDC)")
    settlement = _pay(ctx, required, price, signature, charge_for=tool)
    job = ctx.state.jobs.create(
        tool,
        agent_id=caller.agent_id,
        params=params,
        charged_usdc=format_usdc(settlement.amount_usdc),
        payment=settlement.as_json(),
    )
    return {
        "jobId": job["id"],
        "status": job["status"],
        "chargedUsdc": job["chargedUsdc"],
        "payment": job["payment"],
        "statusUrl": f"{ctx.base_url}/api/jobs/{job['id']}",
        "job": job,
        "sandbox": True,
    }


def _breed(ctx: Context, args: BreedAgentArgs) -> dict[str, Any]:
    params = {"target_task": args.target_task, "base_model": args.base_model}
    return _job(ctx, "svc_breed_agent", BREED_PRICE_USDC, params, args.payment_signature)


def _merge(ctx: Context, args: MergeModelsArgs) -> dict[str, Any]:
    config = parse_merge_config(args.config_yaml)
    params = {
        "merge_method": config.merge_method,
        "models": [m.model for m in config.models],
        "base_model": config.base_model,
        "dtype": config.dtype,
    }
    return _job(ctx, "merge_models", MERGE_PRICE_USDC, params, args.payment_signature)


_TITLES_AND_IMPLEMENTATIONS: dict[str, tuple[str, type[BaseModel], Callable[..., Any]]] = {
    "svc_auth_start": ("Start sign-in", AuthStartArgs, _auth_start),
    "svc_auth_complete": ("Complete sign-in", AuthCompleteArgs, _auth_complete),
    "list_datasets": ("List datasets", DatasetQuery, _datasets),
    "search_datasets": ("Search datasets", DatasetQuery, _datasets),
    "list_market_apis": ("List market APIs", MarketQuery, _market),
    "try_dataset": ("Try a dataset", TryDatasetArgs, _try_dataset),
    "get_dataset": ("Get a dataset", GetDatasetArgs, _get_dataset),
    "svc_breed_agent": ("Breed an agent (GPU fine-tuning)", BreedAgentArgs, _breed),
    "merge_models": ("Merge models", MergeModelsArgs, _merge),
}
TOOLS: dict[str, Tool] = {
    summary.name: Tool(
        _TITLES_AND_IMPLEMENTATIONS[summary.name][0],
        summary,
        *_TITLES_AND_IMPLEMENTATIONS[summary.name][1:],
    )
    for summary in TOOLS_SUMMARY
}


def call(ctx: Context, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Runs one tool: a tool result, or raises queries.InvalidArguments (-32602)."""
    tool = TOOLS[name]
    args = parse_arguments(tool.args, arguments)  # InvalidArguments names each argument
    try:
        structured = tool.run(ctx, args)
    except ToolFailure as failure:
        return tool_result(failure.structured(), is_error=True)
    return tool_result(structured)
