"""The publish state of dataset listings, per sandbox server: draft → processing → published.

A listing is `published` (every seeded dataset) or a publisher's `draft` (the seeded drafts).
`POST /api/datasets/{id}/process` starts the analysis that builds the datacard: the state becomes
`processing`. The sandbox runs the analysis the next time anyone reads the listing's state, so a
client polling `publish-status` sees it finish on its first poll: `published` with the datacard at
`/api/datasets/{id}/card.json`, or `failed` with a reason (a draft with no inferable schema). A
failed draft may be processed again (it fails again); a published listing may be re-processed (its
analysis count, `version`, grows). Processing while `processing` is refused as a conflict.

States live in memory with the server's `SandboxState`, never in the shared catalogue, so two
sandboxes never see each other's publications.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

from svc_console.core.datasets import PublishEvent, PublishStatus
from svc_console.sandbox.datasets import DatasetCatalog


class PublishConflict(Exception):
    """The listing is already being processed."""


@dataclass
class _Entry:
    state: str
    version: int
    reason: str | None = None
    history: list[PublishEvent] = field(default_factory=list)


class PublishBoard:
    """Publish states of one sandbox's listings. Thread-safe."""

    def __init__(self, datasets: DatasetCatalog, clock: Callable[[], float] = time.time):
        self._datasets, self._clock = datasets, clock
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}

    def _entry(self, dataset_id: str) -> _Entry | None:
        """The listing's entry, created on first sight; a pending analysis finishes here."""
        entry = self._entries.get(dataset_id)
        if entry is None:
            dataset = self._datasets.find(dataset_id)
            if dataset is None:
                return None
            entry = _Entry("draft" if dataset.draft else "published", 0 if dataset.draft else 1)
            entry.history.append(PublishEvent(state=entry.state, at=self._clock()))
            self._entries[dataset_id] = entry
        elif entry.state == "processing":
            dataset = self._datasets.find(dataset_id)
            assert dataset is not None
            entry.reason = dataset.analysis_error
            self._move(entry, "failed" if dataset.analysis_error else "published")
            if entry.state == "published":
                entry.version += 1
        return entry

    def _move(self, entry: _Entry, state: str) -> None:
        entry.state = state
        entry.history.append(PublishEvent(state=state, at=self._clock()))

    def _status(self, dataset_id: str, entry: _Entry) -> PublishStatus:
        card = f"/api/datasets/{dataset_id}/card.json" if entry.state == "published" else None
        return PublishStatus(
            dataset_id=dataset_id,
            state=entry.state,
            version=entry.version,
            reason=entry.reason if entry.state == "failed" else None,
            datacard_url=card,
            history=list(entry.history),
        )

    def status(self, dataset_id: str) -> PublishStatus | None:
        """The listing's publish state (None for an unknown id)."""
        with self._lock:
            entry = self._entry(dataset_id)
            return None if entry is None else self._status(dataset_id, entry)

    def process(self, dataset_id: str) -> PublishStatus | None:
        """Starts the analysis; raises PublishConflict while one is running."""
        with self._lock:
            existing = self._entries.get(dataset_id)
            if existing is not None and existing.state == "processing":
                raise PublishConflict(dataset_id)
            entry = self._entry(dataset_id)
            if entry is None:
                return None
            entry.reason = None
            self._move(entry, "processing")
            return self._status(dataset_id, entry)

    def is_published(self, dataset_id: str) -> bool:
        status = self.status(dataset_id)
        return status is not None and status.state == "published"

    def published_drafts(self) -> frozenset[str]:
        """Seeded drafts this sandbox has published: listed from now on."""
        return frozenset(d.id for d in self._datasets.drafts if self.is_published(d.id))


_BOARDS: weakref.WeakKeyDictionary[object, PublishBoard] = weakref.WeakKeyDictionary()
_BOARDS_LOCK = threading.Lock()


def board_for(state: object, datasets: DatasetCatalog) -> PublishBoard:
    """The publish board of one sandbox (keyed by its `SandboxState`), so the REST routes and the
    MCP tools agree on what is published."""
    with _BOARDS_LOCK:
        board = _BOARDS.get(state)
        if board is None:
            board = _BOARDS[state] = PublishBoard(datasets)
        return board
