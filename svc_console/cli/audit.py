"""`svc-console audit verify` and `audit anchor`: check that the ledger is what the broker wrote
(its keyed event chain, the head anchored beside it, its tables of money against the events),
and keep its head somewhere the ledger's own user cannot rewrite it.

`verify`: exit 0 with the number of events verified and the chain's head `SEQ:HASH`; exit 1
naming the first broken link or the tables' disagreements, first event first; exit 2 when there
is nothing to check (no ledger, no key) or an option is wrong. `--anchor FILE` checks the chain
against a head `audit anchor` wrote outside the home: the one check a chain edited and sealed
again with its own key does not pass (docs/audit.md).

`anchor`: verifies first (a chain that does not verify is never anchored), then writes the head
to `--to FILE`, which must lie outside `SVC_CONSOLE_HOME` and the ledger's folder, or prints it
for a ticket. Never a traceback. The ledger is opened read-only, so both run beside a console or
broker that is using it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NamedTuple

from svc_console.cli.errors import EXIT_USAGE, CommandError

EXIT_BROKEN = 1


def add_commands(commands: Any) -> None:
    """Add `audit verify` and `audit anchor`."""
    audit = commands.add_parser(
        "audit", help="tamper evidence: check the ledger's hash-chained events"
    ).add_subparsers(title="audit commands", metavar="COMMAND", required=True)
    verify = audit.add_parser(
        "verify",
        help="verify the event chain from its first event; name the first broken link",
        description="Walk the ledger's events from the first: each must follow the one before it "
        "(its prev_hash is that event's hash), its hash must match its content, and no seq may be "
        "missing; the head file must hold; every row of money must be as its last event sealed "
        "it. Exit 0 when all holds, 1 at the first break.",
    )
    verify.add_argument(
        "--head",
        type=_head,
        metavar="SEQ:HASH",
        help="a head printed by an earlier run and kept elsewhere: checked, not the head file",
    )
    verify.add_argument(
        "--anchor",
        type=Path,
        metavar="FILE",
        help="an anchor audit anchor wrote outside the home: the event it names must be there"
        " with its hash (catches a chain rewritten and sealed again with its own key)",
    )
    _ledger_option(verify)
    verify.set_defaults(run=run_verify)
    anchor = audit.add_parser(
        "anchor",
        help="keep the chain's head outside the home, for audit verify --anchor",
        description="Verify the ledger, then write its chain's head (the last event and its "
        "hash) to FILE, which must lie outside SVC_CONSOLE_HOME and the ledger's folder, or "
        "print it for a ticket. Keep it where the ledger's own user cannot write.",
    )
    anchor.add_argument(
        "--to",
        type=Path,
        metavar="FILE",
        help="the file to write (owner-only; default: print the anchor on standard output)",
    )
    _ledger_option(anchor)
    anchor.set_defaults(run=run_anchor)


def _ledger_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ledger",
        type=Path,
        metavar="FILE",
        help="the ledger file (default: the configured one, the sandbox's when no service is set;"
        " SVC_LEDGER_URL or [ledger] url in settings.toml put the real one on PostgreSQL)",
    )


class _Target(NamedTuple):  # not a dataclass: `--help` would import dataclasses for it
    path: Path
    url: str | None
    home: Path

    @property
    def shown(self) -> str:
        """The ledger as an anchor names it: an absolute path, or a URL without password."""
        from svc_console.ledger.engine import url_shown

        return url_shown(self.url) if self.url else str(self.path.absolute())


def _target(args: argparse.Namespace) -> _Target:
    from svc_console.config.errors import SettingsError
    from svc_console.config.paths import resolve_paths
    from svc_console.config.service import configured_ledger, configured_ledger_url
    from svc_console.core.sanitize import inert_line

    paths = resolve_paths()
    if args.ledger is not None:
        return _Target(args.ledger, None, paths.home)
    try:
        url = configured_ledger_url(paths)
    except SettingsError as exc:
        raise CommandError(inert_line(str(exc), 300), EXIT_USAGE) from None
    return _Target(configured_ledger(paths), url, paths.home)


def _outside(file: Path, target: _Target, what: str) -> None:
    """Refuse an anchor kept where the ledger's own user rewrites it along with the ledger."""
    from svc_console.core.sanitize import inert_line
    from svc_console.ledger.audit_anchor import within

    for folder, name in (
        (target.home, "SVC_CONSOLE_HOME"),
        (target.path.parent, "the ledger's folder"),
    ):
        if within(file, folder):
            raise CommandError(
                f"{inert_line(file, 200)} is inside {name} ({inert_line(folder, 200)}): {what}"
                " there is rewritten along with the ledger; keep it elsewhere (another disk,"
                " another account, a ticket)",
                EXIT_USAGE,
            )


