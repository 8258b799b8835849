"""The bridge's tools, as an MCP host lists them: the service's free tools under their own names
and schemas, its paid tools with a required `purpose` (and no payment argument: the console
pays), `call_market_api` for pay-per-call APIs, and `job_status` for compute jobs.

A paid tool's call becomes a spend request (`submission`); nothing here talks to anyone.
"""

from __future__ import annotations

import copy
from typing import Any

FREE = ("list_datasets", "search_datasets", "list_market_apis", "try_dataset")
PAID_KINDS = {
    "get_dataset": "dataset",
    "svc_breed_agent": "breed_agent",
    "merge_models": "merge_models",
}
MARKET_CALL = "call_market_api"
JOB_STATUS = "job_status"
# What the console signs itself: an agent never passes a payment.
PAYMENT_ARGUMENTS = ("payment_signature", "payment")

PAYS = (
    "Costs USDC. The console pays it from the operator's wallet, only after an operator"
    " approves (or a written policy does); the call waits for that decision."
)
PURPOSE = {
    "type": "string",
    "minLength": 1,
    "maxLength": 2000,
    "description": "why this is worth paying for, in a sentence the operator reads",
}
MAX_USDC = {
    "type": "string",
    "pattern": r"^\d+(\.\d{1,6})?$",
    "description": "the most you accept to pay, in USDC (the request is refused above it)",
}


def listed(service_tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every tool the bridge offers, as `tools/list` entries (name, description, inputSchema,
    annotations)."""
    by_name = {tool["name"]: tool for tool in service_tools}
    tools = [_free(by_name[name]) for name in FREE if name in by_name]
    tools += [_paid(by_name[name]) for name in PAID_KINDS if name in by_name]
    tools.append(_market_call())
    tools.append(_job_status())
    return tools


def _free(tool: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": tool["name"],
        "title": tool.get("title"),
        "description": f"{tool.get('description', '')} Free: answered through svc-console.".strip(),
        "inputSchema": tool.get("inputSchema") or {"type": "object"},
        "annotations": {"readOnlyHint": True, "openWorldHint": True},
    }


def _paid(tool: dict[str, Any]) -> dict[str, Any]:
    schema = copy.deepcopy(tool.get("inputSchema") or {"type": "object"})
    properties = schema.setdefault("properties", {})
    for name in PAYMENT_ARGUMENTS:
        properties.pop(name, None)
    properties["purpose"] = PURPOSE
    properties["max_usdc"] = MAX_USDC
    required = [r for r in schema.get("required", []) if r not in PAYMENT_ARGUMENTS]
    schema["required"] = [*required, "purpose"]
    return {
        "name": tool["name"],
        "title": tool.get("title"),
        "description": f"{PAYS} {tool.get('description', '')}".strip(),
        "inputSchema": schema,
        "annotations": {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True},
    }


def _market_call() -> dict[str, Any]:
    return {
        "name": MARKET_CALL,
        "title": "Call a pay-per-call market API",
        "description": f"{PAYS} Calls one market API endpoint (list_market_apis finds them) with"
        " its inputs, and returns the provider's answer.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "endpoint_id": {"type": "string", "minLength": 1, "maxLength": 200},
                "inputs": {"type": "object", "description": "the endpoint's inputs"},
                "purpose": PURPOSE,
                "max_usdc": MAX_USDC,
            },
            "required": ["endpoint_id", "inputs", "purpose"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True},
    }


def _job_status() -> dict[str, Any]:
    return {
        "name": JOB_STATUS,
        "title": "Follow a compute job",
        "description": "Free. The status of the GPU job a svc_breed_agent or merge_models call"
        " started, by the request_id that call returned.",
        "inputSchema": {
            "type": "object",
            "properties": {"request_id": {"type": "string", "minLength": 1, "maxLength": 100}},
            "required": ["request_id"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": True},
    }


class BadArguments(ValueError):
    """A paid tool's arguments that cannot become a spend request; the message says why."""


def submission(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The `spend.submit` params of a paid tool's call."""
    args = dict(arguments)
    purpose = args.pop("purpose", None)
    if not isinstance(purpose, str) or not purpose.strip():
        raise BadArguments("purpose is required: say why this is worth paying for")
    max_usdc = args.pop("max_usdc", None)
    if tool == MARKET_CALL:
        endpoint_id, inputs = args.pop("endpoint_id", None), args.pop("inputs", None)
        if not isinstance(endpoint_id, str) or not isinstance(inputs, dict):
            raise BadArguments("call_market_api needs endpoint_id (text) and inputs (an object)")
        if args:
            raise BadArguments(f"call_market_api takes no {', '.join(sorted(args))}")
        params = {"kind": "market_call", "endpoint_id": endpoint_id, "inputs": inputs}
    else:
        params = {"kind": PAID_KINDS[tool], "inputs": args}
        if tool == "get_dataset":
            dataset_id = args.get("dataset_id")
            if not isinstance(dataset_id, str) or not dataset_id:
                raise BadArguments("get_dataset needs dataset_id")
            params["dataset_id"] = dataset_id
    params["purpose"] = purpose
    if max_usdc is not None:
        params["max_usdc"] = str(max_usdc)
    return params
