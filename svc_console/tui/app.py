"""The Textual application: a thin shell that starts the console's runtime, shows the approvals
screen, and stops the runtime on the way out.

The real work lives in the screens and in the broker they call. The app never lets Python logging
reach the terminal (it would scribble over the screen) and never exits with a traceback: a runtime
that cannot start becomes one clear message and a non-zero return code.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from pathlib import Path

from rich.text import Text
from textual.app import App, ComposeResult, SystemCommand
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from svc_console.core.sanitize import inert, inert_line
from svc_console.runtime import Runtime
from svc_console.tui import bindings as registry
from svc_console.tui import present
from svc_console.tui.screens.approvals import ApprovalsScreen
from svc_console.tui.themes import BUNDLED_THEMES, DEFAULT_THEME, FALLBACK_THEME, load_themes

log = logging.getLogger(__name__)

AfterStart = Callable[[Runtime], Awaitable[None]]
# Which registry scope each screen's palette commands come from.
_SCREEN_SCOPES: dict[type[Screen[object]], str] = {ApprovalsScreen: "approvals"}


def _keep_logging_off_the_screen() -> None:
    # With no handler anywhere, Python's last-resort handler writes warnings to stderr, i.e. over
    # the TUI. The CLI installs a file handler; this only guards an app started without one.
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


class ConsoleApp(App[None]):
    """svc-console's TUI over one `Runtime` (ledger, marketplace, broker and socket)."""

    TITLE = "svc-console"
    CSS_PATH = "app.tcss"
    BINDINGS = registry.bindings("app")

    def __init__(
        self,
        runtime: Runtime,
        *,
        after_start: AfterStart | None = None,
        theme: str = DEFAULT_THEME,
        themes_dir: Path | None = None,
        cursor_blink: bool = True,
    ) -> None:
        """`after_start` runs in a worker once the runtime is up (the demo starts its simulated
        agents there); `themes_dir` holds the operator's own themes (default
        `$SVC_CONSOLE_HOME/themes`); `cursor_blink=False` keeps screenshots stable."""
        _keep_logging_off_the_screen()
        super().__init__()
        self.runtime = runtime
        self.after_start = after_start
        self.cursor_blink = cursor_blink
        self._started = False
        self._theme_problems = self._load_themes(
            theme, themes_dir if themes_dir is not None else runtime.paths.home / "themes"
        )

    # -- themes ---------------------------------------------------------------------------------

    def _load_themes(self, wanted: str, themes_dir: Path) -> list[str]:
        loaded = load_themes([BUNDLED_THEMES, themes_dir])
        for theme in loaded.themes.values():
            self.register_theme(theme)
        problems = list(loaded.problems)
        if wanted in self.available_themes:
            self.theme = wanted
        else:
            problems.append(f"theme {wanted!r} is not available")
            self.theme = FALLBACK_THEME
        return problems

    # -- lifecycle ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        # Shown only while the runtime starts (the sandbox and the ledger take a moment).
        yield Static("Starting svc-console…", id="starting")

    async def on_mount(self) -> None:
        try:
            broker = await self.runtime.start()
        except Exception as exc:
            # The runtime has already undone whatever it had started.
            log.error("the console could not start: %s", exc, exc_info=True)
            self.exit(
                return_code=1,
                message=Text(f"svc-console could not start: {inert(exc, 500)}", style="bold red"),
            )
            return
        self._started = True
        await self.push_screen(
            ApprovalsScreen(broker, socket_hint=present.socket_hint(self.runtime.paths))
        )
        if self._theme_problems:
            self.notify(
                "\n".join(self._theme_problems) + f"\nThe theme in use is {self.theme!r}.",
                title="Theme not loaded",
                severity="warning",
                timeout=10,
                markup=False,
            )
        if self.after_start is not None:
            self.run_worker(
                self.after_start(self.runtime),
                name="after-start",
                group="after-start",
                exit_on_error=False,
            )

    async def on_unmount(self) -> None:
        if self._started:
            self._started = False
            await self.runtime.stop()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place a background task's failure is reported."""
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            log.error("worker %s failed", event.worker.name, exc_info=error)
            self.notify(
                f"{event.worker.name} failed: {type(error).__name__}: {inert_line(error, 200)}",
                title="Background task failed",
                severity="error",
                markup=False,
            )

    # -- command palette ------------------------------------------------------------------------

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        scope = _SCREEN_SCOPES.get(type(screen))
        if scope is None:
            return
        for command in registry.commands(scope):
            if command.palette:
                yield SystemCommand(
                    command.description,
                    f"{command.help} · key {command.keys}",
                    partial(screen.run_action, command.action),
                )
