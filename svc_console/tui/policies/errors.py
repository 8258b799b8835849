"""The errors of the draft as the CLI prints them (`SKILLS.md:5:14: per_call_max_usdc must be a
number of USDC, got "two"`), one per row; enter on a row jumps to its line in the editor.

An error quotes the file (a key, a value): each row is shown inert and never read as markup."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from svc_console.core.sanitize import inert_line
from svc_console.policy.errors import PolicyError


class PolicyErrorList(OptionList):
    DEFAULT_CSS = """
    PolicyErrorList { height: auto; max-height: 6; border: none; padding: 0 1; }
    PolicyErrorList:focus { border: none; }
    """

    class Jump(Message):
        """The author chose an error: show its line."""

        def __init__(self, error: PolicyError) -> None:
            super().__init__()
            self.error = error

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.errors: tuple[PolicyError, ...] = ()

    def show(self, errors: Sequence[PolicyError], style: str = "") -> None:
        errors = tuple(errors)
        if errors == self.errors:
            return
        self.errors = errors
        highlighted = self.highlighted
        self.clear_options()
        self.add_options(Option(Text(inert_line(str(error), 300), style=style)) for error in errors)
        if errors:
            self.highlighted = min(highlighted or 0, len(errors) - 1)
        self.display = bool(errors)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(self.Jump(self.errors[event.option_index]))
