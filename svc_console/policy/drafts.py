"""A policy author's draft: checked exactly as the broker would load it, compared with the saved
file, and saved so the watcher puts it in force.

The policies screen runs these in its workers; nothing here knows of Textual. A draft is judged
together with the other policy files in force (blocks combine across files, so a key given in two
files is an error only the set can show). Saving writes the file atomically and owner-only
(`core.private_files.write_private`): the watcher never sees half a file, and it reloads within a
second.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from svc_console.policy.engine import CompiledPolicy
from svc_console.policy.errors import PolicyError, PolicyInvalid, Where
from svc_console.policy.loader import LoadedPolicy, PolicyFile, load
from svc_console.policy.policy_tests import failures

# What a new policy file starts as: valid, and nothing approved without the operator.
TEMPLATE = """\
# SKILLS.md

What our agents may spend, and why. The prose is for people; the rules are the fenced `policy`
blocks (policies/README.md lists every rule). Nothing is approved automatically unless a rule
here says so.

```policy
per_call_max_usdc: 0.25
budgets:
  - name: daily allowance
    per: agent
    window: day
    warn_usdc: 4
    max_usdc: 5
```
"""


@dataclass(frozen=True)
class SavedFile:
    """A policy file as it is on disk: its text, or None when it does not exist (yet)."""

    path: Path
    name: str  # as errors and verdicts name it
    text: str | None
    problem: str | None = None  # why it cannot be read, when it exists but cannot

    @property
    def sha256(self) -> str | None:
        return None if self.text is None else PolicyFile(self.path, self.name, self.text).sha256


@dataclass(frozen=True)
class DraftCheck:
    """A set of policy texts judged as the broker would: loaded and compiled, or every error."""

    loaded: LoadedPolicy | None
    errors: tuple[PolicyError, ...] = ()
    tests: int = 0  # the policy-test examples the files hold, run once the policy loads
    failing: tuple[PolicyError, ...] = ()  # each failing or malformed one, at its line

    @property
    def valid(self) -> bool:
        return self.loaded is not None

    def errors_in(self, name: str) -> list[PolicyError]:
        return [error for error in self.errors if error.where.file == name]


def display_name(path: Path, home: Path) -> str:
    """How the editor names a file (and its errors): relative to the console's home when it is
    inside it (`SKILLS.md`, as `svc-console policy check SKILLS.md` run there prints), else the
    path."""
    try:
        return str(path.relative_to(home))
    except ValueError:
        return str(path)


def read_saved(path: Path, name: str) -> SavedFile:
    """The file as saved; a missing file is no error here (the editor offers to create it)."""
    try:
        return SavedFile(path, name, path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return SavedFile(path, name, None)
    except UnicodeDecodeError as exc:
        return SavedFile(path, name, None, f"is not UTF-8 text (byte {exc.start})")
    except OSError as exc:
        return SavedFile(path, name, None, f"cannot be read ({exc.strerror})")


def check(texts: Sequence[tuple[SavedFile, str | None]]) -> DraftCheck:
    """Judge the files with the given texts (None: the file as saved). A file with no text at
    all (missing, unreadable) is the error the broker would report for it."""
    files: list[PolicyFile] = []
    problems: list[PolicyError] = []
    for saved, text in texts:
        if text is None:
            text = saved.text
        if text is None:
            problems.append(PolicyError(Where(saved.name, 1), saved.problem or "no such file"))
            continue
        files.append(PolicyFile(saved.path, saved.name, text))
    try:
        loaded = load(files) if files else None
        compiled = CompiledPolicy(loaded) if loaded is not None else None  # it may refuse more
    except PolicyInvalid as exc:
        return DraftCheck(None, tuple(sorted([*problems, *exc.errors], key=lambda e: e.where)))
    if problems or loaded is None or compiled is None:
        return DraftCheck(None, tuple(problems))
    tests, failing = failures(compiled, files)
    return DraftCheck(loaded, tests=tests, failing=tuple(failing))


def diff_lines(saved: str | None, draft: str, name: str) -> list[str]:
    """The draft against the saved file as a unified diff (empty when they are the same)."""
    before = [] if saved is None else saved.splitlines()
    return list(
        difflib.unified_diff(
            before,
            draft.splitlines(),
            f"{name} (saved)" if saved is not None else f"{name} (new file)",
            f"{name} (draft)",
            lineterm="",
        )
    )


def changed_lines(saved: str | None, draft: str) -> tuple[int, int]:
    """(lines added, lines removed) by the draft."""
    added = removed = 0
    for line in diff_lines(saved, draft, "")[2:]:
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed


def save(path: Path, text: str) -> None:
    """Write the file atomically and owner-only; the policy watcher puts it in force."""
    from svc_console.core.private_files import write_private

    write_private(path, text)
