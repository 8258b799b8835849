"""The shell examples of the README and the guide, as tests/docs/test_examples.py runs them.

A fenced block tagged `sh` is an example to run. One that cannot run against the sandbox (it
needs a real service, root, a browser, a terminal to type in) says so in its title, which the
guide shows above it: ```` ```sh title="needs …" ````."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELLS = ("sh", "bash", "shell")
FENCE = re.compile(r"^(?P<indent> *)(?P<ticks>`{3,})(?P<info>[^`\n]*)$")
NEEDS = re.compile(r'title="needs (?P<what>[^"]+)"')


@dataclass(frozen=True)
class Example:
    page: str  # relative to the repository
    line: int  # of the opening fence
    code: str
    needs: str | None  # what it needs beyond a sandbox: not run

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def examples(page: Path) -> list[Example]:
    found = []
    lines = page.read_text().splitlines()
    number = 0
    while number < len(lines):
        opening = FENCE.match(lines[number])
        number += 1
        start = number  # the opening fence's line, counted from 1
        if opening is None:
            continue
        info, ticks = opening["info"].strip(), opening["ticks"]
        body = []
        while number < len(lines) and not lines[number].strip().startswith(ticks):
            body.append(lines[number][len(opening["indent"]) :])
            number += 1
        number += 1
        if info.split(" ", 1)[0] in SHELLS:
            needs = NEEDS.search(info)
            found.append(
                Example(
                    page=str(page.relative_to(ROOT)),
                    line=start,
                    code="\n".join(body) + "\n",
                    needs=needs["what"] if needs else None,
                )
            )
    return found


def all_examples() -> list[Example]:
    return [example for page in pages() for example in examples(page)]