def _report(args: argparse.Namespace, target: _Target, outside: Any = None) -> Any:
    from svc_console.core.sanitize import inert_line
    from svc_console.ledger.audit import AuditError, verify

    try:
        head = getattr(args, "head", None)
        return verify(target.path, anchor=head, url=target.url, outside=outside)
    except AuditError as exc:
        raise CommandError(inert_line(str(exc), 300), EXIT_USAGE) from None


def _anchor_of(args: argparse.Namespace, target: _Target) -> Any:
    """The anchor `--anchor` names, checked to be of this ledger and kept outside."""
    from svc_console.core.sanitize import inert_line
    from svc_console.ledger.audit_anchor import AnchorError, read

    if args.anchor is None:
        return None
    _outside(args.anchor, target, "an anchor")
    try:
        anchor = read(args.anchor)
    except AnchorError as exc:
        raise CommandError(inert_line(str(exc), 300), EXIT_USAGE) from None
    if anchor.ledger != target.shown:
        raise CommandError(
            f"{inert_line(args.anchor, 200)} anchors {inert_line(anchor.ledger, 200)}, not"
            f" {inert_line(target.shown, 200)}: give that ledger with --ledger (a ledger moved"
            f" since: --head {anchor.seq}:{anchor.hash})",
            EXIT_USAGE,
        )
    return anchor


def run_verify(args: argparse.Namespace) -> int:
    from svc_console.core.sanitize import inert_line

    target = _target(args)
    outside = _anchor_of(args, target)
    report = _report(args, target, outside)
    where = inert_line(target.shown if target.url else str(target.path), 200)
    if _said_broken(where, report):
        return EXIT_BROKEN
    if not report.verified:
        print(f"{where}: 0 events verified (the ledger has no events yet)")
        return 0
    anchored = f"; the anchor at event {outside.seq} holds" if outside is not None else ""
    print(
        f"{where}: {report.verified:,} events verified; chain intact, tables agree{anchored};"
        f" head {report.verified}:{report.head}"
    )
    return 0


def _said_broken(where: str, report: Any) -> bool:
    """Print what is broken, if anything; whether something was."""
    from svc_console.core.sanitize import inert_line

    if report.broken is not None:
        print(
            f"{where}: chain broken at event {report.broken.seq}: {report.broken.why}"
            f" ({report.verified:,} events before it verified)"
        )
        return True
    if report.problems:
        print(
            f"{where}: chain intact ({report.verified:,} events), but the tables disagree with it:"
        )
        for problem in report.problems:
            at = f"event {problem.seq}: " if problem.seq else ""
            print(f"  {at}{inert_line(problem.why, 300)}")
        if report.more_problems:
            print(f"  and {report.more_problems:,} more")
        return True
    return False


def run_anchor(args: argparse.Namespace) -> int:
    import sys

    from svc_console.core.sanitize import inert_line
    from svc_console.ledger.audit_anchor import AnchorError, taken, write

    target = _target(args)
    if args.to is not None:
        _outside(args.to, target, "an anchor")
    report = _report(args, target)
    where = inert_line(target.shown if target.url else str(target.path), 200)
    if _said_broken(where, report):
        print(f"svc-console: {where} does not verify: nothing anchored", file=sys.stderr)
        return EXIT_BROKEN
    if not report.verified:
        raise CommandError(f"{where} has no events yet: nothing to anchor", EXIT_USAGE)
    anchor = taken(target.shown, (report.verified, report.head))
    if args.to is None:
        print(anchor.text())
        return 0
    try:
        written = write(args.to, anchor)
    except AnchorError as exc:
        raise CommandError(inert_line(str(exc), 300), EXIT_USAGE) from None
    print(
        f"{where}: head {anchor.seq}:{anchor.hash} anchored in {inert_line(written, 200)};"
        f" check with: svc-console audit verify --anchor {inert_line(written, 200)}"
    )
    return 0


def _head(text: str) -> tuple[int, str]:
    seq, _, digest = text.partition(":")
    if not seq.isdigit() or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise argparse.ArgumentTypeError("must be SEQ:HASH as audit verify printed it")
    return int(seq), digest
