"""The keys every yes-or-no dialog of the console shares: Left and Right move between its
buttons (an input that has the focus keeps them for its cursor), and the button that acts is
named with its key and answers to it, so the operator sees what a key does before pressing it.
The safe button has the focus: enter alone never does the irreversible thing.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Button

ARROW_BINDINGS = [
    Binding("left", "focus_button(-1)", "Previous button", show=False),
    Binding("right", "focus_button(1)", "Next button", show=False),
]


def keyed(label: str, key: str) -> str:
    """A button's label with the key that presses it: "r Revoke", as the footer writes keys."""
    return f"{key} {label}"


class ButtonArrows:
    """A mixin of a dialog screen: Left/Right move the focus along its buttons, wrapping."""

    def action_focus_button(self, step: int) -> None:
        buttons = [b for b in self.query(Button) if b.display and not b.disabled]  # type: ignore[attr-defined]
        if not buttons:
            return
        focused = self.focused  # type: ignore[attr-defined]
        index = buttons.index(focused) if focused in buttons else (-1 if step > 0 else 0)
        buttons[(index + step) % len(buttons)].focus()
