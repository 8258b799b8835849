"""What quitting the console with policy drafts not on disk would lose, as the question the
console asks first (`tui/unsaved.py`): the drafts, how each differs from its file, and saving them
the way ctrl+s does."""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path

from svc_console.tui.policies.drafts import Drafts
from svc_console.tui.unsaved import UnsavedWork

# Saves a draft's text as file `index`; returns why it could not, or None.
Write = Callable[[int, str], str | None]


def unsaved_work(work: Drafts, home: Path, files_read: bool, write: Write) -> UnsavedWork | None:
    """None when every draft is saved or untouched. `files_read`: the broker reads SKILLS.md
    files at all (when it does not, saving is not offered)."""
    unsaved = work.unsaved()
    if not unsaved:
        return None
    lines = work.unsaved_lines(unsaved, home)
    count = len(unsaved)
    drafts = "an unsaved policy draft" if count == 1 else f"{count} unsaved policy drafts"
    title = f"Quit with {drafts}?"
    indexes = [index for index, _ in unsaved]
    problem = work.why_not_saved(indexes, files_read=files_read)
    if problem is not None:
        return UnsavedWork(title, tuple(lines), cannot_save=problem)
    return UnsavedWork(
        title, tuple(lines), save=lambda: save_before_quit(work, indexes, files_read, write)
    )


def save_before_quit(
    work: Drafts, indexes: Collection[int], files_read: bool, write: Write
) -> str | None:
    """Save the drafts `indexes` as ctrl+s does, judged again first (a file may have changed
    since the question was asked); the question itself confirmed overwriting files that changed
    on disk. Returns why one could not be saved, or None."""
    problem = work.why_not_saved(indexes, files_read=files_read)
    if problem is not None:
        return problem
    for index in indexes:
        problem = write(index, work.draft_of(index))
        if problem is not None:
            return problem
    return None
