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
from collections.abc import Callable

from textual.app import ComposeResult
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import ContentSwitcher, TextArea

from svc_console.broker import Broker
from svc_console.config.errors import SettingsError
from svc_console.core.sanitize import inert_line
from svc_console.policy.drafts import DraftCheck, SavedFile, changed_lines, check, diff_lines
from svc_console.policy.errors import PolicyError
from svc_console.policy.live import LivePolicy
from svc_console.runtime import Runtime
from svc_console.tui import bindings
from svc_console.tui.colors import Palette, palette
from svc_console.tui.navigation import register_screen
from svc_console.tui.policies import quitting, state
from svc_console.tui.policies import simulating as simulation
from svc_console.tui.policies.commands import COMMANDS
from svc_console.tui.policies.dialogs import ConfirmPolicyChange
from svc_console.tui.policies.diff import PolicyDiff
from svc_console.tui.policies.drafts import NOT_READ, Drafts, errors_summary
from svc_console.tui.policies.drift import DriftShown, PolicyDrift
from svc_console.tui.policies.editor import PolicyEditor
from svc_console.tui.policies.errors import PolicyErrorList
from svc_console.tui.policies.messages import (
    DraftChecked,
    PolicyChanged,
    ServiceRead,
    SimulationDone,
)
from svc_console.tui.policies.simulation import IDLE, PolicySimulation, SimulationShown
from svc_console.tui.policies.status import DraftStatus, PolicyStatus, PolicyTabs
from svc_console.tui.unsaved import UnsavedWork
from svc_console.tui.widgets.banner import PolicyBanner, service_banner
from svc_console.tui.widgets.chrome import ConsoleFooter, heading

log = logging.getLogger(__name__)

