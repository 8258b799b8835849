"""Quitting with unsaved work: before the console exits, each screen that may hold work not yet
saved (the policies screen's drafts) is asked for it, and the operator chooses to save and quit,
to quit without saving, or to stay.

A screen takes part by having a method `unsaved_work() -> UnsavedWork | None`; the app's quit
action calls `quit_asking` instead of exiting at once. Only screens already built are asked (a
screen never opened holds nothing). Leaving a screen for another never asks: the app keeps every
screen in its own mode, drafts and all. The safe answer has the focus, so enter alone never loses
work; escape is the same as staying.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from svc_console.tui import bindings, navigation
from svc_console.tui.bindings import Command
from svc_console.tui.help import key_display

SAVE = Command(
    "unsaved.save_and_quit",
    "s",
    "save_and_quit",
    "Save and quit",
    "Save the unsaved work, then quit (refused, with the reason, when it cannot be saved)",
    palette=False,
)
DISCARD = Command(
    "unsaved.quit_without_saving",
    "d",
    "quit_without_saving",
    "Quit without saving",
    "Quit; the unsaved work is lost",
    palette=False,
)
# escape: stay, the work kept as it is
CANCEL = next(c for c in bindings.commands("modal") if c.id == "modal.cancel")


@dataclass(frozen=True)
class UnsavedWork:
    """What quitting now would lose, as the screen holding it describes it. Plain text: the
    screen has made any untrusted part (paths, file contents) inert already."""

    title: str  # the question: "Quit with an unsaved policy draft?"
    lines: tuple[str, ...]  # where each piece of work is, and how it differs from what is saved
    # Saves all of it; returns why it could not (nothing more is saved then), or None.
    save: Callable[[], str | None] | None = None
    cannot_save: str | None = None  # why `save` is not offered


class HoldsUnsavedWork(Protocol):
    def unsaved_work(self) -> UnsavedWork | None: ...


def unsaved_work(app: App[Any]) -> list[UnsavedWork]:
    """The unsaved work of every screen built so far, in the order of the screens."""
    found: list[UnsavedWork] = []
    for entry in navigation.entries():
        try:
            stack = app.get_screen_stack(entry.name)
        except KeyError:
            continue  # a mode never shown
        for screen in stack:
            ask = getattr(screen, "unsaved_work", None)
            work = ask() if callable(ask) else None
            if work is not None:
                found.append(work)
    return found


def quit_asking(app: App[Any]) -> None:
    """Exit, unless a screen holds unsaved work: then ask about each piece first."""
    if isinstance(app.screen, QuitWithUnsavedWork):
        return  # already asking (ctrl+q, or the palette's Quit, in front of the question)
    _ask(app, unsaved_work(app))


def _ask(app: App[Any], pending: list[UnsavedWork]) -> None:
    if not pending:
        app.exit()
        return

    def answered(leave: bool | None) -> None:
        if leave:
            _ask(app, pending[1:])

    app.push_screen(QuitWithUnsavedWork(pending[0]), answered)


class QuitWithUnsavedWork(ModalScreen[bool]):
    """Save and quit, quit without saving, or stay; dismissed with True when the console may
    quit (the work saved or given up), False to stay."""

    BINDINGS = [*bindings.bindings("modal"), *bindings.define("unsaved", (SAVE, DISCARD))]
    DEFAULT_CSS = """
    QuitWithUnsavedWork { align: center middle; }
    #unsaved-dialog {
        width: 84;
        max-width: 100%;
        height: auto;
        max-height: 100%;
        padding: 1 2;
        border: thick $warning;
        background: $surface;
    }
    #unsaved-lines { height: auto; }
    """

    def __init__(self, work: UnsavedWork) -> None:
        super().__init__()
        self.work = work
        self.can_save = work.save is not None

    def _label(self, command: Command) -> str:
        keys = key_display(self.app, command, getattr(self.app, "keymap", {}))
        return f"{command.description} ({keys})"

    def _explain(self) -> str:
        if self.can_save:
            return "Quitting without saving loses these changes."
        why = self.work.cannot_save or "It cannot be saved."
        return f"{why}\nQuit without saving loses it; cancel goes back to it."

    def compose(self) -> ComposeResult:
        with Vertical(id="unsaved-dialog"):
            yield Label(Text(self.work.title), id="dialog-title")
            # Paths and error messages: plain text, never markup.
            yield Static(Text("\n".join(self.work.lines)), markup=False, id="unsaved-lines")
            yield Static(Text(self._explain()), markup=False, classes="dialog-explain", id="why")
            with Horizontal(id="dialog-buttons"):
                if self.can_save:
                    yield Button(self._label(SAVE), variant="success", id="save")
                yield Button(self._label(DISCARD), variant="error", id="discard")
                yield Button(self._label(CANCEL), variant="primary", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.can_save or action != "save_and_quit"

    @on(Button.Pressed, "#save")
    def action_save_and_quit(self) -> None:
        if not self.can_save or self.work.save is None:
            return
        problem = self.work.save()
        if problem is None:
            self.dismiss(True)
            return
        # Not saved: say why here, and offer only what is left (quit without saving, or stay).
        self.can_save = False
        self.query_one("#why", Static).update(
            Text(f"{problem}\nNothing more was saved: quit without saving, or cancel to stay.")
        )
        self.query_one("#save", Button).remove()
        self.query_one("#cancel", Button).focus()

    @on(Button.Pressed, "#discard")
    def action_quit_without_saving(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(False)
