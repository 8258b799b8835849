"""The command palette (ctrl+p): every action of the screen in front of the operator, the other
screens, help, quit and the themes, all from the bindings registry so the palette, the footer and
F1 agree. An action the screen would refuse right now (approving from the history tab) is left out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from textual.actions import parse as parse_action
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.screen import Screen

from svc_console.tui import bindings, navigation
from svc_console.tui.help import key_display

PaletteEntry = tuple[str, str, Callable[[], Any]]


def _allowed(screen: Screen[Any], action: str) -> bool:
    _, name, params = parse_action(action)
    return screen.check_action(name, params) is not False


class ConsoleCommands(Provider):
    """Commands of the current screen first, then navigation, help and quit, then themes."""

    def entries(self) -> Iterator[PaletteEntry]:
        app: Any = self.app
        screen = self.screen
        keymap = getattr(app, "keymap", {})
        here = navigation.entry_for(screen)
        if here is not None:
            for command in bindings.commands(here.name):
                if command.palette and _allowed(screen, command.action):
                    yield (
                        command.description,
                        f"{command.help} · {key_display(app, command, keymap)}",
                        partial(screen.run_action, command.action),
                    )
        for command in bindings.commands(bindings.SCREENS_SCOPE):
            if here is not None and command.id == here.binding_id:
                continue
            yield (
                f"Go to {command.description}",
                f"{command.help} · {key_display(app, command, keymap)}",
                partial(app.run_action, command.action),
            )
        for command in bindings.commands("app"):
            if command.palette:
                yield (
                    command.description,
                    f"{command.help} · {key_display(app, command, keymap)}",
                    partial(app.run_action, command.action),
                )
        for name in sorted(app.available_themes):
            if name != app.theme:
                switch = partial(app.use_theme, name)
                yield (f"Theme: {name}", "Switch the console's colours", switch)

    async def discover(self) -> Hits:
        for title, help_text, callback in self.entries():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self.entries():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)
