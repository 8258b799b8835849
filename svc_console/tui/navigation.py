"""The console's screens and how to reach them: a registry each screen module fills itself.

Adding a screen is one folder in `svc_console/tui/` whose `screen.py` registers its class (the
folder also holds the widgets only that screen uses):

    @register_screen("usage", title="Usage", key="3", order=3)
    class UsageScreen(Screen[None]):
        BINDINGS = bindings.define("usage", (Command("usage.export", "e", "export", ...),))

        def __init__(self, runtime: Runtime) -> None: ...   # the started runtime

The app imports the `screen` module of every such folder (`discover`), adds one Textual mode per
registered screen, and binds its key app-wide (binding id `screens.<name>`, remappable like any
other). The palette offers "Go to <title>", F1 lists the key. Only screens that exist are
registered: nothing here knows which screens are still to come. Keys by convention: 1 Approvals
(home), 2 Catalogue, 3 Usage, 4 Policies, 5 Wallet, 6 Account, 7 Grants.

This module never imports a screen itself, so a screen that fails to import is reported by
`discover` and leaves the others working.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from svc_console.core.sanitize import inert_line

if TYPE_CHECKING:
    from textual.screen import Screen

    from svc_console.runtime import Runtime

log = logging.getLogger(__name__)

HOME = "approvals"
SCREENS_PACKAGE = "svc_console.tui"
SCREEN_MODULE = "screen"

ScreenClass = TypeVar("ScreenClass", bound="type[Screen[Any]]")


@dataclass(frozen=True)
class ScreenEntry:
    """One screen of the console.

    `name` is the Textual mode, the binding scope of the screen's own commands
    (`bindings.commands(name)`) and the id its navigation binding is derived from. `build` makes
    the screen from the started runtime (the class itself, for a registered screen)."""

    name: str
    title: str
    key: str
    order: int
    build: Callable[[Runtime], Screen[Any]]
    screen_type: type[Screen[Any]]

    @property
    def binding_id(self) -> str:
        return f"screens.{self.name}"


_SCREENS: dict[str, ScreenEntry] = {}


def register_screen(
    name: str, *, title: str, key: str, order: int
) -> Callable[[ScreenClass], ScreenClass]:
    """Class decorator: make a screen reachable by `key`, in the palette and in F1 help."""

    def decorate(cls: ScreenClass) -> ScreenClass:
        add(ScreenEntry(name, title, key, order, build=cls, screen_type=cls))
        return cls

    return decorate


def add(entry: ScreenEntry) -> None:
    """Register a screen; a name or key already taken by another screen is a programming error."""
    existing = _SCREENS.get(entry.name)
    # The same class registering again (its module reloaded) replaces its entry.
    if existing is not None and existing.screen_type.__qualname__ != entry.screen_type.__qualname__:
        raise ValueError(f"screen name {entry.name!r} is already registered")
    for other in _SCREENS.values():
        if other.name != entry.name and other.key == entry.key:
            raise ValueError(f"key {entry.key!r} already shows the {other.title} screen")
    _SCREENS[entry.name] = entry


def remove(name: str) -> None:
    """Forget a screen (tests that register a screen of their own clean up with this)."""
    _SCREENS.pop(name, None)


def entries() -> list[ScreenEntry]:
    """The registered screens, home first, then by their order."""
    return sorted(_SCREENS.values(), key=lambda entry: (entry.name != HOME, entry.order))


def entry_for(screen: object) -> ScreenEntry | None:
    """The registry entry of a screen instance (None for dialogs and the start-up screen)."""
    for entry in _SCREENS.values():
        if isinstance(screen, entry.screen_type):
            return entry
    return None


def discover(only: Iterable[str] | None = None, *, skip: Iterable[str] = ()) -> list[str]:
    """Import the `screen` module of every folder of the screens package (or of the folders
    `only` names, less those in `skip`) so each registers itself. Returns one line per screen that
    failed to import (the other screens still work)."""
    problems: list[str] = []
    package = importlib.import_module(SCREENS_PACKAGE)
    wanted = set(only) if only is not None else None
    for folder in pkgutil.iter_modules(package.__path__):
        if folder.name.startswith("_") or not folder.ispkg or folder.name in skip:
            continue
        if wanted is not None and folder.name not in wanted:
            continue
        name = f"{SCREENS_PACKAGE}.{folder.name}.{SCREEN_MODULE}"
        try:
            if importlib.util.find_spec(name) is None:
                continue  # a folder of shared widgets, not a screen
            importlib.import_module(name)
        except Exception as exc:
            log.exception("screen module %s failed to import", name)
            problems.append(
                f"the {folder.name} screen could not be loaded: "
                f"{type(exc).__name__}: {inert_line(exc, 160)}"
            )
    return problems
