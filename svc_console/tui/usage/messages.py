"""The messages the usage screen's workers and the background sync post to it: each carries what
was computed, and the screen, which owns the state, applies it (workers never touch widgets)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.message import Message

from svc_console.ledger.usage_query import SpendBucket, UsageTotals
from svc_console.ledger.usage_write import SyncResult
from svc_console.tui.usage.dialogs import FilterChoices


@dataclass(frozen=True)
class Summary:
    totals: UsageTotals | None = None
    days: list[SpendBucket] | None = None
    providers: list[SpendBucket] | None = None
    agents: list[SpendBucket] | None = None


class SummaryLoaded(Message):
    def __init__(self, generation: int, part: str, value: Any) -> None:
        super().__init__()
        self.generation, self.part, self.value = generation, part, value


class ChoicesLoaded(Message):
    def __init__(self, choices: FilterChoices) -> None:
        super().__init__()
        self.choices = choices


class ExportFinished(Message):
    def __init__(self, path: Path, count: int) -> None:
        super().__init__()
        self.path, self.count = path, count


class Synced(Message):
    def __init__(self, result: SyncResult) -> None:
        super().__init__()
        self.result = result


class BackgroundSynced(Message):
    """The background follower synced (posted from its listener, read on the app's loop)."""
