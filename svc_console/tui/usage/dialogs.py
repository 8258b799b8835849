"""The usage screen's two dialogs: the filters (date range, agent, provider, chain, domain type,
state) and the export (format and file).

Each validates in place (an inline error, the dialog stays open) and dismisses with a value the
screen can use as it is, or with None on escape. The choices offered come from the ledger (the
values present), and are drawn inert: a provider's name is never read as markup.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, RadioButton, RadioSet, Select, Static

from svc_console.core.sanitize import inert_line
from svc_console.core.taxonomy import domain_label
from svc_console.core.usage import DAY_S, UsageFilter, iso_instant
from svc_console.core.wording import plural
from svc_console.services.usage_export import ExportError, parse_since, parse_until
from svc_console.tui.bindings import bindings

STATE_CHOICES = (
    ("flagged", "flagged (any of these)"),
    ("uncovered", "no approval covers it"),
    ("over", "above the approval"),
    ("conflict", "differs from a charge held"),
    ("ok", "covered by an approval"),
)


@dataclass(frozen=True)
class FilterChoices:
    """The values each filter can take, as found in the ledger."""

    agents: list[str]
    providers: list[str]
    chains: list[str]
    domain_types: list[str]


_DIALOG_CSS = """
    UsageFilterDialog, UsageExportDialog { align: center middle; }
    UsageFilterDialog #dialog { width: 72; }
    #usage-filter-grid {
        grid-size: 2;
        grid-columns: 12 1fr;
        grid-rows: 1;
        grid-gutter: 0 1;
        height: auto;
    }
    #usage-filter-grid Label { color: $text-muted; }
    #usage-export-path { margin-top: 1; }
    #usage-export-format { height: auto; width: 100%; border: none; }
    #usage-export-format RadioButton { width: auto; }
