"""The Textual application: a thin shell that starts the console's runtime, opens one Textual mode
per registered screen (approvals is home), and stops the runtime on the way out.

The shell owns what is the same on every screen: navigation keys, the command palette, F1 help,
the themes, the operator's keymap, the header's status (how many requests wait: the approvals
screen keeps it in the app's sub-title) and the rule that no notification is drawn over a dialog:
while one is open they are held, and shown once it closes. The real work lives in the screens and
in the broker they call. The app never lets Python logging reach the terminal (it would scribble
over the screen) and never exits with a traceback: a runtime that cannot start becomes one clear
message and a non-zero return code.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from svc_console.core import collector
from svc_console.core.sanitize import inert, inert_line
from svc_console.tui import bindings as registry
from svc_console.tui import (
    navigation,
    textual_fixes,  # noqa: F401  (applied on import)
)
from svc_console.tui.commands import ConsoleCommands
from svc_console.tui.help import HelpScreen
from svc_console.tui.notices import NoticeLine
from svc_console.tui.preferences import load_preferences, settings_path
from svc_console.tui.saved_theme import save_theme
from svc_console.tui.themes import BUNDLED_THEMES, load_themes, pick_theme
from svc_console.tui.unsaved import quit_asking
from svc_console.tui.widgets.banner import service_banner
from svc_console.tui.widgets.chrome import ScreenTabs

if TYPE_CHECKING:
    from svc_console.runtime import Runtime

log = logging.getLogger(__name__)

AfterStart = Callable[["Runtime"], Awaitable[None]]
MAX_UNSETTLED_SHOWN = 5  # in the start-up notification; the history lists every one


def _keep_logging_off_the_screen() -> None:
    # With no handler anywhere, Python's last-resort handler writes warnings to stderr, i.e. over
    # the TUI. The CLI installs a file handler; this only guards an app started without one.
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


def _accounts_exist(path: Path) -> bool:
    """Whether operator accounts exist, so that someone signs in before the queue is shown."""
    from svc_console.config.operator_accounts import AccountsError, OperatorAccounts

    try:
        return OperatorAccounts(path).any()
    except AccountsError:
        return True  # a file that cannot be read: nothing shown until the start says why


def _resolve(waiting: asyncio.Future[None]) -> None:
    if not waiting.done():
        waiting.set_result(None)


class ConsoleApp(NoticeLine):
    """svc-console's TUI over one `Runtime` (ledger, marketplace, broker and socket)."""

    TITLE = "svc-console"
    CSS_PATH = "app.tcss"
    BINDINGS = registry.bindings("app")
    COMMANDS = {ConsoleCommands}

    def __init__(
        self,
        runtime: Runtime,
        *,
        after_start: AfterStart | None = None,
        theme: str | None = None,
        themes_dir: Path | None = None,
        settings_file: Path | None = None,
        cursor_blink: bool = True,
    ) -> None:
        """`after_start` runs in a worker once the runtime is up (the demo starts its simulated
        agents there); `theme` overrides the settings file's; `themes_dir` holds the operator's own
        themes (default `$SVC_CONSOLE_HOME/themes`); `settings_file` defaults to
        `$SVC_CONSOLE_HOME/settings.toml`; `cursor_blink=False` keeps screenshots stable."""
        _keep_logging_off_the_screen()
        super().__init__()
        self.runtime = runtime
        self.after_start = after_start
        self.cursor_blink = cursor_blink
        self._started = False
        self._starting: asyncio.Task[None] | None = None
        self._preview: Widget | None = None  # the first frame, until the screens take over
        self._preview_painted: asyncio.Future[None] | None = None  # or the app ended first
        home = runtime.paths.home
        # The screens are imported after the first frame: the home screen while the runtime
        # starts (`_start`), the others once it is drawn (`_open_other_screens`).
        self._screen_problems: list[str] = []
        self._bound_screens: set[str] = set()
        self._screens_opened = asyncio.Event()  # see `screens_open`
        self._settings_file = settings_file or settings_path(home)
        preferences = load_preferences(self._settings_file)
        # The operator's remapped keys by binding id; help and the palette show keys through it.
        self.keymap: dict[str, str] = dict(preferences.keymap)
        self._settings_problems = list(preferences.problems)
        palette_keys = self.keymap.get("app.palette")
        if palette_keys:
            # The footer shows the palette's key by looking this up.
            self.COMMAND_PALETTE_BINDING = palette_keys.split(",")[0]  # type: ignore[misc]
        self._theme_problems = self._load_themes(
            theme or preferences.theme, themes_dir if themes_dir is not None else home / "themes"
        )

    def _bind_screen_keys(self) -> None:
        # Screens register themselves when `discover` imports them, after this class was made:
        # their "go to" keys join the app's bindings here, one binding id per screen.
        for command in registry.screen_commands():
            if command.id in self._bound_screens:
                continue
            self._bound_screens.add(command.id)
            for binding in Binding.make_bindings([command.binding()]):
                self._bindings.key_to_bindings.setdefault(binding.key, []).append(binding)

    # -- themes ---------------------------------------------------------------------------------

    def _load_themes(self, wanted: str | None, themes_dir: Path) -> list[str]:
        loaded = load_themes([BUNDLED_THEMES, themes_dir])
        for theme in loaded.themes.values():
            self.register_theme(theme)
        problems = list(loaded.problems)
        self.theme, problem = pick_theme(wanted, self.available_themes)
        if problem:
            problems.append(problem)
        return problems

    def use_theme(self, name: str) -> None:
        """Switch theme (from the palette) and save it in settings.toml for the next start."""
        self.theme = name
        shown = inert_line(name, 60)
        problem = save_theme(self._settings_file, name)
        if problem is None:
            self.notify(f"Theme {shown}, saved in {self._settings_file.name}.", markup=False)
            return
        log.warning("theme not saved: %s", problem)
        self.notify(
            f"Theme {shown} is used for this session only.\n{inert_line(problem, 300)}",
            title="Theme not saved",
            severity="warning",
            timeout=10,
            markup=False,
        )

    # -- the header and the notifications ------------------------------------------------------

    def format_title(self, title: str, sub_title: str) -> Content:
        """Every screen's header: the title, the screen's name, then the console's status (the
        app's sub-title, "3 pending"), which each header watches and so redraws as it changes."""
        status = self.sub_title
        content = super().format_title(title, sub_title)
        if not status or status == sub_title:  # a screen without a name of its own
            return content
        return Content.assemble(content, (" · ", "dim"), (status, "bold"))

    # -- lifecycle ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        # Shown only while the runtime starts (the sandbox and the ledger take a moment).
        yield Static("Starting svc-console…", id="starting")

    def on_mount(self) -> None:
        if self.keymap:
            self.set_keymap(self.keymap)
        # The placeholder is painted first: the operator sees the console at once, while the
        # runtime (the ledger, the sandbox, the broker) takes its moment.
        self.call_after_refresh(self._begin_start)

    def _begin_start(self) -> None:
        self._starting = asyncio.create_task(self._start())

    async def _start(self) -> None:
        try:
            await self._start_steps()
        finally:
            collector.resume()  # whichever way the start ended (core/collector.py)

    async def _start_steps(self) -> None:
        try:
            await self._show_queue_preview()
        except Exception:  # a preview is never worth a console that does not start
            log.exception("the first frame could not be drawn")
        if self._exit:  # quit while the first frame was drawn: nothing is started to be stopped
            return
        self._screen_problems = navigation.discover([navigation.HOME])
        self._bind_screen_keys()
        self.refresh_bindings()
        if hasattr(self.runtime, "usage_first_after"):  # a console running its own broker
            # Its first usage sync waits for the other screens to open, after the home screen.
            self.runtime.usage_first_after = self._screens_opened
        try:
            await self.runtime.start()
        except Exception as exc:
            # The runtime has already undone whatever it had started.
            log.error("the console could not start: %s", exc, exc_info=True)
            self.exit(
                return_code=1,
                message=Text(f"svc-console could not start: {inert(exc, 500)}", style="bold red"),
            )
            return
        self._started = True
        when_lost = getattr(self.runtime.broker, "when_lost", None)
        if when_lost is not None:  # attached to a broker running elsewhere
            when_lost(self._broker_lost)
        sign_in = self._sign_in()
        if sign_in.needed():
            # Operator accounts: who decides here, asked once; it replaces the passphrase.
            from svc_console.tui.attached.sign_in import SignInScreen

            self.push_screen(SignInScreen(sign_in), self._unlock_answered)
            return
        passphrase = self.runtime.passphrase
        if passphrase is not None and passphrase.is_set():
            # Asked once, here; the start goes on from the answer (the start task itself does
            # not wait for it, so quitting meanwhile stops the runtime at once).
            from svc_console.tui.unlock import UnlockScreen

            self.push_screen(UnlockScreen(passphrase), self._unlock_answered)
            return
        from svc_console.tui.passphrase_offer import PassphraseOfferScreen, offer_needed

        if offer_needed(self.runtime):
            self.push_screen(PassphraseOfferScreen(self.runtime), self._offer_answered)
            return
        await self._open()

    @property
    def screens_open(self) -> bool:
        """Every screen discovered, its mode added and its key bound."""
        return self._screens_opened.is_set()

    def _sign_in(self) -> Any:
        """Who signs in once operator accounts exist: an attached console's own sign-in (to
        the broker it attached to), else the one of this console's own broker."""
        sign_in = getattr(self.runtime, "sign_in", None)
        if sign_in is None:
            from svc_console.tui.sign_in import EmbeddedSignIn

            sign_in = EmbeddedSignIn(self.runtime)
        return sign_in

    async def _show_queue_preview(self) -> None:
        """The pending requests as the ledger holds them, on the terminal before the broker's
        import and start (most of the start-up): the placeholder gives way to them. Not while
        the console is locked: its queue is for the operator who unlocks it (or signs in, once
        operator accounts exist)."""
        from svc_console.config.operator_passphrase import OperatorPassphrase

        passphrase = self.runtime.passphrase
        if passphrase is None:
            passphrase = OperatorPassphrase(self.runtime.paths.operator_passphrase)
        if passphrase.is_set() or _accounts_exist(self.runtime.paths.operator_accounts):
            return
        from svc_console.tui.approvals.first_frame import QueuePreview

        self._preview = QueuePreview(self.runtime)
        await self.query_one("#starting").remove()
        await self.screen.mount(self._preview)
        self._preview_painted = painted = asyncio.get_running_loop().create_future()
        self.call_after_refresh(_resolve, painted)
        await painted

    def _broker_lost(self) -> None:
        # An attached console without its broker can show nothing true: it says why and ends.
        self.exit(
            return_code=1,
            message=Text(
                "svc-console: the broker this console was attached to stopped; nothing more can"
                " be decided here",
                style="bold red",
            ),
        )

    async def _unlock_answered(self, unlocked: bool | None) -> None:
        if unlocked:
            await self._open()
        else:
            self.exit(return_code=1, message=Text("svc-console: not unlocked; nothing decided"))

    async def _offer_answered(self, set_now: bool | None) -> None:
        from svc_console.tui.passphrase_offer import answered

        await self._open()
        title, text = answered(bool(set_now))
        severity = "information" if set_now else "warning"
        self.notify(text, title=title, severity=severity, timeout=15, markup=False)

    async def _open(self) -> None:
        """The screens, once the runtime runs (and the operator unlocked it, where asked)."""
        if self._exit:  # quit while starting: no screen is opened into the app's shutdown
            return
        screens = navigation.entries()
        if not screens:  # the home screen did not load: any other is better than none
            self._screen_problems += navigation.discover(skip=[navigation.HOME])
            self._bind_screen_keys()
            screens = navigation.entries()
        for entry in screens:
            self.add_mode(entry.name, partial(self._build_screen, entry))
        if not screens:
            self.exit(return_code=1, message=Text("svc-console has no screen to show", "bold red"))
            return
        home = navigation.HOME if navigation.HOME in self._modes else screens[0].name
        await self.switch_mode(home)
        if self._preview is not None:  # hidden with the default screen: its work is done
            await self._preview.remove()
            self._preview = None
        self._report_problems()
        self._report_unsettled()
        # Once the home screen is drawn: importing the others takes a few hundred milliseconds.
        self.call_after_refresh(self._open_other_screens)
        if self.after_start is not None:
            self.run_worker(
                self.after_start(self.runtime),
                name="after-start",
                group="after-start",
                exit_on_error=False,
            )

    def _open_other_screens(self) -> None:
        if self._exit:
            return
        problems = navigation.discover(skip=[navigation.HOME])
        for entry in navigation.entries():
            if entry.name not in self._modes:
                self.add_mode(entry.name, partial(self._build_screen, entry))
        self._bind_screen_keys()
        self.refresh_bindings()
        self._screens_opened.set()
        for tabs in self.screen.query(ScreenTabs):
            tabs.refresh()
        self._report_screen_problems(problems)

    def _build_screen(self, entry: navigation.ScreenEntry) -> Screen[None]:
        """The screen `entry` names, or, in a console attached to a broker running elsewhere, a
        screen that says which console serves it."""
        serves = getattr(self.runtime, "serves", None)
        if serves is not None and not serves(entry.name):
            from svc_console.tui.attached.served_elsewhere import ServedElsewhere

            broker = getattr(self.runtime, "broker", None)
            banner = service_banner(getattr(broker, "market", None), self.runtime.agent_warning)
            apart = bool(getattr(self.runtime, "apart", False))
            return ServedElsewhere(entry.name, entry.title, banner, apart=apart)
        return entry.build(self.runtime)

    def _report_screen_problems(self, problems: list[str]) -> None:
        if problems:
            self.notify(
                "\n".join(problems) + "\nSee the log for details.",
                title="Screen not loaded",
                severity="error",
                timeout=10,
                markup=False,
            )

    def _report_problems(self) -> None:
        """One notification per kind of problem found while starting, never one per line."""
        if self._theme_problems:
            self.notify(
                "\n".join(self._theme_problems) + f"\nThe theme in use is {self.theme!r}.",
                title="Theme not loaded",
                severity="warning",
                timeout=10,
                markup=False,
            )
        if self._settings_problems:
            self.notify(
                "\n".join(self._settings_problems),
                title="Settings not applied",
                severity="warning",
                timeout=10,
                markup=False,
            )
        self._report_screen_problems(self._screen_problems)
        # Attached to a broker that refuses every decision from here: said at once, not at the
        # first refused approval.
        refused = getattr(self.runtime.broker, "no_credential", None)
        if refused:
            title = "Decisions refused here"
            self.notify(refused, title=title, severity="warning", timeout=30, markup=False)

    def _report_unsettled(self) -> None:
        """The calls a crash left in flight, now `unknown`: one notification that stays for ten
        minutes (or until clicked away), since each may have been charged and must be reconciled
        by hand."""
        unsettled = self.runtime.unsettled
        if not unsettled:
            return
        from svc_console.runtime import unsettled_notice

        lines = [unsettled_notice(request) for request in unsettled[:MAX_UNSETTLED_SHOWN]]
        if len(unsettled) > MAX_UNSETTLED_SHOWN:
            more = len(unsettled) - MAX_UNSETTLED_SHOWN
            lines.append(f"… and {more} more: the approvals screen's history lists them all.")
        self.notify(
            "\n".join(lines),
            title=f"{len(unsettled)} call{'s' if len(unsettled) > 1 else ''} to reconcile",
            severity="error",
            timeout=600,
            markup=False,
        )

    async def on_unmount(self) -> None:
        if self._preview_painted is not None:
            # The paint's callback dies with the app: the start (and this quit) must not wait.
            _resolve(self._preview_painted)
        if self._starting is not None and not self._starting.done():
            # Quit while starting: let the start finish (or undo itself), then stop.
            with contextlib.suppress(Exception):
                await self._starting
        if self._started:
            self._started = False
            await self.runtime.stop(leaving=True)

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

    # -- what works everywhere ------------------------------------------------------------------

    async def action_show_screen(self, name: str) -> None:
        if not self._started or name not in self._modes:
            return
        await self.switch_mode(name)

    async def action_quit(self) -> None:
        """q, ctrl+q and the palette's Quit: a screen holding unsaved work (a policy draft) is
        asked about first, and the operator chooses to save, give it up, or stay."""
        quit_asking(self)

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        entry = navigation.entry_for(self.screen)
        title = entry.title if entry is not None else "svc-console"
        notes = getattr(self.screen, "HELP_NOTES", "")  # what the screen's columns and codes mean
        self.push_screen(HelpScreen(title, entry.name if entry else None, self.keymap, notes))
