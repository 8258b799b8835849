"""What the policies screen's workers and the live policy tell the screen."""

from __future__ import annotations

from typing import Any

from textual.message import Message

from svc_console.policy.drafts import DraftCheck
from svc_console.policy.live import PolicyStatus as LiveStatus
from svc_console.tui.policies.simulation import SimulationShown


class DraftChecked(Message):
    def __init__(self, generation: int, result: DraftCheck, added: int, removed: int) -> None:
        super().__init__()
        self.generation, self.result = generation, result
        self.added, self.removed = added, removed


class SimulationDone(Message):
    def __init__(self, shown: SimulationShown) -> None:
        super().__init__()
        self.shown = shown


class ServiceRead(Message):
    def __init__(self, answer: Any = None, problem: str | None = None) -> None:
        super().__init__()
        self.answer, self.problem = answer, problem


class PolicyChanged(Message):
    """The broker loaded the policy files again (a save, here or elsewhere)."""

    def __init__(self, status: LiveStatus) -> None:
        super().__init__()
        self.status = status
