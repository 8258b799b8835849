"""A SKILLS.md file as policy sees it: the fenced code blocks tagged `policy`, each with the line
where it starts, so every rule and every error can name its line in the file.

The file is read as CommonMark (markdown-it-py), as the people who review it see it rendered: only
a block at the top level of the file is a policy block. The prose around the blocks is for people
and is never interpreted. Whatever looks like a policy block but is not read as one is an error, not
prose: a misspelt tag, a second word in the tag (`yaml policy`), a block inside a blockquote or a
list item, a block inside HTML (a comment hides it when rendered), a block indented into a code
sample. A limit must never silently drop
out, and a rule must never be enforced that a reader of the rendered file cannot see.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from markdown_it import MarkdownIt

from svc_console.policy.errors import PolicyError, PolicyInvalid, Where

MAX_POLICY_BYTES = 512 * 1024
TAG = "policy"
# An opening fence anywhere in a line, for finding a policy block inside HTML, where Markdown is
# not parsed (`<!-- ```policy` hides one as well as a fence on a line of its own).
_FENCE_LINE = re.compile(r"(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_CONTAINERS = {
    "blockquote_open": "a blockquote",
    "bullet_list_open": "a list item",
    "ordered_list_open": "a list item",
}
_MARKDOWN = MarkdownIt("commonmark")


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
    containers: list[str] = []
    for token in _MARKDOWN.parse(text):
        if token.type in _CONTAINERS:
            containers.append(_CONTAINERS[token.type])
        elif token.type.replace("_close", "_open") in _CONTAINERS:
            containers.pop()
        elif token.type == "fence" and token.map is not None:
            block, problem = _fence(token.info, token.markup, token.map, lines, file, containers)
            blocks += [block] if block is not None else []
            problems += [problem] if problem is not None else []
        elif token.type == "html_block" and token.map is not None:
            problems += _fences_within(token.map, lines, file, _IN_HTML)
        elif token.type == "code_block" and token.map is not None:
            problems += _fences_within(token.map, lines, file, _INDENTED)
    if problems:
        raise PolicyInvalid(problems)
    return blocks


def _fence(
    info: str, fence: str, span: list[int], lines: list[str], file: str, containers: list[str]
) -> tuple[Block | None, PolicyError | None]:
    """The policy block a fenced code block is, or the error it is, or neither (other code)."""
    start, end = span
    words = info.split()
    if not any(word == TAG or _looks_like_policy(word) for word in words):
        return None, None
    column = lines[start].find(fence) + 1
    if words != [TAG]:
        return None, PolicyError(
            Where(file, start + 1, column + len(fence)),
            f'a code block tagged "{info.strip()}" is not read as rules; tag it "{TAG}"',
        )
    if containers:
        return None, PolicyError(
            Where(file, start + 1, column),
            f"this policy block is inside {containers[-1]}, where it is not read as rules; "
            "write it at the top level of the file",
        )
    if not (end - 1 > start and _closes(lines[end - 1], fence)):
        return None, PolicyError(
            Where(file, start + 1, column),
            f"this policy block is never closed (close it with {fence})",
        )
    return Block(file, start + 1, start + 2, "\n".join(lines[start + 1 : end - 1])), None


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(fence) and set(stripped) == {fence[0]}


_IN_HTML = (
    "this policy block is inside HTML (a comment or a tag), hidden when the file is rendered;"
    " it is not read as rules: write it at the top level of the file"
)
_INDENTED = (
    "this policy block is indented by 4 spaces or more, which makes it a code sample, not"
    " rules: start its fence at the beginning of the line"
)


def _fences_within(span: list[int], lines: list[str], file: str, why: str) -> list[PolicyError]:
    """A policy block written where Markdown reads no fence: inside HTML (a comment hides it
    when rendered), or indented into a code sample. Never read as rules, so an error."""
    problems = []
    for number in range(span[0], span[1]):
        opening = _FENCE_LINE.search(lines[number])
        words = opening.group("info").split() if opening else []
        if any(word == TAG or _looks_like_policy(word) for word in words):
            column = lines[number].find(opening["fence"]) + 1
            problems.append(PolicyError(Where(file, number + 1, column), why))
    return problems


def _looks_like_policy(tag: str) -> bool:
    lowered = tag.lower().strip(":{}.")
    return tag != TAG and (
        lowered in (TAG, "policies") or difflib.SequenceMatcher(None, lowered, TAG).ratio() >= 0.75
    )