"""


def example_dates(now: float) -> tuple[str, str]:
    """Dates a filter could be given, from the screen's clock: the first of this month and today
    (UTC), so the examples never read as months old."""
    today = time.strftime("%Y-%m-%d", time.gmtime(now))
    return f"{today[:8]}01", today


def _text_for_since(at: float | None) -> str:
    if at is None:
        return ""
    return iso_instant(at)[:10] if at % DAY_S == 0 else iso_instant(at)


def _text_for_until(at: float | None) -> str:
    if at is None:
        return ""
    return iso_instant(at - DAY_S)[:10] if at % DAY_S == 0 else iso_instant(at)


class _Dialog(ModalScreen[object]):
    BINDINGS = bindings("modal")
    DEFAULT_CSS = _DIALOG_CSS
    # Scoped, these rules would apply only inside a `_Dialog`, and the export dialog opened in
    # the top-left corner; unscoped, each still names its dialog or an id of its own.
    SCOPED_CSS = False

    def show_error(self, message: str) -> None:
        error = self.query_one("#dialog-error", Static)
        error.update(Text(message))
        error.add_class("-shown")

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)


class UsageFilterDialog(_Dialog):
    """Edit every filter at once; dismisses with the new `UsageFilter`."""

    def __init__(
        self,
        current: UsageFilter,
        choices: FilterChoices,
        now: float,
        *,
        provider_name: Callable[[str], str] = str,
    ) -> None:
        super().__init__()
        self.current = current
        self.choices = choices
        self.now = now
        self.provider_name = provider_name  # a provider's id as shown (its name, when known)

    def _select(self, id: str, values: list[str], value: str | None, label=None) -> Select:
        options = [(Text(inert_line(label(v) if label else v, 50)), v) for v in values]
        if value is not None and value not in values:
            options.append((Text(inert_line(value, 50)), value))
        return Select(
            options,
            prompt="any",
            value=value if value is not None else Select.NULL,
            compact=True,
            id=id,
        )

    def compose(self) -> ComposeResult:
        f, c = self.current, self.choices
        first_of_month, today = example_dates(self.now)
        with Vertical(id="dialog"):
            yield Label("Filter usage", id="dialog-title")
            with Grid(id="usage-filter-grid"):
                yield Label("from")
                yield Input(
                    _text_for_since(f.since),
                    placeholder=f"30d, {first_of_month} or empty",
                    compact=True,
                    id="since",
                )
                yield Label("to (incl.)")
                yield Input(
                    _text_for_until(f.until),
                    placeholder=f"{today} or empty",
                    compact=True,
                    id="until",
                )
                yield Label("agent")
                yield self._select("agent", c.agents, f.agent)
                yield Label("provider")
                yield self._select("provider", c.providers, f.provider, label=self.provider_name)
                yield Label("chain")
                yield self._select("chain", c.chains, f.chain)
                yield Label("domain type")
                yield self._select(
                    "domain_type",
                    c.domain_types,
                    f.domain_type,
                    label=lambda code: f"{code} {domain_label(code)}",
                )
                yield Label("state")
                yield Select(
                    [(label, value) for value, label in STATE_CHOICES],
                    prompt="any",
                    value=f.state if f.state is not None else Select.NULL,
                    compact=True,
                    id="state",
                )
            yield Static("", id="dialog-error", markup=False)
            with Horizontal(id="dialog-buttons"):
                yield Button("Apply", variant="primary", id="confirm")
                yield Button("Clear all", id="clear")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        since = self.query_one("#since", Input)
        for field in self.query(Input):
            field.cursor_blink = getattr(self.app, "cursor_blink", True)
        since.focus()

    def _chosen(self, id: str) -> str | None:
        value = self.query_one(f"#{id}", Select).value
        return None if value is Select.NULL else str(value)

    def _submit(self) -> None:
        since_text = self.query_one("#since", Input).value.strip()
        until_text = self.query_one("#until", Input).value.strip()
        try:
            since = parse_since(since_text, self.now) if since_text else None
            until = parse_until(until_text, self.now) if until_text else None
            chosen = UsageFilter(
                since=since,
                until=until,
                agent=self._chosen("agent"),
                provider=self._chosen("provider"),
                chain=self._chosen("chain"),
                domain_type=self._chosen("domain_type"),
                state=self._chosen("state"),
            )
        except (ExportError, ValueError) as exc:
            self.show_error(str(exc))
            return
        self.dismiss(chosen)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._submit()

    @on(Button.Pressed, "#confirm")
    def _confirm(self) -> None:
        self._submit()

    @on(Button.Pressed, "#clear")
    def _clear(self) -> None:
        self.dismiss(UsageFilter())


@dataclass(frozen=True)
class ExportChoice:
    fmt: str
    path: Path


class UsageExportDialog(_Dialog):
    """Choose the format and the file; dismisses with an `ExportChoice`."""

    def __init__(self, folder: Path, stamp: str, *, described: str, count: int | None) -> None:
        super().__init__()
        self.folder = folder
        self.stamp = stamp
        self.described = described
        self.count = count

    def _path_for(self, fmt: str) -> str:
        return str(self.folder / f"usage-{self.stamp}.{fmt}")

    def compose(self) -> ComposeResult:
        how_many = "every charge" if self.count is None else plural(self.count, "charge")
        with Vertical(id="dialog"):
            yield Label("Export usage", id="dialog-title")
            yield Static(
                Text(f"{how_many} shown ({self.described}), oldest first."),
                markup=False,
                classes="dialog-explain",
            )
            with RadioSet(id="usage-export-format"):
                yield RadioButton("CSV (spreadsheets)", value=True, id="fmt-csv")
                yield RadioButton("JSON (exact)", id="fmt-json")
            yield Input(self._path_for("csv"), id="usage-export-path", compact=True)
            yield Static("", id="dialog-error", markup=False)
            with Horizontal(id="dialog-buttons"):
                yield Button("Export", variant="primary", id="confirm")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        path = self.query_one("#usage-export-path", Input)
        path.cursor_blink = getattr(self.app, "cursor_blink", True)
        path.focus()

    @property
    def fmt(self) -> str:
        pressed = self.query_one(RadioSet).pressed_button
        return "json" if pressed is not None and pressed.id == "fmt-json" else "csv"

    @on(RadioSet.Changed)
    def _format_changed(self) -> None:
        field = self.query_one("#usage-export-path", Input)
        # Follow the format in the proposed name, unless the operator typed a name of their own.
        for fmt in ("csv", "json"):
            if field.value == self._path_for(fmt):
                field.value = self._path_for(self.fmt)
        field.focus()  # so enter exports, as it does before the format is changed

    def _submit(self) -> None:
        text = self.query_one("#usage-export-path", Input).value.strip()
        if not text:
            self.show_error("A file name is required.")
            return
        path = Path(text).expanduser()
        if path.is_dir():
            self.show_error(f"{inert_line(path, 60)} is a folder; give a file name.")
            return
        self.dismiss(ExportChoice(self.fmt, path))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._submit()

    @on(Button.Pressed, "#confirm")
    def _confirm(self) -> None:
        self._submit()
