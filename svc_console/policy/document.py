"""A SKILLS.md file as policy sees it: the fenced code blocks tagged `policy`, each with the line
where it starts, so every rule and every error can name its line in the file.

The prose around the blocks is for people and is never interpreted. A block whose tag looks like a
misspelt `policy` is an error rather than prose: a typo must never silently drop a limit.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from svc_console.policy.errors import PolicyError, PolicyInvalid, Where

MAX_POLICY_BYTES = 512 * 1024
# An opening fence (CommonMark): up to three spaces, three or more backticks or tildes, an info
# string.
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
TAG = "policy"


@dataclass(frozen=True)
class Block:
    """The YAML text of one `policy` block; its first line is line `first_line` of `file`."""

    file: str
    fence_line: int
    first_line: int
    text: str


def policy_blocks(text: str, file: str) -> list[Block]:
    """Every `policy` block of a Markdown document, in order. Raises PolicyInvalid for an
    unclosed block, a misspelt tag, or a document too large to be a policy."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_POLICY_BYTES:
        raise PolicyInvalid(
            [
                PolicyError(
                    Where(file, 1), f"a policy file may hold at most {MAX_POLICY_BYTES} bytes"
                )
            ]
        )
    lines = text.splitlines()
    blocks: list[Block] = []
    problems: list[PolicyError] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence, info = opening.group("fence"), opening.group("info").strip()
        tag = info.split()[0] if info else ""
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        start = index
        index += 1
        while index < len(lines) and not closing.match(lines[index]):
            index += 1
        if tag == TAG:
            if index >= len(lines):
                problems.append(
                    PolicyError(
                        Where(file, start + 1, len(opening.group("indent")) + 1),
                        f"this policy block is never closed (close it with {fence})",
                    )
                )
            body = "\n".join(lines[start + 1 : index])
            blocks.append(Block(file, start + 1, start + 2, body))
        elif _looks_like_policy(tag):
            problems.append(
                PolicyError(
                    Where(file, start + 1, len(opening.group("indent")) + len(fence) + 1),
                    f'a code block tagged "{tag}" is not read as rules; tag it "{TAG}"',
                )
            )
        index += 1
    if problems:
        raise PolicyInvalid(problems)
    return blocks


def _looks_like_policy(tag: str) -> bool:
    lowered = tag.lower().strip(":{}.")
    return tag != TAG and (
        lowered in (TAG, "policies") or difflib.SequenceMatcher(None, lowered, TAG).ratio() >= 0.75
    )
