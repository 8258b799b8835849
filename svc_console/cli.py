"""The command line: one entry point, `svc-console`, with a subcommand per job.

Imports are lazy (inside each command) so `--help` and `agent submit` start fast. Errors are one
line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

# `agent submit --wait` exit codes: scripts depend on them (DESIGN.md, Command line).
EXIT_BY_STATE = {
    "succeeded": 0,
    "denied": 3,
    "expired": 4,
    "failed": 5,
    "cancelled": 6,
    "rejected": 7,
    "unknown": 8,
}
EXIT_USAGE = 2


class CommandError(Exception):
    """A failure to report in one line."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="svc-console",
        description="Approve, deny and audit what AI agents spend on the Agent Data and API "
        "Marketplace. With no command: the console (TUI).",
    )
    from svc_console import __version__

    parser.add_argument("--version", action="version", version=f"svc-console {__version__}")
    parser.set_defaults(run=_run_tui)
    _policy_option(parser)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    demo = commands.add_parser("demo", help="the console, the sandbox and simulated agents")
    demo.set_defaults(run=_run_demo)
    _policy_option(demo)

    serve = commands.add_parser("serve", help="the broker headless: socket, pipeline, executor")
    serve.set_defaults(run=_run_serve)
    _policy_option(serve)

    sandbox = commands.add_parser("sandbox", help="the sandbox marketplace alone, on loopback")
    sandbox.add_argument("--host", default="127.0.0.1")
    sandbox.add_argument("--port", type=int, default=8402)
    sandbox.set_defaults(run=_run_sandbox)

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
    submit.add_argument("--agent", default="cli", help="the agent's name (default: cli)")
    submit.add_argument("--max-usdc", help="the most the agent is willing to pay")
    submit.add_argument("--idempotency-key", help="the same key returns the same request")
    submit.add_argument("--wait", action="store_true", help="block until the request ends")
    submit.add_argument("--timeout", type=float, help="with --wait: give up after S seconds")
    submit.add_argument("--json", action="store_true", help="print the request as JSON")
    submit.set_defaults(run=_run_submit)

    approvals = commands.add_parser(
        "approvals", help="headless decisions (same rules as the TUI)"
    ).add_subparsers(title="approvals commands", metavar="COMMAND", required=True)
    listing = approvals.add_parser("list", help="requests waiting for a decision")
    listing.add_argument("--history", action="store_true", help="decided requests instead")
    listing.add_argument("--limit", type=int, default=100)
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(run=_run_list)
    approve = approvals.add_parser("approve", help="approve a pending request")
    approve.add_argument("request_id")
    approve.add_argument(
        "--confirm-amount", help="the amount, typed, when the request is above the threshold"
    )
    approve.add_argument("--note")
    approve.set_defaults(run=_run_approve)
    deny = approvals.add_parser("deny", help="deny a pending request")
    deny.add_argument("request_id")
    deny.add_argument("--reason", required=True)
    deny.set_defaults(run=_run_deny)

    from svc_console import onboarding_cli

    onboarding_cli.add_commands(commands, CommandError)
    from svc_console.audit_cli import add_commands as add_audit_commands

    add_audit_commands(commands, CommandError)
    from svc_console.policy_cli import add_commands as add_policy_commands

    add_policy_commands(commands)
    from svc_console.usage_cli import add_commands as add_usage_commands

    add_usage_commands(commands, CommandError)
    return parser


