"""`svc-console service install / status / uninstall`: the console as a system service, running as
a user of its own (docs/laptop.md). The steps are `services.service_plan`'s, printed by
`--dry-run` and carried out here in order; only these few lines need root and systemd."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from svc_console.cli.errors import EXIT_USAGE, CommandError


def add_commands(commands: Any) -> None:
    service = commands.add_parser(
        "service", help="the console as a system service, running as a user of its own"
    ).add_subparsers(title="service commands", metavar="COMMAND", required=True)
    install = service.add_parser(
        "install",
        help="run the console as the system user svc-console, with your keys and ledger (sudo)",
        description="Create the system user svc-console and its home (0700), move your"
        " credentials, ledger, audit key and policies there (asking first, verifying the"
        " ledger's chain after), and start a systemd unit running `svc-console serve` as that"
        " user. Your agents reach it at /run/svc-console/agents.sock; you decide on"
        " /run/svc-console/operator.sock with an operator credential.",
    )
    install.add_argument(
        "--agents-group",
        metavar="GROUP",
        help="open the agents' socket to this group instead of your uid",
    )
    for parser in (
        install,
        service.add_parser("uninstall", help="stop the service and move your files back (sudo)"),
    ):
        parser.add_argument(
            "--dry-run", action="store_true", help="print what would be done, do nothing"
        )
        parser.add_argument("--yes", action="store_true", help="do it without asking")
        parser.add_argument("--user", metavar="NAME", help="the operator (default: who ran sudo)")
    install.set_defaults(run=run_install)
    service.choices["uninstall"].set_defaults(run=run_uninstall)
    status = service.add_parser("status", help="whether the service is installed and running")
    status.set_defaults(run=run_status)


def run_install(args: argparse.Namespace) -> int:
    import pwd

    from svc_console.services import service_moves as moves_of
    from svc_console.services.service_plan import install_plan
    from svc_console.services.service_unit import program_problem, systemd_problem, unit_text

    operator, where = _operator(args)
    layout = _layout()
    names = moves_of.listing(where.home)
    present = {path for path in where.wallet_files if path.exists()}
    moves = moves_of.moves_in(where, layout.home, names, present)
    _refuse(
        program_problem(layout.program),
        *moves_of.problems(moves),
        _serving(where.home / "operator.sock", "a console is running for this home"),
    )
    try:
        pwd.getpwnam(layout.user)
        user_exists = True
    except KeyError:
        user_exists = False
    steps = install_plan(layout, operator, moves, user_exists=user_exists)
    if not args.dry_run:  # a dry run shows the steps wherever it runs
        _refuse(systemd_problem())
    if _carried_out(args, steps, layout, operator, unit_text(layout)):
        print(f"svc-console: installed; agents ask at {layout.agents_socket}", flush=True)
    return 0


def run_uninstall(args: argparse.Namespace) -> int:
    from svc_console.services import service_moves as moves_of
    from svc_console.services.service_plan import uninstall_plan
    from svc_console.services.service_unit import installed_service, systemd_problem

    found = installed_service()
    if found is None:
        raise CommandError("no service install here (no svc-console unit)", EXIT_USAGE)
    operator, where = _operator(args)
    layout = _layout(found.home)
    moves = moves_of.moves_back(where, layout.home, moves_of.listing(layout.home))
    systemd = systemd_problem() is None
    # Without systemd nothing stops the broker for the move: none may be serving these files.
    serving = (
        None
        if systemd
        else _serving(layout.operator_socket, f"a broker answers on {layout.operator_socket}")
    )
    _refuse(*moves_of.problems(moves), serving)
    steps = uninstall_plan(layout, operator, moves, systemd=systemd)
    if _carried_out(args, steps, layout, operator, None):
        print(f"svc-console: uninstalled; your files are back in {where.home}", flush=True)
    return 0


def _carried_out(
    args: argparse.Namespace, steps: list, layout: Any, operator: Any, unit: str | None
) -> bool:
    """The steps printed (`--dry-run`: False), or carried out once asked (True)."""
    from svc_console.services.service_plan import said

    if args.dry_run:
        print(said(steps, unit), end="")
        return False
    _as_root_and_asked(args, said(steps))
    from svc_console.cli.service_steps import carry_out

    carry_out(steps, layout, operator, unit)
    return True


def run_status(args: argparse.Namespace) -> int:
    import subprocess  # here, not for every command: `--help` would pay for it

    from svc_console.services.broker_probe import running_broker
    from svc_console.services.service_unit import installed_service

    found = installed_service()
    if found is None:
        print("no service install: the console runs as your own user when you start it")
        return 1
    active = subprocess.run(
        ["systemctl", "is-active", found.unit.name], capture_output=True, text=True, check=False
    ).stdout.strip()
    answers = running_broker(found.operator_socket) is not None
    print(f"unit {found.unit} ({active or 'unknown'}), running as {found.user}, home {found.home}")
    print(
        f"agents' socket {found.agents_socket}; operator socket {found.operator_socket}"
        f" ({'answers' if answers else 'does not answer'})"
    )
    return 0 if answers else 1


def _layout(home: Path | None = None) -> Any:
    from svc_console.services.service_unit import ServiceLayout

    layout = ServiceLayout(program=(sys.executable, "-m", "svc_console"))
    if home is not None:
        layout = ServiceLayout(program=layout.program, home=home)
    return layout


def _operator(args: argparse.Namespace) -> tuple[Any, Any]:
    """The operator (`--user`, else who ran sudo) and where their console keeps its files."""
    import pwd

    from svc_console.services.service_moves import Where
    from svc_console.services.service_plan import Operator

    try:
        if args.user is not None:
            entry = pwd.getpwnam(args.user)
        elif os.environ.get("SUDO_UID"):
            entry = pwd.getpwuid(int(os.environ["SUDO_UID"]))
        else:
            raise CommandError(
                "run it with sudo, or name the operator with --user NAME", EXIT_USAGE
            )
    except KeyError:
        raise CommandError(f"no user {args.user}", EXIT_USAGE) from None
    user_home = Path(entry.pw_dir)
    if os.environ.get("SVC_CONSOLE_HOME"):
        home = Path(os.environ["SVC_CONSOLE_HOME"]).absolute()
        where = Where(home, home)
    elif sys.platform == "darwin":
        where = Where(user_home / "Library" / "Application Support" / "svc-console", user_home)
    else:
        where = Where(user_home / ".local" / "share" / "svc-console", user_home)
    group = getattr(args, "agents_group", None)
    return Operator(entry.pw_name, entry.pw_uid, entry.pw_gid, group), where


def _serving(operator_socket: Path, who: str) -> str | None:
    """`who` answers on `operator_socket`: stop it first. None when no broker does."""
    from svc_console.services.broker_probe import running_broker

    if running_broker(operator_socket) is not None:
        return f"{who}: stop it first"
    return None


def _refuse(*problems: str | None) -> None:
    said = [p for p in problems if p]
    if said:
        raise CommandError("; ".join(said), EXIT_USAGE)


def _as_root_and_asked(args: argparse.Namespace, steps: str) -> None:
    if os.geteuid() != 0:
        raise CommandError("this needs root: run it with sudo (or --dry-run to see it)", EXIT_USAGE)
    if args.yes:
        return
    if not sys.stdin.isatty():
        raise CommandError("nothing done: give --yes to go on without a terminal", EXIT_USAGE)
    print(steps, end="")
    if input("go on? [y/N] ").strip().lower() not in ("y", "yes"):
        raise CommandError("nothing done", EXIT_USAGE)
