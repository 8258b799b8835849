"""The policies screen's commands (ids `policies.*`), for `bindings.define`."""

from __future__ import annotations

from svc_console.tui.bindings import Command


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
