"""`svc-console doctor [--json] [--anchor FILE]`: the set-up checked, each finding with its fix.

Exit 0 when nothing is serious (warnings and notes are said, not failed), 1 when something is.
Findings quote files, settings and the service: printed through `inert_line`. The checks are
`services.doctor`'s.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

MARKS = {"ok": "ok", "note": "note", "warning": "WARNING", "serious": "SERIOUS"}


def add_commands(commands: Any) -> None:
    doctor = commands.add_parser(
        "doctor",
        help="check the set-up: each finding with its fix; exit 1 when one is serious",
        description="Check the console's set-up: whose user it runs as and what an agent of that"
        " user can do, the home and socket folders, same-user agents and operator credentials,"
        " the audit key and an anchor kept elsewhere, the policy files, the ledger (PostgreSQL"
        " too), the service, the wallet proxy, the wallet's balance against a day of approvals,"
        " the keyring, the clock. Exit 1 when a finding is serious.",
    )
    doctor.add_argument("--json", action="store_true", help="print the findings as JSON")
    doctor.add_argument(
        "--anchor",
        type=Path,
        metavar="FILE",
        help="an anchor audit anchor wrote outside the home: the chain is verified against it",
    )
    doctor.set_defaults(run=run_doctor)


def run_doctor(args: argparse.Namespace) -> int:
    from svc_console.config.paths import resolve_paths
    from svc_console.core.sanitize import inert_line
    from svc_console.services.doctor import examine

    paths = resolve_paths()
    findings = examine(paths, anchor=args.anchor)
    grave = sum(1 for finding in findings if finding.level == "serious")
    if args.json:
        report = {
            "home": str(paths.home),
            "serious": grave,
            "findings": [finding.to_json() for finding in findings],
        }
        print(json.dumps(report, indent=2))
        return 1 if grave else 0
    print(f"svc-console doctor: {inert_line(paths.home, 200)}")
    for finding in findings:
        mark = MARKS[finding.level]
        print(f"  {mark:<8} {finding.check:<13} {inert_line(finding.said, 600)}")
        if finding.fix:
            print(f"  {'':<8} {'':<13} fix: {inert_line(finding.fix, 600)}")
    warned = sum(1 for finding in findings if finding.level == "warning")
    print(f"{grave} serious, {warned} warning{'' if warned == 1 else 's'}.")
    return 1 if grave else 0
