"""Every key of the TUI in one registry: the footer, the command palette and F1 help read from it.

Each command has a stable id (`approvals.approve`) so a user keymap (`[keymap]` in the settings
file, applied with `App.set_keymap`) can move a key without touching code, and so the footer, the
palette and the help always agree. A command without keys is offered by the palette only.

Scopes: `app` (everywhere), `screens` (one "go to" command per registered screen, generated from
`navigation`), one scope per screen named like the screen (`approvals`), and the dialogs' own
(`modal`, `help`). A screen module adds its scope with `define`, beside the screen it serves.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from textual.binding import Binding

from svc_console.tui import navigation


@dataclass(frozen=True)
class Command:
    """One operator action: the key(s) that run it and how it is described."""

    id: str
    keys: str
    action: str
    description: str
    help: str
    show: bool = True
    palette: bool = True
    priority: bool = False

    def binding(self) -> Binding:
        return Binding(
            self.keys,
            self.action,
            self.description,
            show=self.show,
            tooltip=self.help,
            id=self.id,
            priority=self.priority,
        )


def _sort(order: str, label: str) -> Command:
    return Command(
        f"approvals.sort_{order}",
        "",
        f"sort('{order}')",
        f"Sort by {label}",
        f"Order the list by {label} (again to reverse)",
    )


def _risk(level: str, label: str) -> Command:
    return Command(
        f"approvals.risk_{level}",
        "",
        f"filter_token('risk:{level}')",
        f"Filter: {label}",
        f"Show only requests with {label} (adds risk:{level} to the filter)",
    )


def _verdict(outcome: str, label: str) -> Command:
    return Command(
        f"approvals.verdict_{outcome}",
        "",
        f"filter_token('verdict:{outcome}')",
        f"Filter: verdict {label}",
        f"Show only requests the policy answered with '{label}' (adds verdict:{outcome})",
    )


REGISTRY: dict[str, tuple[Command, ...]] = {
    "app": (
        Command(
            "app.help",
            "f1,question_mark",
            "help",
            "Help",
            "List the keys of this screen and the keys that work everywhere",
        ),
        Command(
            "app.palette",
            "ctrl+p",
            "command_palette",
            "Commands",
            "Search every action of this screen, the screens and the themes",
            show=False,
            palette=False,
            priority=True,
        ),
        Command(
            "app.quit",
            "q",
            "quit",
            "Quit",
            "Stop the broker and leave; pending requests stay pending",
        ),
        Command(
            "app.notices",
            "n",
            "notices",
            "Notices",
            "List the notices said, newest first, their toasts gone or not (a toast shows the"
            " newest only)",
            show=False,
        ),
    ),
    "approvals": (
        Command(
            "approvals.approve",
            "a",
            "approve",
            "Approve",
            "Approve the selected request (type the amount when it is above the threshold)",
        ),
        Command(
            "approvals.deny",
            "d",
            "deny",
            "Deny",
            "Deny the selected request, with a reason the agent will see",
        ),
        Command(
            "approvals.approve_for",
            "A",
            "approve_for_a_while",
            "Approve for a while",
            "Approve it, and its agent's calls like it for 15m, 1h or until the console stops,"
            " within a total",
            show=False,
        ),
        Command(
            "approvals.deny_for",
            "D",
            "deny_for_a_while",
            "Deny for a while",
            "Deny it, and its agent's calls like it for 15m, 1h or until the console stops",
            show=False,
        ),
        Command(
            "approvals.approve_always",
            "w",
            "approve_always",
            "Approve always",
            "Approve it, and add a rule approving calls like it to SKILLS.md (the diff first)",
            show=False,
        ),
        Command(
            "approvals.mark",
            "space",
            "toggle_mark",
            "Mark",
            "Mark or unmark the selected request; a or d then decides every marked one",
            show=False,
        ),
        Command(
            "approvals.mark_all",
            "m",
            "mark_matching",
            "Mark all shown",
            "Mark every pending request the filter matches (all pages)",
            show=False,
        ),
        Command(
            "approvals.clear_marks",
            "M",
            "clear_marks",
            "Clear marks",
            "Unmark every request",
            show=False,
        ),
        Command(
            "approvals.grants",
            "g",
            "show_grants",
            "Grants",
            "Show the grants (decisions for a while) and revoke one",
            show=False,
        ),
        Command(
            "approvals.pause_demo",
            "P",
            "pause_demo_agents",
            "Pause demo agents",
            "Demo only: hold the simulated agents' submissions, or let them go on",
            show=False,
        ),
        Command(
            "approvals.resume",
            "R",
            "resume_agent",
            "Resume agent",
            "Resume an agent the circuit breaker paused (the selected request's, or the only"
            " one): its rules apply to its requests again",
        ),
        Command(
            "approvals.agent_words",
            "v",
            "toggle_agent_words",
            "All text",
            "Show all of what the agent wrote, or only its first lines",
        ),
        Command(
            "approvals.filter",
            "slash",
            "focus_filter",
            "Filter",
            "Filter by agent, endpoint or provider; risk:high|warn|none, verdict:ask|deny|auto",
        ),
        Command(
            "approvals.clear_filter",
            "escape",
            "clear_filter",
            "Clear filter",
            "Show every request again",
            show=False,
        ),
        Command(
            "approvals.sort",
            "s",
            "next_sort",
            "Sort",
            "Sort by the next column: age, amount, time left, agent",
        ),
        Command(
            "approvals.reverse",
            "S",
            "reverse_sort",
            "Reverse",
            "Reverse the order of the list",
            show=False,
        ),
        Command(
            "approvals.pending",
            "p",
            "show_tab('pending')",
            "Pending",
            "Show the requests waiting for a decision",
        ),
        Command(
            "approvals.history",
            "h",
            "show_tab('history')",
            "History",
            "Show decided requests with their outcome and the amount charged",
        ),
        Command(
            "approvals.next_page",
            "right_square_bracket",
            "page(1)",
            "Next page",
            "Show the next page of requests",
            show=False,
        ),
        Command(
            "approvals.previous_page",
            "left_square_bracket",
            "page(-1)",
            "Previous page",
            "Show the previous page of requests",
            show=False,
        ),
        Command(
            "approvals.down",
            "j",
            "cursor_down",
            "Next",
            "Select the next request",
            show=False,
            palette=False,
        ),
        Command(
            "approvals.up",
            "k",
            "cursor_up",
            "Previous",
            "Select the previous request",
            show=False,
            palette=False,
        ),
        Command(
            "approvals.detail_down",
            "J",
            "scroll_detail(1)",
            "Scroll detail down",
            "Scroll the selected request's detail down a page",
            show=False,
        ),
        Command(
            "approvals.detail_up",
            "K",
            "scroll_detail(-1)",
            "Scroll detail up",
            "Scroll the selected request's detail up a page",
            show=False,
        ),
        Command(
            "approvals.detail_smaller",
            "less_than_sign",
            "resize_detail(-1)",
            "Smaller detail",
            "Give the detail pane less of the screen (beside the list: width; below it: height)",
            show=False,
        ),
        Command(
            "approvals.detail_larger",
            "greater_than_sign",
            "resize_detail(1)",
            "Larger detail",
            "Give the detail pane more of the screen",
            show=False,
        ),
        _sort("age", "age"),
        _sort("amount", "amount"),
        _sort("expires", "time left"),
        _sort("agent", "agent"),
        _sort("decided", "decision time"),
        _risk("high", "high risk"),
        _risk("warn", "warn or high risk"),
        _risk("none", "no risk flags"),
        _verdict("ask", "ask"),
        _verdict("deny", "deny"),
        _verdict("auto", "auto"),
    ),
    "modal": (
        Command(
            "modal.cancel",
            "escape",
            "cancel",
            "Cancel",
            "Close this dialog; nothing is decided",
            palette=False,
        ),
    ),
    "help": (
        Command(
            "help.close",
            "escape,f1,q,question_mark",
            "close",
            "Close",
            "Close the help",
            palette=False,
        ),
    ),
}
SCREENS_SCOPE = "screens"


def define(scope: str, commands: Sequence[Command]) -> list[Binding]:
    """Add a screen's commands to the registry and return its `BINDINGS`. Ids must be unique."""
    if scope in REGISTRY or scope == SCREENS_SCOPE:
        raise ValueError(f"binding scope {scope!r} is already defined")
    taken = {command.id for _, command in all_commands()}
    for command in commands:
        if command.id in taken:
            raise ValueError(f"binding id {command.id!r} is already defined")
        taken.add(command.id)
    REGISTRY[scope] = tuple(commands)
    return bindings(scope)


def screen_commands() -> tuple[Command, ...]:
    """One "go to" command per registered screen, bound app-wide."""
    return tuple(
        Command(
            entry.binding_id,
            entry.key,
            f"show_screen('{entry.name}')",
            entry.title,
            f"Go to the {entry.title} screen",
            show=False,
        )
        for entry in navigation.entries()
    )


def commands(scope: str) -> tuple[Command, ...]:
    if scope == SCREENS_SCOPE:
        return screen_commands()
    return REGISTRY.get(scope, ())


def bindings(scope: str) -> list[Binding]:
    """The `BINDINGS` of the screen (or app) that owns `scope`; palette-only commands have none."""
    return [command.binding() for command in commands(scope) if command.keys]


def all_commands() -> Iterator[tuple[str, Command]]:
    """(scope, command) for every command the console has."""
    for scope, scoped in REGISTRY.items():
        for command in scoped:
            yield scope, command
    for command in screen_commands():
        yield SCREENS_SCOPE, command


def keys_of(command: Command, keymap: Mapping[str, str]) -> list[str]:
    """The keys that run a command now: the user's keymap first, then the default."""
    keys = keymap.get(command.id, command.keys)
    return [key.strip() for key in keys.split(",") if key.strip()]