def _policy_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policy",
        action="append",
        metavar="FILE",
        default=argparse.SUPPRESS,  # a subcommand's absent option must not hide the top level's
        help="a SKILLS.md policy file in force (repeatable; default: SVC_CONSOLE_POLICY, then"
        " settings.toml [policy] files, then $SVC_CONSOLE_HOME/SKILLS.md if it exists)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except CommandError as exc:
        print(f"svc-console: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


# -- the console --------------------------------------------------------------------------------


def _runtime(*, demo: bool = False, policy: Sequence[str] = ()) -> Any:
    from svc_console import logs
    from svc_console.broker import BrokerConfig
    from svc_console.runtime import Runtime
    from svc_console.settings import SettingsError, policy_files, resolve_paths, service_config

    paths = resolve_paths()
    logs.configure(paths.logs)
    try:
        service = None if demo else service_config(paths)
        files, optional = policy_files(paths, policy)
    except SettingsError as exc:
        raise CommandError(str(exc)) from None
    # The demo's requests expire in two minutes, so a newcomer sees expiry too.
    config = BrokerConfig(pending_ttl_s=120.0) if demo else BrokerConfig()
    return Runtime(
        paths=paths, service=service, config=config, policy_files=files, policy_optional=optional
    )


def _run_tui(args: argparse.Namespace, after_start: Callable[..., Any] | None = None) -> int:
    from svc_console.tui.app import ConsoleApp

    runtime = _runtime(demo=after_start is not None, policy=getattr(args, "policy", ()))
    app = ConsoleApp(runtime, after_start=after_start)
    app.run()
    return app.return_code or 0


def _run_demo(args: argparse.Namespace) -> int:
    async def start_agents(runtime: Any) -> None:
        from svc_console.demo import run_agents

        await run_agents(runtime.paths.socket)

    return _run_tui(args, after_start=start_agents)


def _run_serve(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    runtime = _runtime(policy=getattr(args, "policy", ()))

    async def serve() -> None:
        from svc_console.ledger import LedgerLocked

        try:
            await runtime.start()
        except (OSError, LedgerLocked) as exc:
            raise CommandError(str(exc)) from None

        from svc_console.runtime import unsettled_notice

        for request in runtime.unsettled:
            print(f"svc-console: {unsettled_notice(request)}", file=sys.stderr, flush=True)
        market = runtime.market
        where = f"the sandbox at {market.base_url}" if market.sandbox else market.base_url
        print(f"svc-console: broker on {runtime.paths.socket}, speaking to {where}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        try:
            await stop.wait()
        finally:
            await runtime.stop()

    asyncio.run(serve())
    return 0


def _run_sandbox(args: argparse.Namespace) -> int:
    from svc_console import logs
    from svc_console.sandbox.server import serve_forever
    from svc_console.settings import resolve_paths

    paths = resolve_paths()
    logs.configure(paths.logs)
    try:
        serve_forever(args.host, args.port, paths.sandbox / "credentials.json")
    except OSError as exc:
        raise CommandError(f"cannot serve on {args.host}:{args.port}: {exc.strerror}") from None
    return 0


# -- agents and operators over the socket -------------------------------------------------------


def _connect(name: str, *, operator: bool = False) -> Any:
    from svc_console.agent import Agent, NotConnected
    from svc_console.settings import SettingsError, read_private, resolve_paths

    paths = resolve_paths()
    token = None
    if operator:
        try:
            token = read_private(paths.operator_token).strip()
        except FileNotFoundError:
            raise CommandError(
                "no operator token: start the console (svc-console serve) first", EXIT_USAGE
            ) from None
        except SettingsError as exc:
            raise CommandError(str(exc), EXIT_USAGE) from None
    agent = Agent(name, paths.socket, token=token)
    try:
        agent.connect()
    except NotConnected as exc:
        raise CommandError(f"{exc.message}; is svc-console running?", EXIT_USAGE) from None
    return agent


def _call(action: Callable[[], Any]) -> Any:
    from svc_console.agent import AgentError

    try:
        return action()
    except AgentError as exc:
        raise CommandError(exc.message, EXIT_USAGE) from None


def _run_submit(args: argparse.Namespace) -> int:
    try:
        inputs = json.loads(args.inputs)
    except ValueError as exc:
        raise CommandError(f"--inputs is not valid JSON: {exc}", EXIT_USAGE) from None
    if not isinstance(inputs, dict):
        raise CommandError("--inputs must be a JSON object", EXIT_USAGE)
    agent = _connect(args.agent)
    with agent:
        ticket = _call(
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
            _show(ticket if args.json else None, f"{ticket['request_id']} {ticket['state']}")
            return 0
        if not args.json:
            print(f"{ticket['request_id']} submitted; waiting for a decision…", file=sys.stderr)
        request = _call(lambda: agent.wait_for_outcome(ticket["request_id"], args.timeout))
    _show(request if args.json else None, _describe(request))
    return EXIT_BY_STATE.get(request["state"], 1 if args.timeout is None else 9)


def _run_list(args: argparse.Namespace) -> int:
    view = "history" if args.history else "pending"
    with _connect("operator-cli", operator=True) as agent:
        requests = _call(lambda: agent.call("approvals.list", {"view": view, "limit": args.limit}))
    if args.json:
        print(json.dumps(requests, indent=2))
        return 0
    if not requests:
        print(f"no {view} requests")
    for request in requests:
        print(_row(request))
    return 0


def _run_approve(args: argparse.Namespace) -> int:
    params = {"request_id": args.request_id, "confirm_amount": args.confirm_amount}
    if args.note:
        params["note"] = args.note
    from svc_console.agent import AgentError

    with _connect("operator-cli", operator=True) as agent:
        try:
            request = agent.call(
                "approvals.approve", {k: v for k, v in params.items() if v is not None}
            )
        except AgentError as exc:
            if exc.reason == "confirmation_required":
                amount = exc.data.get("amount")
                raise CommandError(
                    f"{args.request_id} may cost {amount} USDC: to approve, type the amount:"
                    f" --confirm-amount {amount}",
                    EXIT_USAGE,
                ) from None
            raise CommandError(exc.message, EXIT_USAGE) from None
    print(f"{request['id']} {request['state']}")
    return 0


def _run_deny(args: argparse.Namespace) -> int:
    params = {"request_id": args.request_id, "reason": args.reason}
    with _connect("operator-cli", operator=True) as agent:
        request = _call(lambda: agent.call("approvals.deny", params))
    print(f"{request['id']} {request['state']}")
    return 0


# -- printing untrusted data ------------------------------------------------------------------


def _show(as_json: Any, text: str) -> None:
    # JSON output escapes every control character, so it is safe to print as it is.
    print(json.dumps(as_json, indent=2) if as_json is not None else text)


def _row(request: dict[str, Any]) -> str:
    from svc_console.core.sanitize import inert_line

    endpoint = request.get("endpoint") or {}
    estimate = request.get("estimate") or {}
    price = estimate.get("amount_usdc", "?")
    if estimate.get("max_usdc") and estimate.get("max_usdc") != estimate.get("min_usdc"):
        price = f"{estimate.get('min_usdc')}-{estimate.get('max_usdc')}"
    return "  ".join(
        [
            request["id"],
            request["state"],
            inert_line(request["agent"], 24),
            inert_line(endpoint.get("name") or request.get("endpoint_id") or "-", 30),
            f"{price} USDC",
            inert_line(request["purpose"], 50),
        ]
    )


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