# The pause after a keystroke before the draft is checked: typing a word checks it once.
CHECK_DELAY_S = 0.3
TICK_S = 1.0


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
        paths = list(self.live.paths) if self.live else [runtime.paths.home / "SKILLS.md"]
        self.work = Drafts(paths, runtime.paths.home)
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
        banner = service_banner(self.broker.market, self.runtime.agent_warning)
        if banner is not None:
            yield banner
        if self.live is not None:
            yield PolicyBanner(self.live, id="policy-banner")
        yield from heading()
        yield PolicyStatus(id="policy-status")
        yield DraftStatus(id="draft-status")
        yield PolicyTabs(id="policy-tabs")
        with ContentSwitcher(initial="editor", id="policy-views"):
            yield PolicyEditor(id="editor")
            yield PolicyDiff(id="diff")
            yield PolicySimulation(id="simulation")
            yield PolicyDrift(id="service")
        yield PolicyErrorList(id="policy-errors")
        yield ConsoleFooter()

    @property
    def editor(self) -> PolicyEditor:
        return self.query_one(PolicyEditor)

    @property
    def colours(self) -> Palette:
        return palette(self.app)

    @property
    def file(self) -> SavedFile:
        """The file in the editor, as saved."""
        return self.work.file

    def on_mount(self) -> None:
        if self.live is not None:
            # Subscribe before the first read, so a reload in between is not missed.
            self._unsubscribe = self.live.subscribe(
                lambda status: self.post_message(PolicyChanged(status))
            )
        self.editor.cursor_blink = getattr(self.app, "cursor_blink", True)
        self._load_editor()
        self.work.check_saved()
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

    def _load_editor(self) -> None:
        editor = self.editor
        text = self.work.draft_of(self.work.current)
        if editor.text != text:
            row, column = self.work.cursors.get(self.file.path, editor.cursor_location)
            editor.load_text(text)
            editor.jump_to(row + 1, column + 1)
        editor.show_errors(self.result.errors_in(self.file.name) if self.result else ())

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        text = self.editor.text
        if text == self.work.draft_of(self.work.current):
            return  # the screen loaded it: nothing was typed
        self.work.edit(text)
        self.saved_here = None
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(CHECK_DELAY_S, self._start_check)
        self._draw_draft()

    def _start_check(self) -> None:
        self._timer = None
        self.generation += 1
        generation, texts = self.generation, self.work.texts()
        saved_text, draft = self.file.text, self.work.draft_of(self.work.current)

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
        errors.show((*result.errors, *result.failing), self.colours.high)
        self._draw_draft()

    def _reread(self) -> None:
        """Read the files again (`Drafts.reread`) and show what changed."""
        if self.work.reread():
            self._load_editor()
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
        return state.in_force(self.live)

    def _tick(self) -> None:
        # "saved 5s ago" ages; another screen in front need not be drawn (resuming redraws).
        if self.is_current:
            self._draw_status()

    def _draw_status(self) -> None:
        status = self.query_one(PolicyStatus)
        policy = state.policy_state(self.live, self.service_flag)
        rows = state.file_rows(self.work, self.in_force(), self.broker.ledger)
        status.show(policy, rows, self.broker.clock(), self.colours)

    def _draw_draft(self) -> None:
        shown = state.draft_state(
            self.work, self.result, self.changes, self.saved_here, self.in_force()
        )
        self.query_one(DraftStatus).show(shown, self.colours)

    def _draw_diff(self) -> None:
        lines = diff_lines(self.file.text, self.work.draft_of(self.work.current), self.file.name)
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
        row, column = self.editor.cursor_location
        self.jump(self.work.next_error(errors, (row + 1, column + 1)))

    def on_policy_error_list_jump(self, message: PolicyErrorList.Jump) -> None:
        self.jump(message.error)

    def jump(self, error: PolicyError) -> None:
        """Show the error's line in the editor, the cursor on it."""
        index = next((i for i, s in enumerate(self.work.saved) if s.name == error.where.file), None)
        if index is None:
            return
        if index != self.work.current:
            self._switch_to(index)
        self.action_edit()
        self.editor.jump_to(error.where.line, error.where.column)
        errors = self.query_one(PolicyErrorList)
        if error in errors.errors:
            errors.highlighted = errors.errors.index(error)

    # -- files ------------------------------------------------------------------------------------

    def action_switch_file(self, step: int) -> None:
        if len(self.work.saved) > 1:
            self._switch_to((self.work.current + step) % len(self.work.saved))

    def _switch_to(self, index: int) -> None:
        self.work.switch_to(index, self.editor.cursor_location)
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
        index, saved = self.work.current, self.file
        draft = self.work.draft_of(index)
        self._show_check(check(self.work.texts()))
        plan = self.work.save_plan(index)
        if plan.refused is not None:
            self.notify(
                f"{saved.name} was not saved: {errors_summary(plan.refused)}. The policy in force"
                " is unchanged; fix the errors (f8 goes to the next) and save again.",
                title="Policy not saved",
                severity="error",
                markup=False,
            )
        elif plan.unchanged:
            self.notify("Nothing to save: the draft is the saved file.", markup=False)
        elif plan.moved is not None:
            explain = (
                f"{saved.name} {plan.moved} since this draft began. Saving replaces it with the"
                " draft, and what was saved there is lost."
            )

            def decided(overwrite: bool | None) -> None:
                if overwrite:
                    self._write(index, draft)

            self.app.push_screen(
                ConfirmPolicyChange("Overwrite the newer file?", explain, "Overwrite", "Cancel"),
                decided,
            )
        else:
            self._write(index, draft)

    def _write(self, index: int, text: str) -> str | None:
        """Save `text` as file `index`; returns why it could not be saved, or None."""
        saved = self.work.saved[index]
        try:
            fresh = self.work.write(index, text)
        except (OSError, SettingsError) as exc:
            problem = f"{saved.name} could not be saved: {inert_line(exc, 200)}"
            self.notify(problem, title="Policy not saved", severity="error", markup=False)
            return problem
        self.saved_here = fresh.sha256
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
        index, saved = self.work.current, self.file
        if not self.work.modified(index) or self.work.untouched_new_file(index):
            self.notify("Nothing to revert: the draft is the saved file.", markup=False)
            return

        def decided(revert: bool | None) -> None:
            if revert:
                self.work.start_from(self.work.saved[index])
                self._load_editor()
                self._start_check()
                self._redraw()

        explain = f"The changes to {saved.name} that were not saved are thrown away."
        self.app.push_screen(
            ConfirmPolicyChange("Revert the draft?", explain, "Revert", "Keep editing"), decided
        )

    # -- quitting ---------------------------------------------------------------------------------

    def unsaved_work(self) -> UnsavedWork | None:
        """What quitting now would lose, for the question the console asks first
        (`tui/unsaved.py`); None when every draft is saved or untouched."""
        home, files_read = self.runtime.paths.home, self.live is not None
        return quitting.unsaved_work(self.work, home, files_read, self._write)

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
        result = check(self.work.texts())
        self._show_check(result)
        if result.loaded is None:
            self._show_simulation(simulation.refused(result))
            return
        loaded, ledger_path, now = result.loaded, self.broker.ledger.path, self.broker.clock()
        url = self.broker.ledger.url
        self._show_simulation(simulation.started(loaded))
        self.run_worker(
            lambda: self.post_message(
                SimulationDone(simulation.run(loaded, ledger_path, now, url))
            ),
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
        account = self.broker.market.account

        async def ask() -> None:
            self.post_message(await state.ask_service(account))

        self.run_worker(
            ask(),
            group="policy-service",
            exclusive=True,
            exit_on_error=False,
            name="service policy",
        )

    def on_service_read(self, message: ServiceRead) -> None:
        self.service_answered = True
        compiled = self.live.compiled if self.live is not None else None
        self.service_flag, self.service = state.service_shown(
            message.answer, message.problem, compiled
        )
        self.query_one(PolicyDrift).show(self.service, self.colours)
        self._draw_status()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # One policy file: nothing to switch to, so the palette does not offer it.
        return not (action == "switch_file" and len(self.work.saved) < 2)
