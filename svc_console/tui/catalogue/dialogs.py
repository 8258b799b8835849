"""The catalogue's dialogs: every filter of `list_market_apis`, every filter of `list_datasets`
(and their order), and the fields a dataset's trial should check.

Each validates in place (an inline error, the dialog stays open) and dismisses with a value the
screen uses as it is, or with None on escape. The query itself is typed in the screen's search
box, so it is kept as it is. Category names come from the cache (the service's text) and are
drawn inert.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from svc_console.core.catalogue_filters import (
    SORT_LABELS,
    DatasetFilter,
    MarketFilter,
    parse_fields,
    parse_price,
)
from svc_console.core.datasets import FORMATS, MODALITIES, SORT_ORDERS, TIERS
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert_line
from svc_console.core.taxonomy import CHAINS, DOMAIN_TYPES, PRODUCT_CLASSES
from svc_console.tui.bindings import bindings

_CSS = """
    MarketFilterDialog, DatasetFilterDialog, TrialFieldsDialog { align: center middle; }
    MarketFilterDialog #dialog, DatasetFilterDialog #dialog { width: 72; }
    .catalogue-filter-grid {
        grid-size: 2;
        grid-columns: 14 1fr;
        grid-rows: 1;
        grid-gutter: 0 1;
        height: auto;
    }
    .catalogue-filter-grid Label { color: $text-muted; }
