"""The selected item of the catalogue, in full: an endpoint's record and its skill.md, or a
dataset's listing, its free trial (coverage of the fields the operator needs, preview rows) and
its datacard.

Everything shown here came from the network. Each value goes through `core.sanitize` into a
`rich.text.Text` (never parsed as markup) and the Statics have markup off; skill.md goes to
`InertMarkdown`. Colour comes from the theme, never from the text.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from svc_console.core.datasets import (
    CoverageReport,
    Datacard,
    DatasetListing,
    Preview,
    TrialResult,
)
from svc_console.core.models import EndpointRecord
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert, inert_line
from svc_console.core.taxonomy import PRODUCT_CLASSES, domain_label
from svc_console.tui.catalogue.skill_view import InertMarkdown
from svc_console.tui.catalogue.tables import cut
from svc_console.tui.colors import Palette

PREVIEW_COLUMNS = 8
PREVIEW_COLUMN_CELLS = 14  # the room one preview column needs to say something
PREVIEW_ROWS = 8
LIST_ITEMS = 12


def _line(*parts: str | tuple[str, str]) -> Text:
    return Text.assemble(*parts, no_wrap=False)


def _joined(values: Iterable[Any], width: int = 30, limit: int = LIST_ITEMS) -> str:
    """A list from the network as one line: each item sanitised and cut, at most `limit`."""
    items = [cut(value, width) for value in values]
    more = len(items) - limit
    text = ", ".join(items[:limit])
    return f"{text}, … {more} more" if more > 0 else (text or "-")


def _size(size: int) -> str:
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{size} B"


def _heading(text: str, colours: Palette) -> Text:
    return Text(f"── {text} ", style=colours.heading)


# -- endpoints ------------------------------------------------------------------------------------


def price_words(record: EndpointRecord) -> str:
    pricing = record.pricing
    if pricing.model == "fixed":
        return f"{format_usdc(pricing.amount_usdc)} USDC per call (fixed)"
    return (
        f"{format_usdc(pricing.min_usdc)}\N{EN DASH}{format_usdc(pricing.max_usdc)} USDC per call"
        f" (dynamic; a max price filter counts it at {format_usdc(pricing.max_usdc)})"
    )


def _inputs(schema: dict[str, Any]) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return "none"
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    parts = []
    for name, spec in list(properties.items())[:LIST_ITEMS]:
        kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
        star = "*" if name in required else ""
        parts.append(f"{cut(name, 24)}{star} ({cut(kind, 12)})")
    more = len(properties) - LIST_ITEMS
    return ", ".join(parts) + (f", … {more} more" if more > 0 else "")


def endpoint_text(record: EndpointRecord, colours: Palette) -> Text:
    """Everything the record says, one fact per line."""
    dim = colours.label
    verified = ("verified", colours.good) if record.verified else ("not verified", colours.warn)
    origin = "registered by its publisher" if record.origin == "publisher" else "from a registry"
    price_style = colours.warn if record.pricing.model == "dynamic" else ""
    lines = [
        Text(inert_line(record.name, 80), style="bold"),
        _line((inert_line(record.id, 60), dim)),
        _line(
            "by ",
            (inert_line(record.provider_name, 50), "bold"),
            (f" ({inert_line(record.provider, 40)})", dim),
        ),
        _line(verified, f" · {origin}"),
        _line(
            f"{inert_line(record.domain_type, 6)} {domain_label(record.domain_type)} · "
            f"{inert_line(record.product_class, 6)}"
            f" {PRODUCT_CLASSES.get(record.product_class, 'unknown class')}"
        ),
        _line(("price ", dim), (price_words(record), price_style)),
        _line(
            ("settles on ", dim),
            _joined(record.chains, 16),
            ("  via ", dim),
            _joined(record.protocols, 8),
        ),
        _line(
            ("quality ", dim),
            f"{record.quality_score:.2f}",
            ("  reliability ", dim),
            f"{record.reliability:.3f}",
        ),
        _line(("tags ", dim), _joined(record.tags, 24)),
        _line(("inputs ", dim), _inputs(record.inputs), (" (* required)", dim)),
    ]
    if record.description:
        lines.append(Text(inert(record.description, 1000)))
    return Text("\n").join(lines)


class EndpointDetail(VerticalScroll):
    """An endpoint's record, then its skill.md as Markdown (fetched when it is selected)."""

    DEFAULT_CSS = """
    EndpointDetail > #endpoint-record { width: 100%; }
    EndpointDetail > .skill-status { width: 100%; margin-top: 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static("", id="endpoint-record", markup=False)
        yield Static("", id="skill-status", classes="skill-status", markup=False)
        yield InertMarkdown(id="skill")

    def show_record(self, record: EndpointRecord | None, colours: Palette) -> None:
        text = endpoint_text(record, colours) if record is not None else Text("")
        self.query_one("#endpoint-record", Static).update(text)
        self.scroll_home(animate=False)

    def show_skill_status(self, status: str, colours: Palette, *, error: bool = False) -> None:
        """Loading or failed: the status in the heading, no document (hidden, not re-rendered:
        typing moves the selection at every keystroke)."""
        heading = _heading("skill.md", colours)
        heading.append(inert_line(status, 300), style=colours.high if error else colours.label)
        self.query_one("#skill-status", Static).update(heading)
        self.query_one(InertMarkdown).display = False

    def show_skill(self, untrusted: str, colours: Palette) -> None:
        self.query_one("#skill-status", Static).update(_heading("skill.md", colours))
        markdown = self.query_one(InertMarkdown)
        markdown.show(untrusted)
        markdown.display = True

    def clear(self) -> None:
        self.query_one("#endpoint-record", Static).update("")
        self.query_one("#skill-status", Static).update("")
        self.query_one(InertMarkdown).display = False


# -- datasets -------------------------------------------------------------------------------------


def dataset_text(listing: DatasetListing, colours: Palette) -> Text:
    dim = colours.label
    q = listing.quality_signals
    price = "free" if not listing.price_usdc else f"{format_usdc(listing.price_usdc)} USDC"
    publisher = ("verified publisher", colours.good) if q.verified_publisher else ("", "")
    lines = [
        Text(inert_line(listing.title, 100), style="bold"),
        _line((inert_line(listing.id, 60), dim)),
        _line(
            "by ",
            (inert_line(listing.publisher, 50), "bold"),
            (" · license ", dim),
            inert_line(listing.license, 30),
        ),
        _line(
            f"{inert_line(listing.category, 30)} · {inert_line(listing.tier, 12)} · "
            f"{inert_line(listing.modality, 12)} · {inert_line(listing.format, 8)}"
        ),
        _line(
            ("price ", dim), (f"{price} per access", colours.good if not listing.price_usdc else "")
        ),
        _line(
            f"{listing.row_count:,} rows · {_size(listing.size_bytes)} · "
            f"{listing.downloads:,} downloads · updated {inert_line(listing.updated_at, 12)}"
        ),
        _line(
            ("quality ", dim),
            f"{q.score:.2f}: completeness {q.completeness:.2f} · schema {q.schema_accuracy:.2f}"
            f" · duplicates {q.duplicate_rate:.0%} · {q.freshness_days} days old"
            f" ({inert_line(q.update_frequency, 20)}) ",
            publisher,
        ),
        _line(("columns ", dim), _joined(listing.columns, 24, 30)),
        _line(("tags ", dim), _joined(listing.tags, 24)),
    ]
    if listing.description:
        lines.append(Text(inert(listing.description, 1000)))
    return Text("\n").join(lines)


def coverage_text(report: CoverageReport, colours: Palette) -> Text:
    """How the dataset's schema covers the fields the operator asked for."""
    if not report.required_fields:
        return Text(
            "No fields to check: t names the fields you need (or set required fields in f).",
            style=colours.label,
        )
    asked = len(report.required_fields)
    tone = colours.good if report.complete else colours.high if not report.present else colours.warn
    text = Text.assemble(
        ("coverage ", colours.label),
        (f"{len(report.present)} of {asked} fields ({report.coverage:.0%})", f"bold {tone}"),
    )
    if report.present:
        text.append("\npresent ", style=colours.label)
        text.append(_joined(report.present, 24, 30), style=colours.good)
    if report.missing:
        text.append("\nmissing ", style=colours.label)
        text.append(_joined(report.missing, 24, 30), style=colours.high)
    return text


