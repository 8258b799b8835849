"""The catalogue screen's commands (ids `catalogue.*`), for `bindings.define`."""

from __future__ import annotations

from svc_console.core.catalogue_filters import SORT_LABELS
from svc_console.tui.bindings import Command


def _command(
    id: str,
    keys: str,
    action: str,
    description: str,
    help: str,
    *,
    show: bool = True,
    palette: bool = True,
) -> Command:
    return Command(f"catalogue.{id}", keys, action, description, help, show=show, palette=palette)


def _sort(order: str) -> Command:
    return _command(
        f"sort_{order}",
        "",
        f"sort('{order}')",
        f"Datasets: {SORT_LABELS[order]}",
        f"List the datasets {SORT_LABELS[order]}",
    )


COMMANDS = (
    _command("market", "m", "show_tab('market')", "APIs", "Show the market APIs", show=False),
    _command("datasets", "d", "show_tab('datasets')", "Datasets", "Show the datasets", show=False),
    _command(
        "search", "slash", "focus_search", "Search", "Search as you type: every word must appear"
    ),
    _command("filters", "f", "filters", "Filters", "Every filter of the tab in front"),
    _command(
        "clear",
        "c",
        "clear_all",
        "Clear",
        "Clear the search and every filter of the tab",
        show=False,
    ),
    _command("verified", "v", "toggle_verified", "Verified", "APIs: verified providers only"),
    _command("sort", "s", "next_sort", "Sort", "Datasets: newest, downloads, cheapest, dearest"),
    _command("fields", "t", "trial_fields", "Fields", "Datasets: the fields the trial checks"),
    _command("zoom", "z", "zoom", "Zoom", "The selected item's detail on the whole screen"),
    _command("refresh", "r", "refresh", "Refresh", "Fetch the catalogue from the service again"),
    _command(
        "back",
        "escape",
        "back",
        "Back",
        "Leave the zoomed detail or the search box; clear the search",
        show=False,
        palette=False,
    ),
    _command(
        "next_page", "right_square_bracket", "page(1)", "Next page", "Next matches", show=False
    ),
    _command(
        "previous_page",
        "left_square_bracket",
        "page(-1)",
        "Previous page",
        "Previous matches",
        show=False,
    ),
    _command("down", "j", "move(1)", "Next", "Select the next item", show=False, palette=False),
    _command(
        "up", "k", "move(-1)", "Previous", "Select the previous item", show=False, palette=False
    ),
    *(_sort(order) for order in SORT_LABELS),
)
