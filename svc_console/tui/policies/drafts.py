"""The policy files the policies screen edits: each file as saved, its draft, the text the draft
began from and which file is in the editor. Plain data and the judgements made on it (what the
broker would load, what quitting would lose); the screen draws it and runs the checks."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from svc_console.core.sanitize import inert_line
from svc_console.policy.drafts import (
    TEMPLATE,
    DraftCheck,
    SavedFile,
    changed_lines,
    check,
    display_name,
    read_saved,
    save,
)
from svc_console.policy.errors import PolicyError

NOT_READ = "This broker does not read SKILLS.md files: nothing saved here would be in force."


def errors_summary(result: DraftCheck) -> str:
    """The words for a draft's errors, "the draft has 2 errors (first SKILLS.md:6:1: ...)",
    the file's text made inert."""
    count = len(result.errors)
    first = inert_line(result.errors[0], 200) if result.errors else "?"
    return f"the draft has {count} error{'s' if count != 1 else ''} (first {first})"


def shown_path(path: Path, home: Path) -> str:
    """A policy file's path as the operator would type it: under the console's home, from
    `$SVC_CONSOLE_HOME` (as the guide names it); elsewhere, whole."""
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


@dataclass(frozen=True)
class SavePlan:
    """What saving a draft comes to: refused (the check that failed), nothing to do, a file that
    moved on disk since the draft began ("was deleted", ...: the author must confirm), or a
    plain write (all None/False)."""

    refused: DraftCheck | None = None
    unchanged: bool = False
    moved: str | None = None


class Drafts:
    """The files and their drafts. `saved[i]` is file i as last read; `drafts` and `base` are the
    text being edited of each file and the saved text it started from (None: a new file)."""

    def __init__(self, paths: Sequence[Path], home: Path) -> None:
        self.saved: list[SavedFile] = [read_saved(p, display_name(p, home)) for p in paths]
        self.saved_check: DraftCheck | None = None  # the files as saved, judged together
        self.drafts: dict[Path, str] = {}
        self.base: dict[Path, str | None] = {}
        self.current = 0
        self.cursors: dict[Path, tuple[int, int]] = {}  # where the cursor was in each file
        for saved in self.saved:
            self.start_from(saved)

    @property
    def file(self) -> SavedFile:
        """The file in the editor, as saved."""
        return self.saved[self.current]

    def start_from(self, saved: SavedFile) -> None:
        """The draft of `saved` starts as its saved text (a new file: the template)."""
        self.drafts[saved.path] = saved.text if saved.text is not None else TEMPLATE
        self.base[saved.path] = saved.text

    def draft_of(self, index: int) -> str:
        return self.drafts[self.saved[index].path]

    def edit(self, text: str) -> None:
        """The draft of the file in the editor is now `text`."""
        self.drafts[self.file.path] = text

    def modified(self, index: int) -> bool:
        saved = self.saved[index]
        return saved.text is None or self.drafts[saved.path] != saved.text

    def untouched_new_file(self, index: int) -> bool:
        """File `index` is not on disk and its draft is still the template."""
        return self.saved[index].text is None and self.draft_of(index) == TEMPLATE

    def switch_to(self, index: int, cursor: tuple[int, int]) -> None:
        """Put file `index` in the editor; `cursor` is where it was in the file left."""
        self.cursors[self.file.path] = cursor
        self.current = index
        self.cursors.setdefault(self.file.path, (0, 0))

    def texts(self, drafts_of: Collection[int] | None = None) -> list[tuple[SavedFile, str | None]]:
        """The files with their drafts (or with only the drafts of the files `drafts_of`, the
        others as saved: what the broker will load once those are saved)."""
        return [
            (saved, self.drafts[saved.path] if drafts_of is None or i in drafts_of else None)
            for i, saved in enumerate(self.saved)
        ]

    def check_saved(self) -> None:
        """The files as saved, judged together (their status lines)."""
        if all(saved.text is None and saved.problem is None for saved in self.saved):
            self.saved_check = None
        else:
            self.saved_check = check([(saved, None) for saved in self.saved])

    def reread(self) -> bool:
        """Read the files again. A draft nobody edited follows its file; an edited one stays
        (saving it then asks before overwriting the newer file). Returns whether the draft in
        the editor followed its file (the editor must load it again)."""
        reload_editor = False
        for index, old in enumerate(self.saved):
            fresh = read_saved(old.path, old.name)
            if fresh == old:
                continue
            self.saved[index] = fresh
            if self.drafts[old.path] == (old.text if old.text is not None else TEMPLATE):
                self.start_from(fresh)
                reload_editor = reload_editor or index == self.current
        self.check_saved()
        return reload_editor

    def save_plan(self, index: int) -> SavePlan:
        """What saving the draft of file `index` would do, judged as the broker will load it:
        this draft, the other files as saved."""
        result = check(self.texts(drafts_of=[index]))
        if not result.valid:
            return SavePlan(refused=result)
        saved = self.saved[index]
        on_disk = read_saved(saved.path, saved.name)
        if on_disk.text == self.draft_of(index):
            return SavePlan(unchanged=True)
        if on_disk.text != self.base[saved.path]:
            return SavePlan(moved="was deleted" if on_disk.text is None else "was changed on disk")
        return SavePlan()

    def write(self, index: int, text: str) -> SavedFile:
        """Save `text` as file `index` (OSError, SettingsError when it cannot be); the file as
        saved now, its draft started from it."""
        save(self.saved[index].path, text)
        return self.saved_as(index)

    def saved_as(self, index: int) -> SavedFile:
        """File `index` was just written: read it again and start its draft from it."""
        old = self.saved[index]
        fresh = read_saved(old.path, old.name)
        self.saved[index] = fresh
        self.start_from(fresh)
        self.check_saved()
        return fresh

    def unsaved(self) -> list[tuple[int, SavedFile]]:
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

    def unsaved_lines(self, unsaved: list[tuple[int, SavedFile]], home: Path) -> list[str]:
        """Each unsaved draft's path and how it differs from its file on disk."""
        lines: list[str] = []
        for index, on_disk in unsaved:
            lines.append(shown_path(on_disk.path, home))
            began = self.base[on_disk.path]
            lines += [f"  {line}" for line in difference(self.draft_of(index), on_disk, began)]
        return lines

    def next_error(self, errors: Sequence[PolicyError], here: tuple[int, int]) -> PolicyError:
        """The first of `errors` after `here` (line, column, from 1) in the file in the editor,
        files in their order; after the last, the first again. `errors` is not empty."""
        order = {saved.name: index for index, saved in enumerate(self.saved)}

        def key(error: PolicyError) -> tuple[int, int, int]:
            where = error.where
            return (order.get(where.file, len(order)), where.line, where.column)

        ordered = sorted(errors, key=key)
        after = [error for error in ordered if key(error) > (self.current, *here)]
        return after[0] if after else ordered[0]

    def why_not_saved(self, indexes: Collection[int], *, files_read: bool) -> str | None:
        """Why the drafts `indexes` cannot be saved (ctrl+s would refuse them too), or None.
        `files_read`: the broker reads SKILLS.md files at all."""
        if not files_read:
            return NOT_READ
        result = check(self.texts(drafts_of=indexes))
        if result.valid:
            return None
        return (
            f"It cannot be saved: {errors_summary(result)}; a draft with errors is never saved,"
            " and the policy in force stays as it is."
        )
