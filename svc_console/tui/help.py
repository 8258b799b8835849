"""F1 help: the keys of the screen in front of the operator, then the keys that work everywhere,
read from the bindings registry with the user's keymap applied, so help never disagrees with the
footer or the palette. Each line names its binding id, which is what a keymap entry remaps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from svc_console.tui import bindings
from svc_console.tui.bindings import Command


def key_display(app: object, command: Command, keymap: Mapping[str, str]) -> str:
    """A command's keys as the footer writes them ("^p", "/", "f1"); "palette" when it has none."""
    keys = bindings.keys_of(command, keymap)
    if not keys:
        return "palette"
    show = getattr(app, "get_key_display", None)
    return ", ".join(show(Binding(key, command.action)) if show else key for key in keys)


def keys_table(app: object, commands: Iterable[Command], keymap: Mapping[str, str]) -> Table:
    """Key, name, and what it does with the binding id a keymap entry would name."""
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True, min_width=6, style="bold")
    table.add_column(no_wrap=True, min_width=12)
    table.add_column(ratio=1)
    for command in commands:
        table.add_row(
            Text(key_display(app, command, keymap)),
            Text(command.description),
            Text.assemble(command.help, (f"  {command.id}", "dim")),
        )
    return table


def palette_only(commands: Iterable[Command]) -> Text:
    names = [command.description for command in commands if not command.keys and command.palette]
    return Text.assemble(("In the palette (ctrl+p): ", "dim"), " · ".join(names))


class HelpScreen(ModalScreen[None]):
    """The keys of one screen and of the app; escape, F1 or q closes it."""

    BINDINGS = bindings.bindings("help")

    def __init__(
        self, title: str, scope: str | None, keymap: Mapping[str, str], notes: str = ""
    ) -> None:
        super().__init__(id="help")
        self.screen_title = title
        self.scope = scope
        self.keymap = dict(keymap)
        self.notes = notes

    def compose(self) -> ComposeResult:
        with Vertical(id="help-dialog"):
            yield Label(f"Keys: {self.screen_title}", id="help-title")
            with VerticalScroll(id="help-body"):
                if self.notes:
                    yield Static("Reading the screen", classes="help-heading")
                    yield Static(self.notes, markup=False, classes="help-more")
                if self.scope is not None:
                    scoped = bindings.commands(self.scope)
                    keyed = [command for command in scoped if command.keys]
                    yield Static(f"{self.screen_title} screen", classes="help-heading")
                    yield Static(keys_table(self.app, keyed, self.keymap), markup=False)
                    if len(keyed) < len(scoped):
                        yield Static(palette_only(scoped), markup=False, classes="help-more")
                yield Static("Everywhere", classes="help-heading")
                everywhere = [
                    *bindings.commands("app"),
                    *bindings.commands(bindings.SCREENS_SCOPE),
                ]
                yield Static(keys_table(self.app, everywhere, self.keymap), markup=False)
            yield Static(
                'escape closes · remap a key in settings.toml: [keymap] id = "key"',
                id="help-hint",
                markup=False,
            )

    def action_close(self) -> None:
        self.dismiss(None)
