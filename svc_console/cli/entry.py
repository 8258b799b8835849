"""`svc-console`: the parser of every command group, and the one place errors become one line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from svc_console.cli import (
    agent,
    agents,
    approvals,
    audit,
    console,
    doctor,
    grants,
    ledger,
    mandate,
    mcp,
    onboarding,
    operators,
    policy,
    service,
    usage,
    wallet,
    web,
)
from svc_console.cli.arguments import Parser
from svc_console.cli.errors import CommandError


def parser() -> argparse.ArgumentParser:
    from svc_console import __version__

    top = Parser(
        prog="svc-console",
        description="Approve, deny and audit what AI agents spend on the Agent Data and API "
        "Marketplace. With no command: the console (TUI).",
    )
    top.add_argument("--version", action="version", version=f"svc-console {__version__}")
    commands = top.add_subparsers(title="commands", metavar="COMMAND")
    console.add_commands(top, commands)
    groups = (
        agent,
        agents,
        approvals,
        grants,
        wallet,
        operators,
        onboarding,
        audit,
        mandate,
        ledger,
        doctor,
        policy,
        usage,
        mcp,
        web,
        service,
    )
    for group in groups:
        group.add_commands(commands)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    import signal

    # Past a file-size limit a write fails (EFBIG) and is reported below, instead of the signal
    # ending the process mid-write with nothing said.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except CommandError as exc:
        print(f"svc-console: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): nothing more to say
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:  # a full disk, a file-size limit, a folder gone: said, not traced
        from svc_console.core.sanitize import inert_line

        where = f" ({inert_line(str(exc.filename), 200)})" if exc.filename else ""
        print(f"svc-console: {inert_line(exc.strerror or str(exc), 200)}{where}", file=sys.stderr)
        return 2
