"""The README's command table is what the CLI does: every command it documents exists with every
option it names, and every command the CLI has is documented. Then each command that needs a
console, run with none, with invalid arguments, or against a file-size limit (a full disk), says
one line and exits 2, never a traceback."""

from __future__ import annotations

import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from svc_console.cli.entry import parser

README = Path(__file__).resolve().parents[2] / "README.md"
CLI = [sys.executable, "-m", "svc_console"]


def documented() -> list[tuple[list[str], set[str]]]:
    """(command path, options named) for each command line of the README's table; a line whose
    alternatives are split by ` / ` gives one entry per alternative."""
    entries = []
    for line in README.read_text().splitlines():
        found = re.match(r"\| `svc-console ?([^`]*)` \|", line)
        if found is None:
            continue
        text = found.group(1).replace("\\|", "|")
        words = text.split()
        group = [w for w in words[:1] if re.fullmatch(r"[a-z]+", w)]
        for number, alternative in enumerate(text.split(" / ")):
            tokens = alternative.split()
            path = tokens[: 2 if number == 0 else 1]
            path = [t for t in path if re.fullmatch(r"[a-z]+", t)]
            if number > 0:
                path = group + path
            entries.append((path, set(re.findall(r"--[a-z][a-z-]*", alternative))))
    return entries


def help_of(path: list[str]) -> str:
    argv = [*path, "--help"]
    with pytest.raises(SystemExit) as done:
        import contextlib
        import io

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            parser().parse_args(argv)
    assert done.value.code == 0, path
    return out.getvalue()


@pytest.mark.parametrize(
    ("path", "options"), documented(), ids=lambda v: " ".join(v) if isinstance(v, list) else ""
)
def test_each_documented_command_exists_with_the_options_it_names(path, options):
    text = help_of(path)
    missing = {option for option in options if option not in text}
    assert not missing, f"svc-console {' '.join(path)} has no {sorted(missing)}"


def test_every_command_of_the_cli_is_documented():
    paths = {" ".join(path) for path, _ in documented()}
    commands = parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name, sub in commands.items():
        inner = [a for a in sub._actions if a.__class__.__name__ == "_SubParsersAction"]
        names = [f"{name} {child}" for child in inner[0].choices] if inner else [name]
        for full in names:
            assert full in paths, f"svc-console {full} is not in the README's command table"


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