"""


def _select(id: str, options: Sequence[tuple[str, str]], value: str | None) -> Select[str]:
    """A compact choice among `options` (label, value), "any" when nothing is chosen. A current
    value the options lack (a category gone since the last sync) stays offered."""
    choices = [(Text(inert_line(label, 50)), key) for label, key in options]
    if value is not None and value not in {key for _, key in options}:
        choices.append((Text(inert_line(value, 50)), value))
    return Select(
        choices,
        prompt="any",
        value=value if value is not None else Select.NULL,
        compact=True,
        id=id,
    )


class _Dialog(ModalScreen[Any]):
    BINDINGS = bindings("modal")
    DEFAULT_CSS = _CSS

    def on_mount(self) -> None:
        for field in self.query(Input):
            field.cursor_blink = getattr(self.app, "cursor_blink", True)
        self.query("Select, Input").first().focus()

    def show_error(self, message: str) -> None:
        error = self.query_one("#dialog-error", Static)
        error.update(Text(message))
        error.add_class("-shown")

    def chosen(self, id: str) -> str | None:
        value = self.query_one(f"#{id}", Select).value
        return None if value is Select.NULL else str(value)

    def text(self, id: str) -> str:
        return self.query_one(f"#{id}", Input).value

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#confirm")
    def _confirm(self) -> None:
        self.submit()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.submit()

    def submit(self) -> None:
        raise NotImplementedError

    def buttons(self, *, clear: bool = True) -> ComposeResult:
        yield Static("", id="dialog-error", markup=False)
        with Horizontal(id="dialog-buttons"):
            yield Button("Apply", variant="primary", id="confirm")
            if clear:
                yield Button("Clear all", id="clear")
            yield Button("Cancel", id="cancel")


class MarketFilterDialog(_Dialog):
    """The filters of `list_market_apis`; dismisses with the new `MarketFilter`."""

    def __init__(self, current: MarketFilter) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        f = self.current
        price = "" if f.max_price_usdc is None else format_usdc(f.max_price_usdc)
        with Vertical(id="dialog"):
            yield Label("Filter market APIs", id="dialog-title")
            with Grid(classes="catalogue-filter-grid"):
                yield Label("domain type")
                yield _select(
                    "domain_type",
                    [(f"{code} {label}", code) for code, label in DOMAIN_TYPES.items()],
                    f.domain_type,
                )
                yield Label("product class")
                yield _select(
                    "product_class",
                    [(f"{code} {label}", code) for code, label in PRODUCT_CLASSES.items()],
                    f.product_class,
                )
                yield Label("chain")
                yield _select("chain", [(chain, chain) for chain in CHAINS], f.chain)
                yield Label("verified")
                yield Checkbox(
                    "verified providers only", f.verified_only, compact=True, id="verified_only"
                )
                yield Label("max price")
                yield Input(
                    price, placeholder="USDC per call, e.g. 0.05", compact=True, id="max_price"
                )
            yield Static(
                "A dynamic price counts at its maximum, as the service counts it.",
                classes="dialog-explain",
                markup=False,
            )
            yield from self.buttons()

    def submit(self) -> None:
        try:
            price = parse_price(self.text("max_price"))
        except ValueError as exc:
            self.show_error(str(exc))
            return
        self.dismiss(
            MarketFilter(
                query=self.current.query,
                domain_type=self.chosen("domain_type"),
                product_class=self.chosen("product_class"),
                chain=self.chosen("chain"),
                verified_only=self.query_one("#verified_only", Checkbox).value,
                max_price_usdc=price,
            )
        )

    @on(Button.Pressed, "#clear")
    def _clear(self) -> None:
        self.dismiss(MarketFilter(query=self.current.query))


class DatasetFilterDialog(_Dialog):
    """The filters of `list_datasets` / `search_datasets` and the order; dismisses with the new
    `DatasetFilter`."""

    def __init__(self, current: DatasetFilter, categories: Sequence[str]) -> None:
        super().__init__()
        self.current = current
        self.categories = list(categories)

    def compose(self) -> ComposeResult:
        f = self.current
        price = "" if f.max_price_usdc is None else format_usdc(f.max_price_usdc)
        with Vertical(id="dialog"):
            yield Label("Filter datasets", id="dialog-title")
            with Grid(classes="catalogue-filter-grid"):
                yield Label("category")
                yield _select("category", [(c, c) for c in self.categories], f.category)
                yield Label("tier")
                yield _select("tier", [(t, t) for t in TIERS], f.tier)
                yield Label("modality")
                yield _select("modality", [(m, m) for m in MODALITIES], f.modality)
                yield Label("format")
                yield _select("format", [(x, x) for x in FORMATS], f.format)
                yield Label("max price")
                yield Input(
                    price, placeholder="USDC per access, e.g. 10", compact=True, id="max_price"
                )
                yield Label("required fields")
                yield Input(
                    ", ".join(f.required_fields),
                    placeholder="columns that must exist, e.g. ticker, date",
                    compact=True,
                    id="required_fields",
                )
                yield Label("order")
                yield Select(
                    [(SORT_LABELS[order], order) for order in SORT_ORDERS],
                    allow_blank=False,
                    value=f.sort_by,
                    compact=True,
                    id="sort_by",
                )
            yield from self.buttons()

    def submit(self) -> None:
        try:
            price = parse_price(self.text("max_price"))
            fields = parse_fields(self.text("required_fields"))
        except ValueError as exc:
            self.show_error(str(exc))
            return
        self.dismiss(
            DatasetFilter(
                query=self.current.query,
                category=self.chosen("category"),
                tier=self.chosen("tier"),
                modality=self.chosen("modality"),
                format=self.chosen("format"),
                max_price_usdc=price,
                required_fields=fields,
                sort_by=self.chosen("sort_by") or "newest",
            )
        )

    @on(Button.Pressed, "#clear")
    def _clear(self) -> None:
        self.dismiss(DatasetFilter(query=self.current.query))


class TrialFieldsDialog(_Dialog):
    """The fields `try_dataset` checks for the selected dataset; dismisses with a tuple (empty:
    check none)."""

    def __init__(self, dataset_title: str, fields: Sequence[str]) -> None:
        super().__init__()
        self.dataset_title = dataset_title
        self.fields = tuple(fields)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Fields to check", id="dialog-title")
            yield Static(
                Text(
                    f"The trial of {inert_line(self.dataset_title, 60)} reports which of these"
                    " columns its schema has. Free; nothing is spent."
                ),
                classes="dialog-explain",
                markup=False,
            )
            yield Input(
                ", ".join(self.fields),
                placeholder="e.g. ticker, date, close",
                compact=True,
                id="trial_fields",
            )
            yield from self.buttons(clear=False)

    def submit(self) -> None:
        try:
            fields = parse_fields(self.text("trial_fields"))
        except ValueError as exc:
            self.show_error(str(exc))
            return
        self.dismiss(fields)
