"""`svc-console operators add / list / remove / link / passwd`: operator accounts (and the Slack
user each may decide as), and the passphrase a console without accounts uses.

Without accounts, a decision over the operator socket needs the passphrase (once one is set;
always, where agents of the operator's own user are accepted). Once any account exists, it needs
an account: `--operator NAME` and that account's token (`SVC_OPERATOR_TOKEN`, or an owner-only
`--token-file`), and the passphrase no longer applies there. Adding or removing an account then
takes an account's token too: an agent running as the operator's user can run this command as
well as anyone. While a console runs, an account is added through it, as a decision in its audit
chain; where a policy holds a two-person rule, by two operators (docs/operators.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from svc_console.cli.errors import EXIT_USAGE, CommandError


def add_commands(commands: Any) -> None:
    operators = commands.add_parser(
        "operators", help="operator accounts, and the passphrase of a console without them"
    ).add_subparsers(title="operators commands", metavar="COMMAND", required=True)
    add = operators.add_parser("add", help="add an operator account and print its token once")
    add.add_argument("name")
    identity_options(add, "once accounts exist: the operator adding this one")
    add.set_defaults(run=run_add)
    listing = operators.add_parser("list", help="the operator accounts (never their tokens)")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(run=run_list)
    remove = operators.add_parser(
        "remove", aliases=["revoke"], help="end an operator account; its token stops at once"
    )
    remove.add_argument("name")
    identity_options(remove, "the operator removing it (an account's token)")
    remove.set_defaults(run=run_remove)
    link = operators.add_parser(
        "link", help="let a Slack user decide as this operator (settings.toml [slack])"
    )
    link.add_argument("name")
    link.add_argument(
        "--slack", required=True, metavar="USER_ID", help="the Slack user's member id (U012AB3CD)"
    )
    identity_options(link, "the operator linking it (an account's token)")
    link.set_defaults(run=run_link)
    passwd = operators.add_parser(
        "passwd", help="set or change the operator passphrase (typed on the terminal)"
    )
    passwd.add_argument("--clear", action="store_true", help="remove it (the current one first)")
    passwd.set_defaults(run=run_passwd)


def identity_options(parser: argparse.ArgumentParser, who: str) -> None:
    """`--operator NAME` and `--token-file FILE`: who decides, on a console with accounts."""
    parser.add_argument(
        "--operator", metavar="NAME", help=f"{who}; its token from SVC_OPERATOR_TOKEN"
    )
    parser.add_argument(
        "--token-file", type=Path, metavar="FILE", help="the operator's token (an owner-only file)"
    )


def credentials(args: argparse.Namespace) -> tuple[str, str] | None:
    """The operator named and their token, or None when no operator is named."""
    name = getattr(args, "operator", None)
    path = getattr(args, "token_file", None)
    if name is None:
        if path is not None:
            raise CommandError("--token-file goes with --operator NAME", EXIT_USAGE)
        return None
    if path is None:
        token = os.environ.get("SVC_OPERATOR_TOKEN", "")
    else:
        from svc_console.core.private_files import NotPrivate, read_private

        try:
            token = read_private(path).strip()
        except NotPrivate as exc:
            raise CommandError(str(exc), EXIT_USAGE) from None
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}", EXIT_USAGE) from None
    if not token:
        raise CommandError(
            f"operator {name} needs its token: SVC_OPERATOR_TOKEN or --token-file FILE", EXIT_USAGE
        )
    return name, token


def _accounts() -> Any:
    from svc_console.config.operator_accounts import OperatorAccounts
    from svc_console.config.paths import resolve_paths

    return OperatorAccounts(resolve_paths().operator_accounts)


def _changing(change: Any) -> Any:
    from svc_console.config.operator_accounts import AccountsError

    try:
        return change(_accounts())
    except AccountsError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None


def proven_operator(args: argparse.Namespace, doing: str) -> str | None:
    """The operator making a change to the console's identities, proved by their account's
    token; None on a console without accounts (where --operator is an error)."""
    from svc_console.config.operator_accounts import AccountsError

    given = credentials(args)
    try:
        accounts = _accounts()
        if not accounts.any():
            if given is not None:
                raise CommandError(
                    "this console has no operator accounts: drop --operator", EXIT_USAGE
                )
            return None
        if given is None:
            raise CommandError(
                f"{doing} needs an operator account: --operator NAME with its token", EXIT_USAGE
            )
        if accounts.authenticate(*given) is None:
            raise CommandError(f"unknown operator or wrong token; {doing}: not done", EXIT_USAGE)
    except AccountsError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    return given[0]


def _check_passphrase(doing: str) -> None:
    """The first account takes over from the passphrase, so it needs the passphrase."""
    from svc_console.cli.tty import read_secret
    from svc_console.config.operator_passphrase import OperatorPassphrase, PassphraseFileError
    from svc_console.config.paths import resolve_paths

    passphrase = OperatorPassphrase(resolve_paths().operator_passphrase)
    try:
        if passphrase.is_set() and not passphrase.verify(read_secret("operator passphrase: ")):
            raise CommandError(f"wrong passphrase; {doing}: not done", EXIT_USAGE)
    except PassphraseFileError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None


def run_add(args: argparse.Namespace) -> int:
    first = _changing(lambda accounts: not accounts.any())
    if first:
        proven_operator(args, f"adding operator {args.name}")  # --operator: none exists yet
        _check_passphrase(f"adding operator {args.name}")
        token = _changing(lambda accounts: accounts.add(args.name))
    elif _broker_runs():
        token = _add_through_the_console(args)
        if token is None:
            return 0
    else:
        rule = _two_person_rule()
        if rule is not None:
            raise CommandError(rule, EXIT_USAGE)
        by = proven_operator(args, f"adding operator {args.name}")
        token = _changing(lambda accounts: accounts.add(args.name, added_by=by))
    print(token)
    print(
        f"the token of operator {args.name}, shown this once: keep it as SVC_OPERATOR_TOKEN or"
        " in an owner-only file for --token-file (a running console trusts it from its next"
        " start)",
        file=sys.stderr,
    )
    if first:
        print(
            "the first operator account: decisions over the operator socket now need an"
            " account's token, not the passphrase (a running console: from its next start)",
            file=sys.stderr,
        )
    return 0


def _broker_runs() -> bool:
    from svc_console.config.paths import client_paths
    from svc_console.services.broker_probe import running_broker

    return running_broker(client_paths().operator_socket) is not None


def _add_through_the_console(args: argparse.Namespace) -> str | None:
    """Ask the running console to add the account, recorded in its audit chain: the new token,
    or None when, under a two-person rule, this was the first operator's asking."""
    from svc_console.cli.socket_client import call, connect

    given = credentials(args)
    if given is None:
        raise CommandError(
            f"adding operator {args.name} needs an operator account: --operator NAME with its"
            " token",
            EXIT_USAGE,
        )
    asked = {"name": args.name, "operator": given[0], "token": given[1]}
    with connect(None, operator=True) as line:
        said = call(lambda: line.call("operators.add", asked))
    if said["state"] == "proposed":
        print(
            f"operator {args.name}: asked by {given[0]}. A policy holds a two-person rule, so a"
            f" second operator adds it: svc-console operators add {args.name} --operator NAME"
            " (that operator's own token); the token is shown to them"
        )
        return None
    by = " and ".join(said["by"])
    print(f"operator {args.name} added by {by}", file=sys.stderr)
    return str(said["token"])


