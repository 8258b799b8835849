"""What every screen wears: the header with, under it, a strip naming each screen with the key
that shows it (the current one lit), and a footer that keeps the keys a newcomer needs most, quit
and help, whatever the terminal's width.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Footer, Header
from textual.widgets._footer import FooterKey

from svc_console.tui import bindings, navigation

# Below this many columns the footer shows quit and help before the screen's own keys.
NARROW_FOOTER = 100
# The app's keys a footer never loses, by action.
KEPT_ACTIONS = ("app.help", "app.quit")


def heading() -> ComposeResult:
    """The header and the screens' strip, for a screen's `compose`."""
    yield Header(show_clock=False, icon="$")
    yield ScreenTabs()


class ScreenTabs(Widget):
    """`1 Approvals  2 Catalogue …`: the registered screens with their keys as the keymap has
    them; the screen it sits on is lit. Drawn from the registry at each refresh: the screens
    other than the home one register after the first frame."""

    DEFAULT_CSS = """
    ScreenTabs {
        height: 1;
        width: 100%;
        background: $panel;
        color: $text-muted;
    }
    """

    def render(self) -> Text:
        current = navigation.entry_for(self.screen)
        keymap = getattr(self.app, "keymap", {})
        out = Text(no_wrap=True, overflow="ellipsis")
        for command, entry in zip(bindings.screen_commands(), navigation.entries(), strict=True):
            keys = bindings.keys_of(command, keymap)
            label = f" {keys[0]} {entry.title} " if keys else f" {entry.title} "
            lit = current is not None and current.name == entry.name
            out.append(label, style="reverse bold" if lit else "")
        return out


class ConsoleFooter(Footer):
    """Textual's footer, quit and help first on a narrow terminal so they are never cut off."""

    def __init__(self) -> None:
        super().__init__()
        self._narrow: bool | None = None
        self._composed_for: tuple | None = None  # the keys the footer shows (`_keys_shown`)

    def compose(self) -> ComposeResult:
        if self._bindings_ready:
            self._composed_for = self._keys_shown()
        keys = list(super().compose())
        for key in keys:
            if isinstance(key, FooterKey):
                _styled_as_it_will_end(key, self.compact)
        if self.app.size.width < NARROW_FOOTER:
            keys = list(_kept_first(keys))
        yield from keys

    def bindings_changed(self, screen: Any) -> None:
        # Textual's footer waits for the app to have the focus, which a browser gives only at
        # the first tap: the web console's footer stayed blank until then.
        self._bindings_ready = True
        if self.is_attached and screen is self.screen:
            self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        # Textual rebuilds every key of the footer whenever its screen's bindings may have
        # changed: at each focus change and at each return to the screen, twice or more per
        # screen switch, though the keys shown are most often the same.
        if self._keys_shown() != self._composed_for:
            await self.recompose()

    def _keys_shown(self) -> tuple:
        """What `compose` draws from: each binding shown, whether it is enabled, its tooltip."""
        return tuple(
            (binding, enabled, tooltip)
            for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items()
            if binding.show or key == self.app.COMMAND_PALETTE_BINDING
        )

    def on_resize(self) -> None:
        narrow = self.app.size.width < NARROW_FOOTER
        if self._narrow is not None and narrow != self._narrow:
            self.call_after_refresh(self.recompose)
        self._narrow = narrow


def _styled_as_it_will_end(key: FooterKey, footer_compact: bool) -> None:
    """Textual makes a key compact and then binds it to its footer's style: two restyles of
    every key each time the footer is rebuilt, which is at every focus change (about 0.1 s of
    CPU in each start of the console, measured in the tests' harness). Given the style it ends
    with before it is mounted (the footer's, or compact for the command palette's key, which
    Textual does not bind), it is styled once."""
    compact = footer_compact or key.has_class("-command-palette")
    key.set_reactive(FooterKey.compact, compact)
    key.set_class(compact, "-compact", update=False)


def _kept_first(keys: list[Widget]) -> Iterator[Widget]:
    kept = [k for k in keys if isinstance(k, FooterKey) and k.action in _kept_actions()]
    yield from kept
    yield from (k for k in keys if k not in kept)


def _kept_actions() -> set[str]:
    return {c.action for c in bindings.commands("app") if c.id in KEPT_ACTIONS}
