"""The catalogue screen's lines of text: the sync line, each tab's filters line and what an empty
tab says. Plain functions of the screen's state, drawn by the screen."""

from __future__ import annotations

import time

from rich.text import Text

from svc_console.core.catalogue_filters import SORT_LABELS
from svc_console.core.sanitize import inert_line
from svc_console.ledger.catalogue_store import SyncState
from svc_console.services.catalogue_sync import SyncProgress
from svc_console.tui import present
from svc_console.tui.catalogue.search import DATASETS, MARKET, Tab
from svc_console.tui.colors import Palette


def when(at: float, now: float) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))
    age = now - at
    return f"{stamp} ({present.duration(age)} ago)" if age >= 60 else f"{stamp} (now)"


def sync_line(
    s: SyncState,
    syncing: bool,
    progress: SyncProgress | None,
    error: tuple[str, str] | None,
    colours: Palette,
    now: float,
) -> Text:
    """One line, the essentials first (a long error is cut at the edge, not wrapped away)."""
    line = Text(no_wrap=True, overflow="ellipsis")
    if syncing:
        p = progress
        line.append("Syncing the catalogue from the service… ", style="bold")
        if p is not None and p.stage == "storing":
            line.append("storing it")
        elif p is not None:
            of = f" of {p.total:,}" if p.total is not None else ""
            line.append(f"{p.stage} {p.fetched:,}{of}")
        if s.synced_at is not None:
            line.append(" · showing the cache meanwhile", style=colours.label)
    elif error:
        code, message = error
        line.append(f"Sync failed ({code})", style=colours.high)
        if s.synced_at is not None:
            line.append(" · showing the cache of ", style=colours.label)
            line.append(when(s.synced_at, now))
        else:
            line.append(" · nothing cached yet", style=colours.label)
        line.append(" · r retries · ", style=colours.label)
        line.append(message)
    elif s.synced_at is not None:
        line.append("synced ", style=colours.label)
        line.append(when(s.synced_at, now))
        line.append(f" · {s.endpoints:,} APIs · {s.datasets:,} datasets", style=colours.label)
        if not s.complete:
            line.append(
                f" (the service reports {s.endpoints_reported:,} and {s.datasets_reported:,})",
                style=colours.warn,
            )
        line.append(" · r refreshes", style=colours.label)
    else:
        line.append("Never synced: ", style=colours.warn)
        line.append("r fetches the catalogue from the service.")
    return line


def filters_line(kind: str, tab: Tab, cache_empty: bool, colours: Palette) -> Text:
    """The tab's filters, the datasets' order and which matches are shown of how many."""
    parts = tab.filter.describe()
    text = Text("filters ", style=colours.label)
    if parts:
        text.append(inert_line(" · ".join(parts), 200), style="bold")
    else:
        text.append("none (f)", style=colours.label)
    if kind == DATASETS:
        text.append(" · ", style=colours.label)
        text.append(SORT_LABELS[tab.filter.sort_by])
    m = tab.matches
    if m is not None and m.total:
        last = m.offset + len(m.rows)
        text.append(" · ", style=colours.label)
        text.append(f"{m.offset + 1:,}\N{EN DASH}{last:,} of {m.total:,}", style="bold")
        if m.total > last or m.offset:
            text.append(" ([ ] pages)", style=colours.label)
    elif m is not None and not cache_empty:
        text.append(" · no match", style=colours.warn)
    return text


def empty_text(
    kind: str, tab: Tab, cache_empty: bool, syncing: bool, error: tuple[str, str] | None
) -> Text:
    """What a tab with no rows says instead."""
    if cache_empty:
        if syncing:
            text = "The catalogue is being fetched from the service…"
        elif error:
            text = "No catalogue cached yet, and the service could not be reached.\nr tries again."
        else:
            text = "No catalogue cached yet.\nr fetches it from the service."
    elif tab.filter.query or tab.filter.has_filters:
        what = "API" if kind == MARKET else "dataset"
        text = f"No {what} matches.\nescape clears the search, c clears the filters."
    else:
        text = "The service lists none."
    return Text(text, justify="center")
