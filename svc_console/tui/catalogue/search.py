"""The catalogue screen's questions to the ledger's catalogue cache: what each tab asks (its
filter, the window of matches, the selected item) and the reads that answer it.

Each read runs in a thread worker of the screen on the screen's one read-only connection
(`ledger/readers.py`) and posts its answer to the screen as a message (`messages.py`). A
generation number per tab drops answers to an older keystroke; a read that has not started when
a newer one of its group comes is cancelled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.message import Message
from textual.worker import get_current_worker

from svc_console.core.catalogue_filters import DatasetFilter, MarketFilter
from svc_console.ledger import catalogue_search, catalogue_store
from svc_console.ledger.catalogue_search import Matches
from svc_console.ledger.readers import Connection, Reader
from svc_console.tui.catalogue.messages import CacheRead, MatchesFound, RecordLoaded
from svc_console.tui.catalogue.tables import PAGE_SIZE

MARKET, DATASETS = "market", "datasets"
KINDS = (MARKET, DATASETS)


@dataclass
class Tab:
    """What one tab shows: its filter, the window of matches, the selected item."""

    filter: Any
    offset: int = 0
    generation: int = 0
    matches: Matches[Any] | None = None
    selected: str | None = None

    def refilter(self, f: Any) -> bool:
        """Ask a new question (from its best match, not where the cursor was); False when it
        is the question asked already."""
        if f == self.filter:
            return False
        self.filter, self.offset, self.selected = f, 0, None
        return True

    def accept(self, generation: int, matches: Matches[Any]) -> bool:
        """Take the answer to search `generation`; False for an answer to an older keystroke."""
        if generation != self.generation:
            return False
        self.matches = matches
        return True

    def can_page(self, step: int) -> bool:
        m = self.matches
        if m is None:
            return False
        return m.offset > 0 if step < 0 else m.offset + len(m.rows) < m.total

    def turn_page(self, step: int) -> bool:
        """Move the window `step` pages on; False when there is no such page."""
        m = self.matches
        if m is None:
            return False
        offset = self.offset + step * PAGE_SIZE
        if offset < 0 or offset >= max(m.total, 1):
            return False
        self.offset = offset
        self.selected = None
        return True


def new_tabs() -> dict[str, Tab]:
    return {MARKET: Tab(MarketFilter()), DATASETS: Tab(DatasetFilter())}


RunWorker = Callable[..., Any]


class CacheQueries:
    """The screen's reads of the cache. `run_worker` and `post` are the screen's own, so its
    workers end with it and its handlers get the answers."""

    def __init__(self, ledger_path: Path, run_worker: RunWorker, post: Callable[[Message], Any]):
        self.ledger_path = ledger_path
        self.run_worker, self.post = run_worker, post
        self.reader: Reader | None = None

    def open(self) -> None:
        catalogue_store.ensure_file(self.ledger_path)
        self.reader = Reader.open(self.ledger_path)

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None

    def _in_thread(self, name: str, group: str, work: Callable[[Connection], Message]) -> None:
        reader, post = self.reader, self.post

        def run() -> None:
            if reader is None or reader.closed or get_current_worker().is_cancelled:
                return  # a newer keystroke asked again before this one started
            with reader.lock:
                if not reader.closed:
                    post(work(reader.conn))

        self.run_worker(
            run, thread=True, group=group, exclusive=True, exit_on_error=False, name=name
        )

    def read_state(self) -> None:
        """The cache's sync state and dataset categories, as `CacheRead`."""

        def read(conn: Connection) -> Message:
            return CacheRead(catalogue_store.sync_state(conn), catalogue_search.categories(conn))

        self._in_thread("catalogue state", "catalogue-state", read)

    def search(self, kind: str, tab: Tab) -> None:
        """The tab's window of matches, as `MatchesFound` of a new generation."""
        tab.generation += 1
        generation, f, offset = tab.generation, tab.filter, tab.offset
        find = (
            catalogue_search.search_endpoints
            if kind == MARKET
            else catalogue_search.search_datasets
        )

        def search(conn: Connection) -> Message:
            matches = find(conn, f, limit=PAGE_SIZE, offset=offset)
            return MatchesFound(kind, generation, matches)

        self._in_thread(f"{kind} search", f"catalogue-search-{kind}", search)

    def record(self, kind: str, item_id: str) -> None:
        """The full cached record of an item, as `RecordLoaded`."""
        read = (
            catalogue_search.endpoint_record if kind == MARKET else catalogue_search.dataset_listing
        )

        def load(conn: Connection) -> Message:
            return RecordLoaded(kind, item_id, read(conn, item_id))

        self._in_thread(f"{kind} record", f"catalogue-record-{kind}", load)
