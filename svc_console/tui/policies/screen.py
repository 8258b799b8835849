"""The policies screen, for policy authors: the SKILLS.md files in force and their status, an
editor that checks the draft as the author types, the diff against the saved file, the draft tried
on the last 30 days of requests, saving (the broker's watcher puts the file in force within a
second), and the service's active policy beside the local one with drift flagged.

The draft is judged by `policy.drafts.check`, which loads and compiles it exactly as the broker
does, together with the other policy files in force. Checking runs in a worker a moment after the
last keystroke; the simulation (`svc-console policy simulate`'s own replay) and the service's
policy are workers too, and every worker posts a message that the screen applies.

Saving a draft with errors is refused, with the errors shown: saving it would suspend auto-approval
for every agent until someone fixes the file (the broker keeps the last valid version in force),
which is never what an author pressing save means. A file changed on disk since the draft began
is overwritten only after the author confirms. Quitting the console with an edited draft that is
not on disk asks first (`unsaved_work`, read by `tui/unsaved.py`): save it the same way, give it
up, or stay; leaving for another screen keeps the draft as it is.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import sqlite_utils
from textual.app import ComposeResult
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import ContentSwitcher, Footer, Header, TextArea

from svc_console.broker import Broker
from svc_console.config.errors import SettingsError
from svc_console.core.sanitize import inert_line
from svc_console.ledger import policy_versions
from svc_console.ledger.replay import past_requests
from svc_console.market.errors import MarketError
from svc_console.policy.drafts import (
    TEMPLATE,
    DraftCheck,
    SavedFile,
    changed_lines,
    check,
    diff_lines,
    display_name,
    read_saved,
    save,
)
from svc_console.policy.drift import compare
from svc_console.policy.errors import PolicyError
from svc_console.policy.live import LivePolicy
from svc_console.policy.live import PolicyStatus as LiveStatus
from svc_console.policy.loader import LoadedPolicy
from svc_console.policy.report import simulation_lines
from svc_console.policy.simulate import parse_since, simulate, warmup_start
from svc_console.runtime import Runtime
from svc_console.tui import bindings
from svc_console.tui.bindings import Command
from svc_console.tui.colors import Palette, palette
from svc_console.tui.navigation import register_screen
from svc_console.tui.policies.dialogs import ConfirmPolicyChange
from svc_console.tui.policies.diff import PolicyDiff
from svc_console.tui.policies.drift import DriftShown, PolicyDrift
from svc_console.tui.policies.editor import PolicyEditor
from svc_console.tui.policies.errors import PolicyErrorList
from svc_console.tui.policies.simulation import IDLE, PolicySimulation, SimulationShown
from svc_console.tui.policies.status import (
    DraftState,
    DraftStatus,
    FileRow,
    PolicyState,
    PolicyStatus,
    PolicyTabs,
)
from svc_console.tui.unsaved import UnsavedWork
from svc_console.tui.widgets.banner import PolicyBanner, SandboxBanner

log = logging.getLogger(__name__)

# The pause after a keystroke before the draft is checked: typing a word checks it once.
CHECK_DELAY_S = 0.3
TICK_S = 1.0
SIMULATED_PERIOD = "30d"
NOT_READ = "This broker does not read SKILLS.md files: nothing saved here would be in force."


def _command(
    id: str, keys: str, action: str, description: str, help: str, *, show: bool = True
) -> Command:
    return Command(f"policies.{id}", keys, action, description, help, show=show)


COMMANDS = (
    _command("edit", "e", "edit", "Edit", "Show the editor and type in it (escape leaves it)"),
    _command(
        "save",
        "ctrl+s",
        "save",
        "Save",
        "Save the draft; the broker puts it in force within a second. A draft with errors is"
        " not saved",
    ),
    _command(
        "next_error", "f8", "next_error", "Next error", "Put the cursor on the next error's line"
    ),
    _command("diff", "v", "show_view('diff')", "Diff", "The draft against the saved file"),
    _command(
        "simulate",
        "t",
        "simulate",
        "Simulate",
        "Replay the last 30 days of requests against the draft: what it would change",
    ),
    _command(
        "service",
        "c",
        "service",
        "Service",
        "The service's active policy beside the local one, drift flagged (asks it again)",
    ),
    _command("revert", "r", "revert", "Revert", "Throw the draft away: the file as saved"),
    _command(
        "leave",
        "escape",
        "leave",
        "Leave",
        "Leave the editor, so keys work as commands again; from a view, back to the editor",
    ),
    _command(
        "next_file",
        "right_square_bracket",
        "switch_file(1)",
        "Next file",
        "Edit the next policy file",
        show=False,
    ),
    _command(
        "previous_file",
        "left_square_bracket",
        "switch_file(-1)",
        "Previous file",
        "Edit the previous policy file",
        show=False,
    ),
)


# -- messages from the workers and the policy -------------------------------------------------


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


def replay(draft: LoadedPolicy, ledger_path: Path, now: float) -> list[str]:
    """In a worker thread: `svc-console policy simulate`'s replay and report, on a read-only
    connection of the thread's own (the broker keeps writing through its own)."""
    since = now - parse_since(SIMULATED_PERIOD)
    connection = sqlite3.connect(ledger_path, check_same_thread=False)
    try:
        connection.execute("PRAGMA query_only=ON")
        connection.execute("PRAGMA busy_timeout=5000")
        past = past_requests(sqlite_utils.Database(connection), warmup_start(since), now)
        report = simulate(draft, past, since=since, until=now)
    finally:
        connection.close()
    return simulation_lines(report, SIMULATED_PERIOD)


