"""The lines above the policy editor: which version is in force and what the service runs, each
policy file as saved (valid or its first error's line, its version, whether it is the one in force,
when it was last saved and by whom), the draft's state, and which view is shown.

The screen computes the facts (`FileRow`, `DraftState`); these widgets only word them. File names
and who saved a file came from disk and the system: they are shown inert.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static

from svc_console.core.sanitize import inert_line
from svc_console.policy.errors import PolicyError
from svc_console.tui.colors import Palette
from svc_console.tui.present import duration

SHA = 12  # characters of a version's SHA-256 shown


@dataclass(frozen=True)
class FileRow:
    """One policy file as saved."""

    name: str
    exists: bool
    sha256: str | None
    errors: tuple[PolicyError, ...]
    in_force: bool
    saved_at: float | None = None
    saved_by: str | None = None
    current: bool = False
    problem: str | None = None  # it exists but cannot be read


@dataclass(frozen=True)
class PolicyState:
    """What the broker holds: `none`, `active`, `invalid` (LivePolicy's states) or `fixed` (the
    broker was given an engine of its own, not SKILLS.md files)."""

    state: str
    in_force: str | None  # the SHA-256 of the version in force
    service: str | None = None  # the drift summary, once the service answered
    service_in_sync: bool | None = None


@dataclass(frozen=True)
class DraftState:
    name: str
    new_file: bool
    modified: bool
    added: int = 0
    removed: int = 0
    checked: bool = False
    errors: tuple[PolicyError, ...] = ()
    saved: str | None = None  # the SHA-256 just saved from here
    saved_in_force: bool = False
    tests: int = 0  # policy-test examples run on the draft
    failing: int = 0  # of which fail (or are malformed)


def policy_line(state: PolicyState, colours: Palette) -> Text:
    text = Text()
    if state.state == "fixed":
        text.append("This broker runs a policy engine of its own: ", colours.warn)
        text.append("SKILLS.md files are not read, and nothing saved here is put in force.")
        return text
    if state.state == "none":
        text.append("No policy in force: ", colours.warn)
        text.append("the operator decides every request.")
    elif state.state == "invalid":
        text.append("Saved policy has errors: ", colours.high)
        if state.in_force:
            text.append(f"version {state.in_force[:SHA]} stays in force", colours.heading)
        else:
            text.append("no valid version, the operator decides every request")
        text.append(" · auto-approval suspended", colours.high)
    else:
        text.append("In force: ", colours.label)
        text.append(f"version {state.in_force and state.in_force[:SHA]}", colours.heading)
    if state.service is not None:
        text.append(" · service: ", colours.label)
        tone = colours.good if state.service_in_sync else colours.high
        text.append(inert_line(state.service, 70), tone)
    return text


def file_line(row: FileRow, now: float, colours: Palette) -> Text:
    text = Text()
    text.append("▸ " if row.current else "  ", colours.heading)
    text.append(inert_line(row.name, 40), "bold")
    text.append("  ")
    if row.problem is not None:
        text.append(inert_line(row.problem, 60), colours.high)
    elif not row.exists:
        text.append("not created yet", colours.warn)
    elif row.errors:
        first = row.errors[0]
        more = f" (+{len(row.errors) - 1})" if len(row.errors) > 1 else ""
        text.append(f"error at line {first.where.line}{more}", colours.high)
    else:
        text.append("valid", colours.good)
    if row.sha256:
        text.append(f" · {row.sha256[:SHA]}", colours.label)
        if row.in_force:
            text.append(" · in force", colours.good)
        else:
            text.append(" · not in force", colours.warn if row.errors else colours.label)
    if row.saved_at is not None:
        text.append(f" · saved {duration(now - row.saved_at)} ago", colours.label)
        if row.saved_by:
            text.append(f" by {inert_line(row.saved_by, 24)}", colours.label)
    return text


def draft_line(draft: DraftState, colours: Palette) -> Text:
    text = Text("Draft ", colours.label)
    if draft.saved is not None and not draft.modified:
        text.append(f"saved as {draft.saved[:SHA]}", colours.good)
        if draft.saved_in_force:
            text.append(" · in force", colours.good)
        else:
            text.append(" · waiting for the broker to load it", colours.warn)
        return text
    if not draft.checked:
        text.append("checking…", colours.label)
    elif draft.errors:
        count = len(draft.errors)
        first = draft.errors[0].where
        text.append(
            f"{count} error{'s' if count > 1 else ''}, first at {inert_line(first, 60)}",
            colours.high,
        )
        text.append(" · cannot be saved", colours.label)
    else:
        text.append("valid", colours.good)
        _tests(text, draft, colours)
    if draft.new_file:
        text.append(" · new file, ctrl+s creates it", colours.warn)
    elif draft.modified:
        text.append(f" · unsaved: +{draft.added} -{draft.removed} lines", colours.warn)
    else:
        text.append(" · same as saved", colours.label)
    return text


def _tests(text: Text, draft: DraftState, colours: Palette) -> None:
    if draft.failing:
        text.append(f" · {draft.failing} of {draft.tests} policy tests fail", colours.high)
    elif draft.tests:
        text.append(f" · {draft.tests} policy test{'s' * (draft.tests > 1)} pass", colours.good)


class PolicyStatus(Static):
    """The policy in force, the service's drift flag and one line per policy file."""

    DEFAULT_CSS = "PolicyStatus { height: auto; padding: 0 1; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)

    def show(self, state: PolicyState, rows: list[FileRow], now: float, colours: Palette) -> None:
        text = policy_line(state, colours)
        for row in rows:
            text.append("\n")
            text.append_text(file_line(row, now, colours))
        self.update(text)


class DraftStatus(Static):
    DEFAULT_CSS = "DraftStatus { height: auto; padding: 0 1; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)

    def show(self, draft: DraftState, colours: Palette) -> None:
        self.update(draft_line(draft, colours))


VIEWS = (("editor", "Editor", "e"), ("diff", "Diff", "v"), ("simulation", "Simulate", "t"))
VIEWS += (("service", "Service", "c"),)


class PolicyTabs(Static):
    """Which view is shown, with the key that shows each."""

    DEFAULT_CSS = "PolicyTabs { height: 1; padding: 0 1; background: $panel; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)

    def show(self, active: str, colours: Palette) -> None:
        text = Text()
        for name, title, key in VIEWS:
            style = f"reverse {colours.heading}" if name == active else ""
            text.append(f" {title} ", style)
            text.append(f"{key}  ", colours.label)
        self.update(text)