def _two_person_rule() -> str | None:
    """Why no account may be added without a running console: a policy in force holds a
    two-person rule (or cannot be read, so might), and adding one is then a decision of two
    operators that the console records. None when no rule stands in the way."""
    from svc_console.config.errors import SettingsError
    from svc_console.config.paths import resolve_paths
    from svc_console.config.policy_files import policy_files
    from svc_console.policy.errors import PolicyInvalid
    from svc_console.policy.loader import load_paths

    start = "start the console (svc-console serve) and run this again"
    try:
        files, optional = policy_files(resolve_paths())
        present = [path for path in files if path.exists()] if optional else files
        if not present:
            return None
        rules = load_paths(present).rules
    except (SettingsError, PolicyInvalid) as exc:
        return f"the policy in force cannot be read ({str(exc)[:200]}): {start}"
    if rules.two_person is None:
        return None
    return (
        "a policy holds a two-person rule: adding an operator is then a decision of two"
        f" operators, recorded by the running console: {start}"
    )


def run_remove(args: argparse.Namespace) -> int:
    proven_operator(args, f"removing operator {args.name}")
    _changing(lambda accounts: accounts.remove(args.name))
    print(f"operator {args.name} removed: its token no longer works")
    return 0


def run_link(args: argparse.Namespace) -> int:
    user = args.slack.strip().upper()
    proven_operator(args, f"linking operator {args.name} to Slack")
    _changing(lambda accounts: accounts.link_slack(args.name, user))
    print(
        f"Slack user {user} now decides as operator {args.name} (a running console: from its"
        " next start)"
    )
    return 0


def run_list(args: argparse.Namespace) -> int:
    rows = [
        {
            "name": account.name,
            "created_at": account.created_at,
            "added_by": account.added_by,
            "seconded_by": account.seconded_by,
            "active": account.active,
            "removed_at": account.removed_at,
            "slack_user": account.slack_user,
        }
        for account in _changing(lambda accounts: accounts.accounts())
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(
            "no operator accounts: decisions outside the console's TUI need the passphrase,"
            " when one is set (where agents of your own user are accepted: always)"
        )
        return 0
    for row in rows:
        since = datetime.fromtimestamp(row["created_at"], UTC).strftime("%Y-%m-%d %H:%M UTC")
        makers = [name for name in (row["added_by"], row["seconded_by"]) if name]
        by = f" by {' and '.join(makers)}" if makers else ""
        state = "active" if row["active"] else "removed"
        slack = f" · Slack {row['slack_user']}" if row["slack_user"] else ""
        print(f"{row['name']:<24} {state:<8} added {since}{by}{slack}")
    return 0


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
        print(
            "operator passphrase removed (a running console keeps it until its next start);"
            " where agents of your own user are accepted, decisions outside the TUI are then"
            " refused until one is set again"
        )
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
    if _changing(lambda accounts: accounts.any()):
        print(
            "operator accounts exist: over the operator socket an account's token counts, not"
            " the passphrase; the TUI still asks the passphrase at start"
        )
    return 0