def errors_summary(result: DraftCheck) -> str:
    """The words for a draft's errors, "the draft has 2 errors (first SKILLS.md:6:1: ...)",
    the file's text made inert."""
    count = len(result.errors)
    first = inert_line(result.errors[0], 200) if result.errors else "?"
    return f"the draft has {count} error{'s' if count != 1 else ''} (first {first})"


def shown_path(path: Path, home: Path) -> str:
    """A policy file's path as the operator would type it: under the console's home, from
    `$SVC_CONSOLE_HOME` (as the README names it); elsewhere, whole."""
    try:
        return inert_line(f"$SVC_CONSOLE_HOME/{path.relative_to(home)}", 200)
    except ValueError:
        return inert_line(path, 200)


def difference(draft: str, on_disk: SavedFile, began: str | None) -> list[str]:
    """How a draft differs from its file on disk, and whether the file moved under it."""
    lines = len(draft.splitlines())
    if on_disk.problem is not None:
        problem = inert_line(on_disk.problem, 120)
        return [
            f"{lines} line{'s' if lines != 1 else ''}; the file on disk {problem}, and saving"
            " replaces it"
        ]
    if on_disk.text is None and began is None:
        return [f"a new file of {lines} line{'s' if lines != 1 else ''}, not on disk yet"]
    if on_disk.text is None:
        return [
            f"{lines} line{'s' if lines != 1 else ''}; the file was deleted on disk since the"
            " draft began, and saving writes it again"
        ]
    added, removed = changed_lines(on_disk.text, draft)
    total = added + removed
    shown = [
        f"{total} line{'s' if total != 1 else ''} differ{'s' if total == 1 else ''} from the"
        f" file on disk ({added} added, {removed} removed)"
    ]
    if on_disk.text != began:
        shown.append("the file changed on disk since the draft began; saving replaces it")
    return shown


