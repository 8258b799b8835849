"""The command-line reference page, written from the parser itself (`svc_console.cli.entry`), so a
command or an option added to the CLI is in the guide at the next `make docs`, and a reference
left behind fails its test."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "command-line.md"
WIDTH = "100"  # argparse wraps usage lines at the terminal's width: one width for every build

HEAD = """\
# Command-line reference

Every command of `svc-console`, with its options, as `--help` prints them. This page is
written from the command line's own parser by `make docs` (`docs/tools/cli_reference.py`); a
test fails when it is out of date. What each command is for, with examples, is in
[Commands by task](commands.md).
"""


def commands(
    parser: argparse.ArgumentParser,
) -> Iterator[tuple[list[str], str, argparse.ArgumentParser]]:
    """(path, one-line help, parser) of every command and subcommand, in the parser's order; an
    alias is listed under the name it stands for."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
        seen: set[int] = set()
        for name, sub in action.choices.items():
            if id(sub) in seen:
                continue
            seen.add(id(sub))
            path = sub.prog.split()[1:]
            yield path, helps.get(name, ""), sub
            yield from commands(sub)


def aliases(parser: argparse.ArgumentParser, sub: argparse.ArgumentParser) -> list[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            names = [name for name, each in action.choices.items() if each is sub]
            return names[1:]
    return []


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def options_table(sub: argparse.ArgumentParser) -> list[str]:
    formatter = sub._get_formatter()
    rows = []
    for action in sub._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        if isinstance(action, argparse._HelpAction):
            continue
        name = formatter._format_action_invocation(action)
        rows.append(
            f"| `{_cell(name)}` | {_cell(formatter._expand_help(action) if action.help else '')} |"
        )
    if not rows:
        return []
    return ["| argument | meaning |", "|---|---|", *rows, ""]


def section(path: list[str], summary: str, sub: argparse.ArgumentParser, parent) -> list[str]:
    title = " ".join(["svc-console", *path])
    lines = [f"## `{title}`", ""]
    also = aliases(parent, sub)
    if summary:
        lines += [summary[:1].upper() + summary[1:] + ".", ""]
    if also:
        lines += [
            "Also: "
            + ", ".join(f"`{' '.join(['svc-console', *path[:-1], a])}`" for a in also)
            + ".",
            "",
        ]
    if sub.description and sub.description != summary:
        lines += [" ".join(sub.description.split()), ""]
    lines += ["```text", sub.format_usage().strip(), "```", ""]
    return lines + options_table(sub)


def render() -> str:
    os.environ["COLUMNS"] = WIDTH
    from svc_console.cli.entry import parser

    top = parser()
    top.prog = "svc-console"
    lines = [HEAD, "## `svc-console`", "", " ".join((top.description or "").split()), ""]
    lines += ["```text", top.format_usage().strip(), "```", "", *options_table(top)]
    parents = {(): top}
    for path, summary, sub in commands(top):
        parents[tuple(path)] = sub
        lines += section(path, summary, sub, parents[tuple(path[:-1])])
    return "\n".join(lines).rstrip() + "\n"


def documented_commands(text: str) -> set[str]:
    """The commands a reference page documents, by their headings."""
    return {
        line[len("## `svc-console") : -1].strip()
        for line in text.splitlines()
        if line.startswith("## `svc-console")
    }
