"""`svc-console web`: the console in a browser, attached to the broker running for this home.

It listens on loopback only unless `--allow-remote` is given: the page and its websocket are
plain HTTP, so on any other interface the login token and every keystroke (a typed amount, the
operator passphrase) would cross the network readable by anyone on the path. From a phone or
another machine, reach the loopback address through an SSH tunnel (docs/team.md: The console in a
browser). The web console never starts a broker: start `svc-console serve` (or a console) first.
"""

from __future__ import annotations

import argparse
import ipaddress
import shlex
import sys
from typing import Any

from svc_console.cli.arguments import port
from svc_console.cli.errors import EXIT_USAGE, CommandError

DEFAULT_PORT = 8470


def add_commands(commands: Any) -> None:
    web = commands.add_parser(
        "web", help="the console in a browser (textual-serve), attached to the running broker"
    )
    web.add_argument("--host", default="127.0.0.1", help="loopback only unless --allow-remote")
    web.add_argument("--port", type=port, default=DEFAULT_PORT, help="0: any free port")
    web.add_argument(
        "--allow-remote",
        action="store_true",
        help="listen on a non-loopback address: plain HTTP, readable on the network (prefer an"
        " SSH tunnel)",
    )
    # What each browser tab runs: the attached TUI, which never starts a broker.
    web.add_argument("--session", action="store_true", help=argparse.SUPPRESS)
    web.set_defaults(run=run_web)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_web(args: argparse.Namespace) -> int:
    if args.session:
        return run_session()
    if not is_loopback(args.host) and not args.allow_remote:
        raise CommandError(
            f"{args.host} is not a loopback address: the web console speaks plain HTTP, so the"
            " login token and every key typed would cross the network in clear. Keep it on"
            " 127.0.0.1 and reach it through an SSH tunnel, or pass --allow-remote if the"
            " network in between is yours",
            EXIT_USAGE,
        )
    from svc_console.cli.attach import attached_console

    console = attached_console()
    if console is None:
        raise CommandError(
            "no broker runs for this home: start `svc-console serve` (or the console) first;"
            " the web console attaches to it and never starts one",
            EXIT_USAGE,
        )
    import asyncio

    return asyncio.run(_serve(args.host, args.port, console.paths.home))


async def _serve(host: str, port: int, home: Any) -> int:
    import asyncio
    import signal

    from svc_console.tui.web.login import TOKEN_FILE, login_token
    from svc_console.tui.web.server import WebConsole

    token, new = login_token(home)
    command = f"{shlex.quote(sys.executable)} -m svc_console web --session"
    server = WebConsole(command, host=host, port=port, token=token)
    try:
        port = await server.start()
    except OSError as exc:
        raise CommandError(f"cannot serve on {host}:{port}: {exc.strerror}", EXIT_USAGE) from None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    where = f"http://{host}:{port}/"
    print(f"svc-console: web console on {where} (Ctrl-C stops it; the broker goes on)", flush=True)
    if new:
        # Shown this once; afterwards only the file holds it.
        print(f"svc-console: login token, shown once: {token}", flush=True)
        print(f"svc-console: open {where}?token={token}", flush=True)
    print(f"svc-console: the login token is kept in {home / TOKEN_FILE} (owner-only)", flush=True)
    try:
        await stop.wait()
    finally:
        await server.stop()
    return 0


def run_session() -> int:
    """One browser tab's console: attached, or nothing."""
    from svc_console.cli.attach import attached_console

    console = attached_console()
    if console is None:
        raise CommandError("the broker this web console attaches to is not running", EXIT_USAGE)
    from svc_console.tui.app import ConsoleApp

    app = ConsoleApp(console)
    app.run()
    return app.return_code or 0