@register_screen("policies", title="Policies", key="4", order=4)
class PoliciesScreen(Screen[None]):
    """SKILLS.md: status, editor with live checking, diff, simulation, save, drift."""

    BINDINGS = bindings.define("policies", COMMANDS)
    SUB_TITLE = "policies"
    # Nothing has the focus at first: the number keys still change screens, `e` starts typing.
    AUTO_FOCUS = ""
    DEFAULT_CSS = """
    PoliciesScreen Header { dock: none; }
    #policy-views { height: 1fr; }
    #policy-errors { display: none; }
    """

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(id="policies")
        assert runtime.broker is not None, "the policies screen needs a started runtime"
        self.runtime = runtime
        self.broker: Broker = runtime.broker
        live = runtime.policy
        # A broker given an engine of its own (tests, embedders) reads no SKILLS.md: shown only.
        self.live: LivePolicy | None = live if isinstance(live, LivePolicy) else None
        home = runtime.paths.home
        paths = list(self.live.paths) if self.live else [home / "SKILLS.md"]
        self.saved: list[SavedFile] = [read_saved(p, display_name(p, home)) for p in paths]
        self.saved_check: DraftCheck | None = None
        # The text being edited of each file, and the saved text it started from.
        self.drafts: dict[Path, str] = {}
        self.base: dict[Path, str | None] = {}
        self.current = 0
        self.cursors: dict[Path, tuple[int, int]] = {}  # where the cursor was in each file
        self.view = "editor"
        self.result: DraftCheck | None = None  # the draft's last check
        self.changes = (0, 0)
        self.generation = 0
        self.checked_generation = -1
        self.saved_here: str | None = None  # the version this screen saved, until the next edit
        self._announced: str | None = None
        self.simulation = IDLE
        self.service = DriftShown(note="Asking the service for its active policy…")
        self.service_flag: tuple[str, bool] | None = None
        self.service_answered = False
        self._timer: Timer | None = None
        self._unsubscribe: Callable[[], None] | None = None

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        market = self.broker.market
        if market.sandbox:
            yield SandboxBanner(market.base_url, id="sandbox-banner")
        if self.live is not None:
            yield PolicyBanner(self.live, id="policy-banner")
        yield Header(show_clock=False, icon="$")
        yield PolicyStatus(id="policy-status")
        yield DraftStatus(id="draft-status")
        yield PolicyTabs(id="policy-tabs")
        with ContentSwitcher(initial="editor", id="policy-views"):
            yield PolicyEditor(id="editor")
            yield PolicyDiff(id="diff")
            yield PolicySimulation(id="simulation")
            yield PolicyDrift(id="service")
        yield PolicyErrorList(id="policy-errors")
        yield Footer()

    @property
    def editor(self) -> PolicyEditor:
        return self.query_one(PolicyEditor)

    @property
    def colours(self) -> Palette:
        return palette(self.app)

    @property
    def file(self) -> SavedFile:
        """The file in the editor, as saved."""
        return self.saved[self.current]

    def on_mount(self) -> None:
        if self.live is not None:
            # Subscribe before the first read, so a reload in between is not missed.
            self._unsubscribe = self.live.subscribe(
                lambda status: self.post_message(PolicyChanged(status))
            )
        for saved in self.saved:
            self._start_from(saved)
        self.editor.cursor_blink = getattr(self.app, "cursor_blink", True)
        self._load_editor()
        self._check_saved()
        self._start_check()
        self._fetch_service()
        self.set_interval(TICK_S, self._tick, name="policies-clock")
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._redraw())
        self._redraw()

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def on_screen_resume(self) -> None:
        # Back from another screen: a file may have been edited elsewhere meanwhile.
        self._reread()

    # -- the drafts -------------------------------------------------------------------------------

    def _start_from(self, saved: SavedFile) -> None:
        """The draft of `saved` starts as its saved text (a new file: the template)."""
        self.drafts[saved.path] = saved.text if saved.text is not None else TEMPLATE
        self.base[saved.path] = saved.text

    def draft_of(self, index: int) -> str:
        return self.drafts[self.saved[index].path]

    def modified(self, index: int) -> bool:
        saved = self.saved[index]
        return saved.text is None or self.drafts[saved.path] != saved.text

    def _load_editor(self) -> None:
        editor = self.editor
        text = self.draft_of(self.current)
        if editor.text != text:
            row, column = self.cursors.get(self.file.path, editor.cursor_location)
            editor.load_text(text)
            editor.jump_to(row + 1, column + 1)
        editor.show_errors(self.result.errors_in(self.file.name) if self.result else ())

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        text = self.editor.text
        if text == self.draft_of(self.current):
            return  # the screen loaded it: nothing was typed
        self.drafts[self.file.path] = text
        self.saved_here = None
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(CHECK_DELAY_S, self._start_check)
        self._draw_draft()

    def _texts(
        self, drafts_of: Collection[int] | None = None
    ) -> list[tuple[SavedFile, str | None]]:
        """The files with their drafts (or with only the drafts of the files `drafts_of`, the
        others as saved: what the broker will load once those are saved)."""
        return [
            (saved, self.drafts[saved.path] if drafts_of is None or i in drafts_of else None)
            for i, saved in enumerate(self.saved)
        ]

    def _start_check(self) -> None:
        self._timer = None
        self.generation += 1
        generation, texts = self.generation, self._texts()
        saved_text, draft = self.file.text, self.draft_of(self.current)

        def work() -> None:
            result = check(texts)
            added, removed = changed_lines(saved_text, draft)
            self.post_message(DraftChecked(generation, result, added, removed))

        self.run_worker(
            work,
            thread=True,
            group="policy-check",
            exclusive=True,
            exit_on_error=False,
            name="policy check",
        )

    def on_draft_checked(self, message: DraftChecked) -> None:
        if message.generation != self.generation:
            return  # typed again since: a newer check is on its way
        self.checked_generation = message.generation
        self._show_check(message.result, (message.added, message.removed))

    def _show_check(self, result: DraftCheck, changes: tuple[int, int] | None = None) -> None:
        self.result = result
        if changes is not None:
            self.changes = changes
        self.editor.show_errors(result.errors_in(self.file.name))
        errors = self.query_one(PolicyErrorList)
        errors.show(result.errors, self.colours.high)
        self._draw_draft()

    def _check_saved(self) -> None:
        """The files as saved, judged together (their status lines)."""
        if all(saved.text is None and saved.problem is None for saved in self.saved):
            self.saved_check = None
        else:
            self.saved_check = check([(saved, None) for saved in self.saved])

    def _reread(self) -> None:
        """Read the files again. A draft nobody edited follows its file; an edited one stays
        (saving it then asks before overwriting the newer file)."""
        for index, old in enumerate(self.saved):
            fresh = read_saved(old.path, old.name)
            if fresh == old:
                continue
            self.saved[index] = fresh
            if self.drafts[old.path] == (old.text if old.text is not None else TEMPLATE):
                self._start_from(fresh)
                if index == self.current:
                    self._load_editor()
        self._check_saved()
        self._start_check()
        self._redraw()

    @property
    def settled(self) -> bool:
        """No check of the draft is waiting or running, and the service has answered (tests
        wait for this before they read the screen)."""
        checked = self._timer is None and self.checked_generation == self.generation
        return checked and self.service_answered

    # -- drawing ----------------------------------------------------------------------------------

    def _redraw(self) -> None:
        self._draw_status()
        self._draw_draft()
        self.query_one(PolicyTabs).show(self.view, self.colours)
        self._show_simulation(self.simulation)
        self.query_one(PolicyDrift).show(self.service, self.colours)
        if self.view == "diff":
            self._draw_diff()

    def in_force(self) -> dict[str, str]:
        """The SHA-256 of each file's version in force, by path."""
        compiled = self.live.compiled if self.live is not None else None
        if compiled is None:
            return {}
        return {str(f.path or f.name): f.sha256 for f in compiled.loaded.files}

    def policy_state(self) -> PolicyState:
        summary, in_sync = self.service_flag or (None, None)
        if self.live is None:
            return PolicyState("fixed", None)
        status = self.live.status
        return PolicyState(status.state, status.sha256, summary, in_sync)

    def rows(self) -> list[FileRow]:
        forced = self.in_force()
        rows = []
        for index, saved in enumerate(self.saved):
            version = policy_versions.latest(self.broker.ledger, str(saved.path))
            errors = self.saved_check.errors_in(saved.name) if self.saved_check else []
            rows.append(
                FileRow(
                    name=saved.name,
                    exists=saved.text is not None,
                    sha256=saved.sha256,
                    errors=tuple(errors),
                    in_force=bool(saved.sha256) and forced.get(str(saved.path)) == saved.sha256,
                    saved_at=version.at if version else None,
                    saved_by=version.saved_by if version else None,
                    current=index == self.current and len(self.saved) > 1,
                    problem=saved.problem,
                )
            )
        return rows

    def _tick(self) -> None:
        # "saved 5s ago" ages; another screen in front need not be drawn (resuming redraws).
        if self.is_current:
            self._draw_status()

    def _draw_status(self) -> None:
        status = self.query_one(PolicyStatus)
        status.show(self.policy_state(), self.rows(), self.broker.clock(), self.colours)

    def draft_state(self) -> DraftState:
        saved = self.file
        in_force = self.saved_here is not None and self.in_force().get(str(saved.path)) == (
            self.saved_here
        )
        added, removed = self.changes
        return DraftState(
            name=saved.name,
            new_file=saved.text is None,
            modified=self.modified(self.current),
            added=added,
            removed=removed,
            checked=self.result is not None,
            errors=self.result.errors if self.result else (),
            saved=self.saved_here,
            saved_in_force=in_force,
        )

    def _draw_draft(self) -> None:
        self.query_one(DraftStatus).show(self.draft_state(), self.colours)

    def _draw_diff(self) -> None:
        lines = diff_lines(self.file.text, self.draft_of(self.current), self.file.name)
        self.query_one(PolicyDiff).show(lines, self.colours)

    # -- the views --------------------------------------------------------------------------------

    def action_show_view(self, name: str) -> None:
        self.view = name
        self.query_one(ContentSwitcher).current = name
        self.query_one(PolicyTabs).show(name, self.colours)
        if name == "diff":
            self._draw_diff()
        if name == "editor":
            self.set_focus(None)
        else:
            self.query_one(f"#{name}").focus()  # arrows and page keys scroll it

    def action_edit(self) -> None:
        self.action_show_view("editor")
        self.editor.focus()

    def action_leave(self) -> None:
        if self.view != "editor":
            self.action_show_view("editor")
        elif self.focused is self.editor:
            errors = self.query_one(PolicyErrorList)
            if errors.display:
                errors.focus()
            else:
                self.set_focus(None)

    # -- errors -----------------------------------------------------------------------------------

    def action_next_error(self) -> None:
        errors = list(self.result.errors) if self.result else []
        if not errors:
            self.notify("The draft has no errors.", title="Policy", markup=False)
            return
        order = {saved.name: index for index, saved in enumerate(self.saved)}
        row, column = self.editor.cursor_location
        here = (self.current, row + 1, column + 1)

        def key(error: PolicyError) -> tuple[int, int, int]:
            where = error.where
            return (order.get(where.file, len(order)), where.line, where.column)

        errors.sort(key=key)
        after = [error for error in errors if key(error) > here]
        self.jump(after[0] if after else errors[0])

    def on_policy_error_list_jump(self, message: PolicyErrorList.Jump) -> None:
        self.jump(message.error)

    def jump(self, error: PolicyError) -> None:
        """Show the error's line in the editor, the cursor on it."""
        index = next((i for i, s in enumerate(self.saved) if s.name == error.where.file), None)
        if index is None:
            return
        if index != self.current:
            self._switch_to(index)
        self.action_edit()
        self.editor.jump_to(error.where.line, error.where.column)
        errors = self.query_one(PolicyErrorList)
        if error in errors.errors:
            errors.highlighted = errors.errors.index(error)

    # -- files ------------------------------------------------------------------------------------

    def action_switch_file(self, step: int) -> None:
        if len(self.saved) > 1:
            self._switch_to((self.current + step) % len(self.saved))

    def _switch_to(self, index: int) -> None:
        self.cursors[self.file.path] = self.editor.cursor_location
        self.current = index
        self.cursors.setdefault(self.file.path, (0, 0))
        self.saved_here = None
        self._load_editor()
        self._start_check()
        self._redraw()

    # -- save and revert --------------------------------------------------------------------------

    def action_save(self) -> None:
        if self.live is None:
            self.notify(
                NOT_READ,
                title="Not saved",
                severity="warning",
                markup=False,
            )
            return
        index, saved = self.current, self.file
        draft = self.draft_of(index)
        self._show_check(check(self._texts()))
        # What the broker will load: this draft, the other files as saved.
        result = check(self._texts(drafts_of=[index]))
        if not result.valid:
            self.notify(
                f"{saved.name} was not saved: {errors_summary(result)}. The policy in force is"
                " unchanged; fix the errors (f8 goes to the next) and save again.",
                title="Policy not saved",
                severity="error",
                markup=False,
            )
            return
        on_disk = read_saved(saved.path, saved.name)
        if on_disk.text == draft:
            self.notify("Nothing to save: the draft is the saved file.", markup=False)
            return
        if on_disk.text != self.base[saved.path]:
            changed = "was deleted" if on_disk.text is None else "was changed on disk"
            explain = (
                f"{saved.name} {changed} since this draft began. Saving replaces it with the"
                " draft, and what was saved there is lost."
            )

            def decided(overwrite: bool | None) -> None:
                if overwrite:
                    self._write(index, draft)

            self.app.push_screen(
                ConfirmPolicyChange("Overwrite the newer file?", explain, "Overwrite", "Cancel"),
                decided,
            )
            return
        self._write(index, draft)

    def _write(self, index: int, text: str) -> str | None:
        """Save `text` as file `index`; returns why it could not be saved, or None."""
        saved = self.saved[index]
        try:
            save(saved.path, text)
        except (OSError, SettingsError) as exc:
            problem = f"{saved.name} could not be saved: {inert_line(exc, 200)}"
            self.notify(problem, title="Policy not saved", severity="error", markup=False)
            return problem
        fresh = read_saved(saved.path, saved.name)
        self.saved[index] = fresh
        self._start_from(fresh)
        self.saved_here = fresh.sha256
        self._check_saved()
        self._start_check()
        self._redraw()
        version = (fresh.sha256 or "")[:12]
        self.notify(
            f"{saved.name} saved as version {version}: the broker puts it in force within a"
            " second.",
            title="Policy saved",
            markup=False,
        )
        return None

    def action_revert(self) -> None:
        index, saved = self.current, self.file
        if not self.modified(index) or (saved.text is None and self.draft_of(index) == TEMPLATE):
            self.notify("Nothing to revert: the draft is the saved file.", markup=False)
            return

        def decided(revert: bool | None) -> None:
            if revert:
                self._start_from(self.saved[index])
                self._load_editor()
                self._start_check()
                self._redraw()

        explain = f"The changes to {saved.name} that were not saved are thrown away."
        self.app.push_screen(
            ConfirmPolicyChange("Revert the draft?", explain, "Revert", "Keep editing"), decided
        )

    # -- quitting ---------------------------------------------------------------------------------

    def unsaved_drafts(self) -> list[tuple[int, SavedFile]]:
        """(index, file as on disk now) of each draft the author edited that differs from its
        file on disk. A draft nobody typed in loses nothing, even when the file moved on."""
        found = []
        for index, saved in enumerate(self.saved):
            draft, began = self.draft_of(index), self.base[saved.path]
            if draft == (began if began is not None else TEMPLATE):
                continue
            on_disk = read_saved(saved.path, saved.name)
            if draft != on_disk.text:
                found.append((index, on_disk))
        return found

    def unsaved_work(self) -> UnsavedWork | None:
        """What quitting now would lose, for the question the console asks first
        (`tui/unsaved.py`); None when every draft is saved or untouched."""
        unsaved = self.unsaved_drafts()
        if not unsaved:
            return None
        home = self.runtime.paths.home
        lines: list[str] = []
        for index, on_disk in unsaved:
            lines.append(shown_path(on_disk.path, home))
            began = self.base[on_disk.path]
            lines += [f"  {line}" for line in difference(self.draft_of(index), on_disk, began)]
        count = len(unsaved)
        drafts = "an unsaved policy draft" if count == 1 else f"{count} unsaved policy drafts"
        title = f"Quit with {drafts}?"
        indexes = [index for index, _ in unsaved]
        problem = self._why_not_saved(indexes)
        if problem is not None:
            return UnsavedWork(title, tuple(lines), cannot_save=problem)
        return UnsavedWork(title, tuple(lines), save=lambda: self._save_before_quit(indexes))

    def _why_not_saved(self, indexes: Collection[int]) -> str | None:
        """Why the drafts `indexes` cannot be saved (ctrl+s would refuse them too), or None."""
        if self.live is None:
            return NOT_READ
        result = check(self._texts(drafts_of=indexes))
        if result.valid:
            return None
        return (
            f"It cannot be saved: {errors_summary(result)}; a draft with errors is never saved,"
            " and the policy in force stays as it is."
        )

    def _save_before_quit(self, indexes: Collection[int]) -> str | None:
        """Save the drafts `indexes` as ctrl+s does, judged again first (a file may have changed
        since the question was asked); the question itself confirmed overwriting files that
        changed on disk. Returns why one could not be saved, or None."""
        problem = self._why_not_saved(indexes)
        if problem is not None:
            return problem
        for index in indexes:
            problem = self._write(index, self.draft_of(index))
            if problem is not None:
                return problem
        return None

    # -- the broker's policy ----------------------------------------------------------------------

    def on_policy_changed(self, message: PolicyChanged) -> None:
        self._reread()
        saved_here = self.saved_here
        if saved_here and saved_here != self._announced and saved_here in self.in_force().values():
            self._announced = saved_here
            self.notify(
                f"Version {saved_here[:12]} of {self.file.name} is in force.",
                title="Policy in force",
                markup=False,
            )
        self._fetch_service()

    # -- simulation -------------------------------------------------------------------------------

    def action_simulate(self) -> None:
        self.action_show_view("simulation")
        result = check(self._texts())
        self._show_check(result)
        if result.loaded is None:
            count, first = len(result.errors), result.errors[0] if result.errors else "?"
            self._show_simulation(
                SimulationShown(
                    note=f"The draft has {count} error{'s' if count > 1 else ''} (first {first}):"
                    " fix them to simulate it.",
                    tone="high",
                )
            )
            return
        loaded, sha = result.loaded, result.loaded.sha256
        ledger_path, now = self.broker.ledger.path, self.broker.clock()
        self._show_simulation(
            SimulationShown(
                note=f"Replaying the last {SIMULATED_PERIOD} of requests against draft {sha[:12]}…",
                tone="info",
            )
        )

        def work() -> None:
            try:
                lines = replay(loaded, ledger_path, now)
            except sqlite3.Error as exc:
                problem = f"The ledger could not be read: {exc}"
                self.post_message(SimulationDone(SimulationShown(note=problem, tone="high")))
                return
            self.post_message(SimulationDone(SimulationShown(sha, tuple(lines))))

        self.run_worker(
            work,
            thread=True,
            group="policy-simulate",
            exclusive=True,
            exit_on_error=False,
            name="policy simulation",
        )

    def on_simulation_done(self, message: SimulationDone) -> None:
        self._show_simulation(message.shown)

    def _show_simulation(self, shown: SimulationShown) -> None:
        self.simulation = shown
        self.query_one(PolicySimulation).show(shown, self.colours)

    # -- the service ------------------------------------------------------------------------------

    def action_service(self) -> None:
        self.action_show_view("service")
        self._fetch_service()

    def _fetch_service(self) -> None:
        market = self.broker.market
        self.run_worker(
            self._ask_service(market),
            group="policy-service",
            exclusive=True,
            exit_on_error=False,
            name="service policy",
        )

    async def _ask_service(self, market: Any) -> None:
        try:
            answer = await market.account.policies()
        except MarketError as exc:
            self.post_message(ServiceRead(problem=inert_line(exc.message, 200)))
            return
        self.post_message(ServiceRead(answer))

    def on_service_read(self, message: ServiceRead) -> None:
        self.service_answered = True
        answer = message.answer
        if answer is None:
            self.service_flag = ("cannot be read (c shows why)", False)
            self.service = DriftShown(
                note=f"The service's active policy could not be read: {message.problem}",
                tone="high",
            )
        else:
            compiled = self.live.compiled if self.live is not None else None
            drift = compare(compiled.loaded, answer) if compiled is not None else None
            if drift is None:
                self.service_flag = None
            elif drift.in_sync:
                self.service_flag = ("in sync", True)
            else:
                self.service_flag = ("DRIFT (c shows it)", False)
            self.service = DriftShown(
                drift=drift,
                local=compiled.loaded.rules_json() if compiled is not None else None,
                service=answer.policy if answer.valid else None,
                service_source=answer.source,
            )
        self.query_one(PolicyDrift).show(self.service, self.colours)
        self._draw_status()

    # -- which keys apply -------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # One policy file: nothing to switch to, so the palette does not offer it.
        return not (action == "switch_file" and len(self.saved) < 2)
