"""The guide's command-line reference is what the CLI does: it is written from the parser
(`docs/tools/cli_reference.py`, which `make docs` runs), the committed page is what that writes
today, and every command and option of the parser is on it. Then each command that needs a
console, run with none, with invalid arguments, or against a file-size limit (a full disk), says
one line and exits 2, never a traceback."""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from svc_console.cli.entry import parser

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "tools"))

import cli_reference  # noqa: E402

CLI = [sys.executable, "-m", "svc_console"]


def test_the_committed_reference_is_what_the_parser_says_today():
    committed = cli_reference.PAGE.read_text()
    assert committed == cli_reference.render(), (
        "docs/command-line.md is out of date with the command line: run `make docs`"
    )


def all_commands() -> list[tuple[list[str], argparse.ArgumentParser]]:
    return [(path, sub) for path, _, sub in cli_reference.commands(parser())]


@pytest.mark.parametrize(
    ("path", "command"), all_commands(), ids=lambda v: " ".join(v) if isinstance(v, list) else ""
)
def test_every_command_and_option_of_the_cli_is_in_the_reference(path, command):
    page = cli_reference.PAGE.read_text()
    assert " ".join(path) in cli_reference.documented_commands(page), (
        f"svc-console {' '.join(path)} is not in docs/command-line.md"
    )
    heading = f"## `svc-console {' '.join(path)}`\n"
    section = page.split(heading, 1)[1].split("\n## ", 1)[0]
    for action in command._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        for option in action.option_strings:
            assert option in section, f"svc-console {' '.join(path)} {option} is not documented"


NEEDS_A_CONSOLE = [
    ["approvals", "list"],
    ["approvals", "approve", "req_x"],
    ["approvals", "deny", "req_x", "--reason", "r"],
    ["agent", "submit", "--endpoint", "ep_websearch_basic", "--inputs", "{}", "--purpose", "p"],
]


@pytest.mark.parametrize("argv", NEEDS_A_CONSOLE, ids=" ".join)
def test_no_console_and_invalid_arguments_are_one_line_without_a_traceback(home, argv):
    for args in (argv, [*argv, "--no-such-option"]):
        done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done
        assert "Traceback" not in done.stderr and done.stdout == ""
        lines = done.stderr.splitlines()
        assert lines and (lines[-1].startswith("svc-console") or "error:" in lines[-1])


def _no_file_growth() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


@pytest.mark.parametrize(
    "argv",
    [["agents", "add", "bot"], ["usage", "export", "--output", "out.csv"]],
    ids=" ".join,
)
def test_a_full_disk_is_one_line_and_exit_2(home: Path, tmp_path: Path, argv):
    from svc_console.config.paths import resolve_paths
    from svc_console.ledger import Ledger

    Ledger(resolve_paths().ledger(sandbox=True)).close()  # a ledger to export from
    done = subprocess.run(
        [*CLI, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        preexec_fn=_no_file_growth,
    )
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("svc-console: ")
    said = done.stderr.lower()
    assert any(words in said for words in ("too large", "no space", "disk i/o error")), said
