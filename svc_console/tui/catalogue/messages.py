"""What the catalogue screen's workers tell the screen: each read of the cache, fetch and sync
posts one of these, and the screen applies it."""

from __future__ import annotations

from typing import Any

from textual.message import Message

from svc_console.core.datasets import TrialResult
from svc_console.ledger.catalogue_search import Matches
from svc_console.ledger.catalogue_store import SyncState
from svc_console.services.catalogue_sync import SyncProgress, SyncReport


class MatchesFound(Message):
    def __init__(self, kind: str, generation: int, matches: Matches[Any]) -> None:
        super().__init__()
        self.kind, self.generation, self.matches = kind, generation, matches


class RecordLoaded(Message):
    """The full cached record of the selected item (None: gone from the cache)."""

    def __init__(self, kind: str, item_id: str, record: Any) -> None:
        super().__init__()
        self.kind, self.item_id, self.record = kind, item_id, record


class CacheRead(Message):
    """The cache's sync state and the dataset categories it holds."""

    def __init__(self, state: SyncState, categories: list[str]) -> None:
        super().__init__()
        self.state, self.categories = state, categories


class SkillLoaded(Message):
    def __init__(self, endpoint_id: str, text: str | None, error: str | None) -> None:
        super().__init__()
        self.endpoint_id, self.text, self.error = endpoint_id, text, error


class TrialLoaded(Message):
    def __init__(
        self,
        dataset_id: str,
        fields: tuple[str, ...],
        trial: TrialResult | None,
        error: str | None,
    ) -> None:
        super().__init__()
        self.dataset_id, self.fields, self.trial, self.error = dataset_id, fields, trial, error


class SyncProgressed(Message):
    def __init__(self, progress: SyncProgress) -> None:
        super().__init__()
        self.progress = progress


class SyncEnded(Message):
    """A sync finished (`report`) or failed (`error`: a code word and one line)."""

    def __init__(self, report: SyncReport | None, error: tuple[str, str] | None) -> None:
        super().__init__()
        self.report, self.error = report, error