def preview_table(preview: Preview, colours: Palette, width: int = 80) -> RenderableType:
    """The trial's sample rows as a small table: the first rows, and as many of the first
    columns as `width` cells hold legibly (z zooms the detail to see more)."""
    if not preview.columns or not preview.rows:
        return Text("No preview rows.", style=colours.label)
    columns = preview.columns[: max(2, min(PREVIEW_COLUMNS, width // PREVIEW_COLUMN_CELLS))]
    table = Table(
        box=None, padding=(0, 1), header_style=colours.heading, show_edge=False, expand=False
    )
    for name in columns:
        table.add_column(Text(cut(name, 16)), no_wrap=True, overflow="ellipsis", max_width=18)
    for row in preview.rows[:PREVIEW_ROWS]:
        table.add_row(*(Text(cut("" if row.get(c) is None else row.get(c), 24)) for c in columns))
    hidden = len(preview.columns) - len(columns)
    if hidden > 0:
        more = f"… {hidden} more columns (z shows the detail wider)"
        return Group(table, Text(more, style=colours.label))
    return table


def datacard_text(card: Datacard, colours: Palette) -> Text:
    dim = colours.label
    stats, pricing, provenance = card.statistics, card.pricing, card.provenance
    lines = [
        _line(
            ("version ", dim),
            inert_line(card.version, 20),
            (" · analysed ", dim),
            inert_line(card.analyzed_at, 30),
        ),
        Text(inert(card.summary, 1000)),
        _line(("intended use ", dim), _joined(card.intended_use, 60)),
    ]
    for limitation in card.limitations[:LIST_ITEMS]:
        lines.append(_line(("limitation ", colours.warn), inert_line(limitation, 200)))
    lines += [
        _line(
            ("provenance ", dim),
            _joined(provenance.sources, 40),
            (" · collected by ", dim),
            inert_line(provenance.collection, 80),
            (" · updated ", dim),
            inert_line(provenance.update_frequency, 20),
        ),
        _line(
            ("statistics ", dim),
            f"{stats.row_count:,} rows · {stats.column_count} columns · "
            f"{_size(stats.size_bytes)} · {stats.null_rate:.1%} empty cells",
        ),
        _line(
            ("pricing ", dim),
            f"{inert_line(pricing.tier, 12)} · {format_usdc(pricing.price_usdc)} USDC · ",
            _joined(pricing.protocols, 10) if pricing.protocols else "no payment",
            (" · networks ", dim),
            _joined(pricing.networks, 24) if pricing.networks else "-",
        ),
    ]
    columns = Text("schema", style=dim)
    for column in card.columns[:30]:
        nullable = " nullable" if column.nullable else ""
        columns.append(f"\n  {cut(column.name, 24)} ", style="bold")
        columns.append(f"{cut(column.type, 12)}{nullable}", style=dim)
        if column.description:
            columns.append(f"  {cut(column.description, 60)}")
    if len(card.columns) > 30:
        columns.append(f"\n  … {len(card.columns) - 30} more columns", style=dim)
    lines.append(columns)
    return Text("\n").join(lines)


class DatasetDetail(VerticalScroll):
    """A dataset's listing, its trial (coverage and preview) and its datacard."""

    DEFAULT_CSS = """
    DatasetDetail > Static { width: 100%; }
    DatasetDetail > .trial-heading { margin-top: 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static("", id="dataset-listing", markup=False)
        yield Static("", id="trial-status", classes="trial-heading", markup=False)
        yield Static("", id="coverage", markup=False)
        yield Static("", id="preview", markup=False)
        yield Static("", id="datacard-heading", classes="trial-heading", markup=False)
        yield Static("", id="datacard", markup=False)

    def show_listing(self, listing: DatasetListing | None, colours: Palette) -> None:
        text = dataset_text(listing, colours) if listing is not None else Text("")
        self.query_one("#dataset-listing", Static).update(text)
        self.scroll_home(animate=False)

    # The trial on screen: (dataset id, the fields its coverage is of), None while there is none.
    shown_trial: tuple[str, tuple[str, ...]] | None = None

    def show_trial_status(self, status: str, colours: Palette, *, error: bool = False) -> None:
        self.shown_trial = self._preview = None
        heading = _heading("trial (try_dataset, free)", colours)
        heading.append(inert_line(status, 300), style=colours.high if error else colours.label)
        self.query_one("#trial-status", Static).update(heading)
        for part in ("#coverage", "#preview", "#datacard-heading", "#datacard"):
            self.query_one(part, Static).update("")

    _preview: tuple[Preview, Palette] | None = None

    def on_resize(self) -> None:
        # Zooming widens the detail: the preview shows as many columns as now fit.
        if self._preview is not None:
            preview, colours = self._preview
            table = preview_table(preview, colours, self.content_size.width)
            self.query_one("#preview", Static).update(table)

    def show_trial(self, trial: TrialResult, colours: Palette) -> None:
        self.shown_trial = (trial.dataset_id, tuple(trial.coverage.required_fields))
        self._preview = (trial.preview, colours)
        self.query_one("#trial-status", Static).update(
            _heading("trial (try_dataset, free)", colours)
        )
        self.query_one("#coverage", Static).update(coverage_text(trial.coverage, colours))
        table = preview_table(trial.preview, colours, self.content_size.width)
        self.query_one("#preview", Static).update(table)
        self.query_one("#datacard-heading", Static).update(_heading("datacard", colours))
        self.query_one("#datacard", Static).update(datacard_text(trial.datacard, colours))

    def clear(self) -> None:
        self.shown_trial = self._preview = None
        for part in self.query(Static):
            part.update("")
