"""`svc-console login` and `svc-console connect`: the onboarding flows on the command line.

The one-time code is read from the terminal without echo (or from stdin when it is not a
terminal, for scripts); nothing secret is printed, only where it was kept.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from svc_console.cli.errors import CommandError


def add_commands(commands: Any) -> None:
    login = commands.add_parser("login", help="sign in by e-mail code; stores the API key")
    login.add_argument("--email", help="the operator's e-mail (asked when missing)")
    login.add_argument("--base-url", help="the marketplace (default: SVC_BASE_URL)")
    login.set_defaults(run=lambda args: _run(args, "login"))
    connect = commands.add_parser(
        "connect", help="connect the agent wallet (e-mail code and a username)"
    )
    connect.add_argument("--email", help="the operator's e-mail (asked when missing)")
    connect.add_argument("--username", help="the wallet's handle (asked when missing)")
    connect.add_argument("--base-url", help="the marketplace (default: SVC_BASE_URL)")
    connect.set_defaults(run=lambda args: _run(args, "connect"))


def _ask(prompt: str, *, secret: bool = False) -> str:
    if sys.stdin.isatty():
        import getpass

        return getpass.getpass(prompt) if secret else input(prompt)
    print(prompt, end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline().strip()
    print(file=sys.stderr)  # what was typed did not end the prompt's line
    return answer


def _run(args: argparse.Namespace, flow: str) -> int:
    import asyncio

    from svc_console.config.credentials import Credentials
    from svc_console.config.errors import SettingsError
    from svc_console.config.paths import resolve_paths
    from svc_console.config.service import wallet_config_file
    from svc_console.core.private_files import ensure_private_dir
    from svc_console.market.account import AccountClient
    from svc_console.market.errors import MarketError
    from svc_console.services import onboarding

    base_url = (args.base_url or os.environ.get("SVC_BASE_URL") or "").rstrip("/")
    if not base_url:
        raise CommandError(
            "no marketplace: pass --base-url or set SVC_BASE_URL"
            " (for the sandbox: the address `svc-console sandbox` prints)"
        )
    paths = resolve_paths()
    ensure_private_dir(paths.home)
    try:
        # The same wallet config file `serve` will read: SVC_WALLET_CONFIG, settings.toml, or
        # the spec's default.
        creds = Credentials(paths, connection_file=wallet_config_file(paths))
    except SettingsError as exc:
        raise CommandError(str(exc)) from None
    skipped = onboarding.already_connected(creds) if flow == "connect" else None
    if skipped is not None:
        _report(skipped)
        return 0
    email = args.email or _ask("e-mail: ")
    if not email:
        raise CommandError("an e-mail address is needed")

    def read_code() -> str:
        print(f"a 6-digit code was sent to {email}", file=sys.stderr)
        return _ask("code: ", secret=True)

    async def run() -> onboarding.Saved:
        async with AccountClient(base_url) as client:
            if flow == "login":
                return await onboarding.login(
                    client, creds, base_url=base_url, email=email, read_code=read_code
                )
            username = args.username or _ask("username: ")
            return await onboarding.connect(
                client, creds, email=email, username=username, read_code=read_code
            )

    try:
        saved = asyncio.run(run())
    except MarketError as exc:
        raise CommandError(f"{flow} failed: {exc.message}") from None
    except SettingsError as exc:
        raise CommandError(str(exc)) from None
    _report(saved)
    return 0


def _report(saved: Any) -> None:
    print(saved.summary)
    for path in saved.files:
        print(f"{'kept' if saved.skipped else 'saved'}: {path}")
    print(f"secrets are kept in {saved.secrets_in}")
