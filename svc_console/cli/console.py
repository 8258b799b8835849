"""The console itself: the TUI (no command), `demo`, `serve` (the broker headless) and `sandbox`
(the sandbox marketplace alone)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from svc_console.cli.arguments import port
from svc_console.cli.errors import EXIT_USAGE, CommandError


def add_commands(parser: argparse.ArgumentParser, commands: Any) -> None:
    parser.set_defaults(run=run_tui)
    _policy_option(parser)

    demo = commands.add_parser("demo", help="the console, the sandbox and simulated agents")
    demo.set_defaults(run=run_demo)
    _policy_option(demo)

    serve = commands.add_parser("serve", help="the broker headless: socket, pipeline, executor")
    serve.set_defaults(run=run_serve)
    _policy_option(serve)
    serve.add_argument(
        "--metrics",
        metavar="HOST:PORT",
        help="serve Prometheus metrics at http://HOST:PORT/metrics (off by default; loopback"
        " only unless --metrics-allow-remote)",
    )
    serve.add_argument(
        "--metrics-allow-remote",
        action="store_true",
        help="let --metrics listen on a non-loopback address: plain HTTP, no login, readable by"
        " anyone who reaches it",
    )

    sandbox = commands.add_parser("sandbox", help="the sandbox marketplace alone, on loopback")
    sandbox.add_argument("--host", default="127.0.0.1")
    sandbox.add_argument("--port", type=port, default=8402, help="0: any free port")
    sandbox.set_defaults(run=run_sandbox)


def _policy_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policy",
        action="append",
        metavar="FILE",
        default=argparse.SUPPRESS,  # a subcommand's absent option must not hide the top level's
        help="a SKILLS.md policy file in force (repeatable; default: SVC_CONSOLE_POLICY, then"
        " settings.toml [policy] files, then $SVC_CONSOLE_HOME/SKILLS.md if it exists)",
    )


def _metrics_at(args: argparse.Namespace) -> tuple[str, int] | None:
    """`--metrics HOST:PORT`, checked: loopback unless told otherwise."""
    if args.metrics is None:
        if args.metrics_allow_remote:
            raise CommandError("--metrics-allow-remote goes with --metrics HOST:PORT", EXIT_USAGE)
        return None
    from svc_console.cli.web import is_loopback

    host, _, port = args.metrics.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not host or not port.isdigit() or int(port) > 65535:
        raise CommandError("--metrics must be HOST:PORT, such as 127.0.0.1:9464", EXIT_USAGE)
    if not is_loopback(host) and not args.metrics_allow_remote:
        raise CommandError(
            f"--metrics {args.metrics}: {host} is not a loopback address, and metrics are plain"
            " HTTP with no login (the queue, agents' names, spend). Keep 127.0.0.1 and let"
            " Prometheus scrape through an SSH tunnel, or add --metrics-allow-remote if the"
            " network in between is yours",
            EXIT_USAGE,
        )
    return host, int(port)


def _runtime(*, demo: bool = False, policy: Sequence[str] = ()) -> Any:
    from svc_console.broker.config import BrokerConfig
    from svc_console.config import logs
    from svc_console.config.agents import agent_settings
    from svc_console.config.errors import SettingsError
    from svc_console.config.notify_settings import notify_settings
    from svc_console.config.operator_accounts import AccountsError, OperatorAccounts
    from svc_console.config.operator_settings import console_operator
    from svc_console.config.paths import resolve_paths
    from svc_console.config.policy_files import policy_files
    from svc_console.config.service import service_config
    from svc_console.config.slack_settings import slack_settings
    from svc_console.core.private_files import NotPrivate
    from svc_console.runtime import Runtime

    paths = resolve_paths()
    logs.configure(paths.logs)
    try:
        service = None if demo else service_config(paths)
        if demo and not policy:  # the demo's own SKILLS.md, with a brake at work
            from svc_console.demo import write_policy

            policy = [str(write_policy(paths.sandbox))]
        files, optional = policy_files(paths, policy)
        agents = agent_settings(paths.settings)
        notify = notify_settings(paths.settings)
        operator = console_operator(paths.settings)
        slack = slack_settings(paths.settings)
        # A broken accounts file is said before anything starts, not at the sockets' opening.
        OperatorAccounts(paths.operator_accounts).accounts()
    except (SettingsError, AccountsError, NotPrivate) as exc:
        raise CommandError(str(exc)) from None
    # The demo's requests wait ten minutes: long enough to read one while others arrive, short
    # enough to see one expire.
    config = BrokerConfig(pending_ttl_s=600.0) if demo else BrokerConfig()
    return Runtime(
        paths=paths,
        service=service,
        config=config,
        policy_files=files,
        policy_optional=optional,
        agent_settings=agents,
        notify=notify,
        slack_settings=slack,
        console_operator=operator,
    )


def run_tui(args: argparse.Namespace, after_start: Callable[..., Any] | None = None) -> int:
    from svc_console.core import collector

    collector.starting()  # until the console is ready to decide (core/collector.py)
    from svc_console.cli.attach import attached_console

    # A broker already running for this home (serve, or another console): attach to it. The
    # demo brings agents of its own, so it always runs its own broker.
    runtime = attached_console() if after_start is None else None
    if runtime is None:
        runtime = _runtime(demo=after_start is not None, policy=getattr(args, "policy", ()))
        runtime.launch_sandbox()  # its process starts while the TUI imports and paints
    from svc_console.tui.app import ConsoleApp

    app = ConsoleApp(runtime, after_start=after_start)
    app.run()
    _leave(app.return_code or 0)
    return app.return_code or 0


def _leave(code: int) -> None:
    """Exit without the interpreter's teardown. Everything that matters is done (the ledger
    closed, the terminal restored); what is left is freeing some thousands of modules' objects,
    a few hundred milliseconds during which the operator waits for the shell. Logs and standard
    streams are flushed first."""
    import logging
    import os

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def run_demo(args: argparse.Namespace) -> int:
    async def start_agents(runtime: Any) -> None:
        from svc_console.demo import prepare, run_agents

        await prepare(*runtime.service_address())
        await run_agents(runtime.paths.socket, paths=runtime.paths)

    return run_tui(args, after_start=start_agents)


def run_serve(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from svc_console.core import collector

    collector.starting()  # until the broker is up (core/collector.py)
    metrics_at = _metrics_at(args)
    runtime = _runtime(policy=getattr(args, "policy", ()))
    runtime.metrics_at = metrics_at

    async def serve() -> None:
        from svc_console.ledger import LedgerRefused
        from svc_console.market.client import import_now

        import_now()
        try:
            await runtime.start()
        except (OSError, LedgerRefused) as exc:
            raise CommandError(str(exc)) from None

        # Before the first line: a SIGTERM that follows the banner at once is a clean stop.
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        from svc_console.runtime import unsettled_notice

        for request in runtime.unsettled:
            print(f"svc-console: {unsettled_notice(request)}", file=sys.stderr, flush=True)
        market = runtime.market
        where = f"the sandbox at {market.base_url}" if market.sandbox else market.base_url
        print(f"svc-console: broker on {runtime.paths.socket}, speaking to {where}", flush=True)
        print(f"svc-console: operator socket {runtime.paths.operator_socket}", flush=True)
        if runtime.metrics is not None:
            print(f"svc-console: metrics at {runtime.metrics.url}", flush=True)
        if runtime.slack is not None:
            channel = runtime.slack.settings.channel
            print(f"svc-console: approvals from Slack, posted to channel {channel}", flush=True)
        _tell_policy_errors(runtime.policy)
        advice = same_user_advice(runtime)
        if advice is not None:
            print(f"svc-console: warning: {advice}", file=sys.stderr, flush=True)
        try:
            await stop.wait()
        finally:
            left = _left_pending(runtime)
            await runtime.stop()
            print(f"svc-console: stopped; {left}", flush=True)

    asyncio.run(serve())
    return 0


def same_user_advice(runtime: Any) -> str | None:
    """What `serve` says where agents of the operator's own user are accepted, from the
    credentials it started with: a passphrase already set, or operator accounts, are not advised
    again."""
    if runtime.agent_warning is None:
        return None
    import os

    said = (
        f"agents running as your own user (uid {os.getuid()}) are accepted: they can read every"
        " file you can."
    )
    if runtime.operators is not None and runtime.operators.any():
        guard = " Operator accounts' tokens guard decisions outside the console;"
    elif runtime.passphrase is not None and runtime.passphrase.is_set():
        guard = " The operator passphrase guards decisions outside the console;"
    else:
        guard = " Set an operator passphrase (svc-console operators passwd), and"
    return f"{said}{guard} run agents as another user (docs/security.md: Keeping agents apart)."


def _left_pending(runtime: Any) -> str:
    """What a stop leaves for the next start, in words."""
    from svc_console.core.states import State

    ledger = runtime.ledger
    waiting = ledger.count_in_states([State.pending])
    in_flight = ledger.count_in_states([State.approved, State.auto_approved, State.executing])
    funds = ledger.count_in_states([State.awaiting_funds])
    parts = [
        f"{waiting} request{'s' if waiting != 1 else ''} waiting for a decision" if waiting else "",
        f"{in_flight} approved call{'s' if in_flight != 1 else ''} not finished (checked at the"
        " next start, never paid twice)"
        if in_flight
        else "",
        f"{funds} waiting for funds" if funds else "",
    ]
    said = ", ".join(part for part in parts if part)
    return f"left pending: {said}" if said else "nothing left pending"


def _tell_policy_errors(policy: Any) -> None:
    """Headless, a broken policy is said on stderr at start and at every change, not only in the
    log: it fails closed (auto-approval suspended) and the operator must know."""
    if policy is None:
        return

    def tell(status: Any) -> None:
        if status.message:
            print(f"svc-console: {status.message}", file=sys.stderr, flush=True)
        elif status.state == "active":
            print(
                "svc-console: the policy is valid again and in force", file=sys.stderr, flush=True
            )

    if policy.status.message:
        tell(policy.status)
    policy.subscribe(tell)


def run_sandbox(args: argparse.Namespace) -> int:
    from svc_console.config import logs
    from svc_console.config.paths import resolve_paths
    from svc_console.sandbox.server import serve_forever

    paths = resolve_paths()
    logs.configure(paths.logs)
    try:
        serve_forever(args.host, args.port, paths.sandbox / "credentials.json")
    except OSError as exc:
        raise CommandError(f"cannot serve on {args.host}:{args.port}: {exc.strerror}") from None
    return 0
