"""`svc-console agent submit`: what an agent or a script uses to ask before spending."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from svc_console.cli.arguments import timeout, usdc
from svc_console.cli.errors import EXIT_BY_STATE, EXIT_USAGE, CommandError
from svc_console.cli.socket_client import call, connect


def add_commands(commands: Any) -> None:
    agent = commands.add_parser("agent", help="what an agent or a script uses").add_subparsers(
        title="agent commands", metavar="COMMAND", required=True
    )
    submit = agent.add_parser("submit", help="ask to spend; --wait blocks until the outcome")
    submit.add_argument("--endpoint", help="market endpoint id (kind market_call)")
    submit.add_argument("--dataset", help="dataset id (kind dataset)")
    submit.add_argument(
        "--kind",
        default="market_call",
        choices=["market_call", "dataset", "breed_agent", "merge_models"],
    )
    submit.add_argument("--inputs", required=True, help="the planned inputs, a JSON object")
    submit.add_argument("--purpose", required=True, help="why the agent wants this, for people")
    submit.add_argument(
        "--agent",
        help="the agent's name (default: the one SVC_AGENT_TOKEN belongs to; without a token,"
        " cli, accepted only where enrolment is open)",
    )
    submit.add_argument(
        "--max-usdc", type=usdc, help="the most the agent is willing to pay (a plain decimal)"
    )
    submit.add_argument("--idempotency-key", help="the same key returns the same request")
    submit.add_argument("--wait", action="store_true", help="block until the request ends")
    submit.add_argument("--timeout", type=timeout, help="with --wait: give up after S seconds")
    submit.add_argument("--json", action="store_true", help="print the request as JSON")
    submit.set_defaults(run=run_submit)


def run_submit(args: argparse.Namespace) -> int:
    try:
        inputs = json.loads(args.inputs)
    except ValueError as exc:
        raise CommandError(f"--inputs is not valid JSON: {exc}", EXIT_USAGE) from None
    if not isinstance(inputs, dict):
        raise CommandError("--inputs must be a JSON object", EXIT_USAGE)
    import os

    name = args.agent or (None if os.environ.get("SVC_AGENT_TOKEN") else "cli")
    agent = connect(name)
    with agent:
        ticket = call(
            lambda: agent.submit(
                kind=args.kind,
                endpoint_id=args.endpoint,
                dataset_id=args.dataset,
                inputs=inputs,
                purpose=args.purpose,
                max_usdc=args.max_usdc,
                idempotency_key=args.idempotency_key,
            )
        )
        if not args.wait:
            # Back once intake is over: a request rejected or denied at once is an error now,
            # not a `received` that says nothing.
            request = call(lambda: _past_intake(agent, ticket["request_id"]))
            _show(request if args.json else None, _describe(request))
            return EXIT_BY_STATE.get(request["state"], 0)
        if not args.json:
            print(f"{ticket['request_id']} submitted; waiting for a decision…", file=sys.stderr)
        request = call(lambda: agent.wait_for_outcome(ticket["request_id"], args.timeout))
    _show(request if args.json else None, _describe(request))
    return EXIT_BY_STATE.get(request["state"], 1 if args.timeout is None else 9)


INTAKE_WAIT_S = 60.0
_INTAKE = ("received", "inspecting")


def _past_intake(agent: Any, request_id: str) -> dict[str, Any]:
    """The request once it has left intake (or as it stands after INTAKE_WAIT_S)."""
    import time

    deadline = time.monotonic() + INTAKE_WAIT_S
    request = agent.get(request_id)
    while request["state"] in _INTAKE and time.monotonic() < deadline:
        left = max(0.1, deadline - time.monotonic())
        # `seen`: a change between the read and the wait is answered at once, not missed.
        said = {"request_id": request_id, "timeout_s": left, "until": "change"}
        request = agent.call("spend.wait", {**said, "seen": request["state"]})
    return request


def _show(as_json: Any, text: str) -> None:
    # JSON output escapes every control character, so it is safe to print as it is.
    print(json.dumps(as_json, indent=2) if as_json is not None else text)


def _describe(request: dict[str, Any]) -> str:
    from svc_console.core.sanitize import inert

    lines = [f"{request['id']} {request['state']}"]
    if request.get("reason"):
        lines.append(f"reason: {inert(request['reason'], 500)}")
    outcome = request.get("outcome")
    if outcome:
        lines.append(f"charged: {outcome['charged_usdc']} USDC on {inert(outcome['chain'], 20)}")
        lines.append(inert(outcome["body"], 20_000))
    return "\n".join(lines)
