"""The service's active policy (`GET /api/agent/policies`) beside the local one in force, with
drift flagged (`policy.drift`): the summary, each rule that differs, and both policies as YAML.

Everything the service sent is shown inert; so is the local policy (it quotes a file)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Static

from svc_console.core.sanitize import inert, inert_line
from svc_console.policy.drift import Drift
from svc_console.tui.colors import Palette

MAX_DIFFERENCES = 50


@dataclass(frozen=True)
class DriftShown:
    """What the service tab shows: a note (asking, unreachable), or the comparison."""

    note: str | None = None
    tone: str = "label"
    drift: Drift | None = None
    local: dict[str, Any] | None = None  # the rules in force, as JSON; None: none in force
    service: dict[str, Any] | None = None  # the service's merged rules, None when invalid
    service_source: str = "SKILLS.md"


def _value(value: Any) -> str:
    if value is None:
        return "(absent)"
    return inert_line(json.dumps(value, ensure_ascii=False, default=str), 60)


def summary_text(shown: DriftShown, colours: Palette) -> Text:
    if shown.note is not None:
        return Text(inert_line(shown.note, 300), colours.tone(shown.tone))
    drift = shown.drift
    text = Text()
    if drift is None:
        text.append("No local policy in force to compare: ", colours.warn)
        text.append("the service runs its own SKILLS.md (below); here the operator decides all.")
        return text
    tone = colours.good if drift.in_sync else colours.high
    summary = drift.summary()  # "in sync: ..." or "drift: ..."
    text.append(inert_line(summary[:1].upper() + summary[1:], 200), tone)
    service_sha = drift.service_sha256[:12] if drift.service_sha256 else "unknown"
    text.append(
        f"\nlocal {drift.local_sha256[:12]} · service {inert_line(service_sha, 12)}"
        f" ({inert_line(shown.service_source, 40)})",
        colours.label,
    )
    for problem in drift.service_problems[:MAX_DIFFERENCES]:
        text.append("\n  ")
        text.append(inert_line(problem, 200), colours.high)
    for difference in drift.differences[:MAX_DIFFERENCES]:
        text.append("\n  ")
        text.append(inert_line(difference.path, 60), "bold")
        text.append(": local ", colours.label)
        text.append(_value(difference.local))
        text.append(" · service ", colours.label)
        text.append(_value(difference.service))
    more = len(drift.differences) - MAX_DIFFERENCES
    if more > 0:
        text.append(f"\n  … and {more} more", colours.label)
    return text


def rules_text(rules: dict[str, Any] | None, absent: str, colours: Palette) -> Text:
    if rules is None:
        return Text(absent, colours.label)
    dumped = yaml.safe_dump(rules, sort_keys=False, allow_unicode=True, width=1000)
    return Text(inert(dumped.rstrip(), 20_000))


class PolicyDrift(VerticalScroll):
    DEFAULT_CSS = """
    PolicyDrift { height: 1fr; padding: 0 1; }
    PolicyDrift #drift-sides { height: auto; margin-top: 1; }
    PolicyDrift .drift-side { width: 1fr; height: auto; }
    PolicyDrift .drift-title { text-style: bold; background: $panel; padding: 0 1; }
    PolicyDrift .drift-rules { padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static("", id="drift-summary", markup=False)
        with Horizontal(id="drift-sides"):
            with Vertical(classes="drift-side"):
                yield Static("Local (in force)", classes="drift-title", markup=False)
                yield Static("", id="drift-local", classes="drift-rules", markup=False)
            with Vertical(classes="drift-side"):
                yield Static(
                    "Service", id="drift-service-title", classes="drift-title", markup=False
                )
                yield Static("", id="drift-service", classes="drift-rules", markup=False)

    def show(self, shown: DriftShown, colours: Palette) -> None:
        self.query_one("#drift-summary", Static).update(summary_text(shown, colours))
        sides = self.query_one("#drift-sides")
        sides.display = shown.note is None
        if shown.note is not None:
            return
        self.query_one("#drift-local", Static).update(
            rules_text(shown.local, "no policy in force", colours)
        )
        title = Text(f"Service ({inert_line(shown.service_source, 40)})")
        self.query_one("#drift-service-title", Static).update(title)
        self.query_one("#drift-service", Static).update(
            rules_text(shown.service, "the service's policy cannot be read", colours)
        )
