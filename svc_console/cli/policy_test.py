"""`svc-console policy test FILE... [--junit FILE] [--alone]`: the `policy-test` blocks of SKILLS.md
files, each judged by its file's policy and the other files in force (`--alone`: by its file
only). Each mismatch is printed with the rule that decided instead; exit 1 on any, or when a
file's policy or tests do not load. `--junit` writes JUnit XML for CI (owner-only).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from svc_console.cli.errors import CommandError


def add_command(policy: Any) -> None:
    test = policy.add_parser(
        "test",
        help="run the policy-test blocks of SKILLS.md files; exit 1 on any mismatch",
        description="Judge each example request of the files' policy-test blocks by the file's"
        " policy and the other files in force, as the broker judges a new request with empty"
        " budgets; print each mismatch with the rule that decided instead.",
    )
    test.add_argument("files", nargs="+", metavar="FILE", type=Path)
    test.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML here, for CI")
    test.add_argument(
        "--alone",
        action="store_true",
        help="judge each file by its own rules only, not with the other files in force",
    )
    test.set_defaults(run=run_test)


def _others_in_force(alone: bool) -> list[Path]:
    if alone:
        return []
    from svc_console.config.errors import SettingsError
    from svc_console.config.paths import resolve_paths
    from svc_console.config.policy_files import policy_files

    try:
        files, _ = policy_files(resolve_paths())
    except SettingsError as exc:
        raise CommandError(str(exc), 2) from None
    return [path for path in files if path.is_file()]


def run_test(args: argparse.Namespace) -> int:
    from svc_console.core.sanitize import inert_line
    from svc_console.policy.errors import PolicyInvalid
    from svc_console.policy.policy_tests import run_file

    others = _others_in_force(args.alone)
    suites, failed, total, broken = [], 0, 0, 0
    for path in args.files:
        extra = [other for other in others if other.absolute() != path.absolute()]
        try:
            outcomes = run_file(path, extra)
        except PolicyInvalid as exc:
            for error in exc.errors:
                print(inert_line(str(error), 400))
            suites.append((str(path), [], [str(error) for error in exc.errors]))
            broken += 1
            continue
        wrong = [outcome for outcome in outcomes if not outcome.passed]
        print(f"{inert_line(path, 200)}: {_count(len(outcomes))}, {len(wrong)} failed")
        for outcome in wrong:
            print(f"  {inert_line(outcome.mismatch(), 600)}")
        suites.append((str(path), outcomes, []))
        failed += len(wrong)
        total += len(outcomes)
    if args.junit is not None:
        _write(args.junit, junit(suites))
    said = f"{failed} of {_count(total)} failed" if failed else f"{_count(total)} passed"
    if broken:
        said += f"; {broken} file{'' if broken == 1 else 's'} did not load"
    print(said + ".")
    return 1 if failed or broken else 0


def _count(n: int) -> str:
    return f"{n} test{'' if n == 1 else 's'}"


def junit(suites: list[tuple[str, list[Any], list[str]]]) -> str:
    """JUnit XML: a suite per file, a case per test; a file that does not load is one error."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name="svc-console policy test")
    for file, outcomes, errors in suites:
        failures = sum(1 for outcome in outcomes if not outcome.passed)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=file,
            tests=str(len(outcomes) or len(errors)),
            failures=str(failures),
            errors=str(1 if errors else 0),
        )
        if errors:
            case = ET.SubElement(suite, "testcase", classname=file, name="the policy loads")
            ET.SubElement(case, "error", message=errors[0]).text = "\n".join(errors)
        for outcome in outcomes:
            case = ET.SubElement(suite, "testcase", classname=file, name=outcome.test.example.name)
            if not outcome.passed:
                ET.SubElement(case, "failure", message=outcome.mismatch())
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _write(path: Path, text: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror}", 1) from None
