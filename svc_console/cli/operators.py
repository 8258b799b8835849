"""`svc-console operators passwd`: the operator passphrase every decision outside the open TUI
needs once it is set, typed on a terminal and kept only as a slow hash."""

from __future__ import annotations

import argparse
from typing import Any

from svc_console.cli.errors import EXIT_USAGE, CommandError


def add_commands(commands: Any) -> None:
    operators = commands.add_parser(
        "operators", help="the operator passphrase decisions need"
    ).add_subparsers(title="operators commands", metavar="COMMAND", required=True)
    passwd = operators.add_parser(
        "passwd", help="set or change the operator passphrase (typed on the terminal)"
    )
    passwd.add_argument("--clear", action="store_true", help="remove it (the current one first)")
    passwd.set_defaults(run=run_passwd)


def run_passwd(args: argparse.Namespace) -> int:
    from svc_console.cli.tty import read_secret
    from svc_console.config.operator_passphrase import OperatorPassphrase, PassphraseFileError
    from svc_console.config.paths import resolve_paths

    passphrase = OperatorPassphrase(resolve_paths().operator_passphrase)
    try:
        if passphrase.is_set() and not passphrase.verify(read_secret("current passphrase: ")):
            raise CommandError("wrong passphrase; nothing changed", EXIT_USAGE)
    except PassphraseFileError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    if args.clear:
        if not passphrase.is_set():
            raise CommandError("no operator passphrase is set", EXIT_USAGE)
        passphrase.clear()
        print("operator passphrase removed: decisions over the operator socket need none")
        return 0
    new = read_secret("new passphrase: ")
    if read_secret("the same again: ") != new:
        raise CommandError("the two passphrases differ; nothing changed", EXIT_USAGE)
    try:
        passphrase.set(new)
    except ValueError as exc:
        raise CommandError(f"{exc}; nothing changed", EXIT_USAGE) from None
    print(
        "operator passphrase set: every decision outside the open TUI needs it (a running"
        " console uses it from its next start)"
    )
    return 0
