"""`TextCells` draws a one-line `Text` cell in one pass: it must draw exactly what Textual's
DataTable draws for the same cell, character by character and style by style, whatever the
text's width, alignment, overflow and styles, under the cursor or not."""

from __future__ import annotations

import itertools
from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.coordinate import Coordinate
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import DataTable
from tui_support import until

from svc_console.tui.widgets.text_cells import TextCells

WORDS = [
    "",
    "a",
    "hello world",
    "x" * 30,
    "漢字のテキスト",  # two cells a character: a width can split one
    "ok 👍 done",
    "trailing   ",
    "   leading",
    "research-bot · 0.125 USDC",
]
STYLES = ["plain", "base", "spans", "base and spans"]
JUSTIFY = [None, "left", "center", "right", "full"]
OVERFLOW = [None, "fold", "crop", "ellipsis"]
WIDTHS = [3, 7, 12, 40]  # the column's width with its padding (one space each side)


def cell(words: str, styled: str, justify: str | None, overflow: str | None) -> Text:
    text = Text(words, justify=justify, overflow=overflow)  # type: ignore[arg-type]
    if styled in ("base", "base and spans"):
        text.style = "green on #202020"
    if styled in ("spans", "base and spans") and len(words) > 2:
        text.stylize("bold red", 1, len(words) // 2 + 1)
        text.stylize(Style(underline=True), len(words) // 3)
    return text


CELLS = [cell(*combination) for combination in itertools.product(WORDS, STYLES, JUSTIFY, OVERFLOW)]


class Textuals(DataTable[Text]):
    pass


class Ours(TextCells):
    pass


class BothTables(App[None]):
    def compose(self) -> ComposeResult:
        yield Textuals(zebra_stripes=True, cursor_type="row")
        yield Ours(zebra_stripes=True, cursor_type="row")

    def on_mount(self) -> None:
        for table in (self.query_one(Textuals), self.query_one(Ours)):
            table.add_column("cell", key="cell")
            for n, text in enumerate(CELLS):
                table.add_row(text, key=str(n))


def painted(lines: list[list[Segment]]) -> list[list[tuple[str, Style | None]]]:
    """Each line as its characters with their styles: where segments split is not drawn."""
    return [[(char, segment.style) for segment in line for char in segment.text] for line in lines]


CASES = [
    (row, width, cursor_and_hover)
    for width in WIDTHS
    for row in range(len(CELLS))
    for cursor_and_hover in [(False, False), (True, False), (False, True)]
]
BASE = Style(color="white", bgcolor="#0a0a30")


async def drawn_by(pilot: Pilot[None], table: DataTable[Text], focused: bool) -> list[Any]:
    """Every case drawn by `table`, focused or not (the cursor's colours follow the focus)."""
    pilot.app.set_focus(table if focused else None)
    await until(pilot, lambda: table.has_focus == focused)  # told by a message, once handled
    drawn = []
    for row, width, (cursor, hover) in CASES:
        if row == 0:
            table._clear_caches()  # a cell is cached by its row and column: one width a column
        drawn.append(painted(table._render_cell(row, 0, BASE, width, cursor, hover)))
    return drawn


async def test_every_cell_is_drawn_as_textuals_datatable_draws_it():
    app = BothTables()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        textuals, ours = app.query_one(Textuals), app.query_one(Ours)
        for focused in (True, False):
            expected = await drawn_by(pilot, textuals, focused)
            drawn = await drawn_by(pilot, ours, focused)
            assert len(drawn) == len(expected) == len(CELLS) * len(WIDTHS) * 3
            for case, mine, theirs in zip(CASES, drawn, expected, strict=True):
                row, width, cursor_and_hover = case
                assert mine == theirs, (CELLS[row], width, cursor_and_hover, focused)
                assert [sum(cell_len(char) for char, _ in line) for line in mine] == [width]


async def test_a_cell_textual_draws_its_own_way_is_left_to_it():
    """A cell that wraps, or holds a tab, goes through DataTable's own drawing."""
    app = BothTables()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        textuals, ours = app.query_one(Textuals), app.query_one(Ours)
        for table in (textuals, ours):
            table.add_row(Text("one\ttab"), key="tab")
            table.add_row(Text("wraps", no_wrap=False), key="wraps")
        await pilot.pause()
        app.set_focus(None)
        await pilot.pause()
        for row in (len(CELLS), len(CELLS) + 1):
            expected = textuals._render_cell(row, 0, BASE, 12)
            assert painted(ours._render_cell(row, 0, BASE, 12)) == painted(expected)


class Widths(App[None]):
    """Each word in a column of its own; a second row in some holds a tab or a second line,
    which Textual measures its own way."""

    def compose(self) -> ComposeResult:
        yield Textuals()
        yield Ours()

    def on_mount(self) -> None:
        for table in (self.query_one(Textuals), self.query_one(Ours)):
            for n in range(len(WORDS)):
                table.add_column(f"c{n}", key=f"c{n}")
            table.add_row(*(cell(words, "spans", None, None) for words in WORDS), key="words")
            table.add_row(Text("a\tlong tab"), Text("two\nlines here"), key="others")


async def measured(pilot: Pilot[None]) -> tuple[list[int], list[int]]:
    """Each column's width as Textual's table measured it, and as ours did; the tables' sizes
    agree. Measured on the tables' idle, after the rows are added."""
    app = pilot.app
    await until(pilot, lambda: not any(t._require_update_dimensions for t in app.query(DataTable)))
    textuals, ours = app.query_one(Textuals), app.query_one(Ours)
    assert ours.virtual_size == textuals.virtual_size
    return (
        [column.content_width for column in textuals.ordered_columns],
        [column.content_width for column in ours.ordered_columns],
    )


async def test_every_column_is_measured_as_textuals_datatable_measures_it():
    app = Widths()
    async with app.run_test(size=(200, 20)) as pilot:
        theirs, mine = await measured(pilot)
        assert mine == theirs
        assert theirs[2:] == [cell_len(words) for words in WORDS[2:]]
        assert theirs[:2] != [cell_len(words) for words in WORDS[:2]]  # the tab, the lines
    # Every row of one line: measured without Textual's help, and the table still sized.
    app = BothTables()
    async with app.run_test(size=(100, 30)) as pilot:
        theirs, mine = await measured(pilot)
        assert mine == theirs == [30]


class Lines(App[None]):
    """Two tables of the same rows, several columns each, narrower than the screen (their rows
    are carried out to the edge), taller than it (scrolled)."""

    def compose(self) -> ComposeResult:
        yield Textuals(zebra_stripes=True)
        yield Ours(zebra_stripes=True)

    def on_mount(self) -> None:
        for table in self.query(DataTable):
            for n in range(3):
                table.add_column(f"c{n}", key=f"c{n}")
            for row in range(40):
                table.add_row(*(CELLS[(row * 7 + n * 13) % len(CELLS)] for n in range(3)))


def setups() -> list[dict[str, Any]]:
    """Every way a line's drawing can differ: the cursor's kind and place, the hover, the
    focus, the stripes, a fixed column or a labelled row (which keep DataTable's own lines)."""
    cases: list[dict[str, Any]] = []
    for kind in ("row", "cell", "column", "none"):
        for cursor, hover in [((0, 0), None), ((3, 1), (5, 2))]:
            for focused in (True, False):
                cases.append(dict(kind=kind, cursor=cursor, hover=hover, focused=focused))
        # Hovering the cursor's own row, or its own column.
        cases.append(dict(kind=kind, cursor=(7, 2), hover=(7, 0), focused=True))
        cases.append(dict(kind=kind, cursor=(2, 1), hover=(6, 1), focused=True))
    cases.append(dict(kind="row", cursor=(2, 0), hover=None, focused=True, zebra=False))
    cases.append(dict(kind="row", cursor=(4, 1), hover=(1, 1), focused=True, scroll=6))
    cases.append(dict(kind="cell", cursor=(1, 1), hover=None, focused=True, fixed=1))
    cases.append(dict(kind="row", cursor=(1, 0), hover=None, focused=True, labelled=True))
    return cases


async def drawn_lines(pilot: Pilot[None], table: DataTable[Text], case: dict[str, Any]) -> Any:
    table.cursor_type = case["kind"]
    table.zebra_stripes = case.get("zebra", True)
    table.fixed_columns = case.get("fixed", 0)
    if case.get("labelled") and "label" not in table.rows:
        table.add_row(*CELLS[:3], key="label", label=Text("a label"))
        await until(pilot, lambda: not table._require_update_dimensions)  # measured on idle
    table.move_cursor(row=case["cursor"][0], column=case["cursor"][1], animate=False)
    table.scroll_to(y=case.get("scroll", 0), animate=False)
    pilot.app.set_focus(table if case["focused"] else None)
    # The scroll and the focus are applied after a refresh: wait for them, not for a moment.
    await until(
        pilot,
        lambda: table.has_focus == case["focused"] and table.scroll_y == case.get("scroll", 0),
    )
    if case["hover"] is not None:
        table._show_hover_cursor = True
        table.hover_coordinate = Coordinate(*case["hover"])
    table._clear_caches()
    return painted(table.render_lines(Region(0, 0, *table.size)))


async def test_every_line_is_drawn_as_textuals_datatable_draws_it():
    """Whole lines, as a frame asks for them: the cells, the stripes, the cursor and the hover,
    the row carried out to the table's edge, each with the meta a click reads."""
    app = Lines()
    async with app.run_test(size=(130, 24)) as pilot:
        await pilot.pause()
        textuals, ours = app.query_one(Textuals), app.query_one(Ours)
        for case in setups():
            expected = await drawn_lines(pilot, textuals, case)
            drawn = await drawn_lines(pilot, ours, case)
            assert textuals.size == ours.size and len(expected) == ours.size.height
            assert drawn == expected, case


class Links(App[None]):
    def compose(self) -> ComposeResult:
        yield Textuals()
        yield Ours()

    def on_mount(self) -> None:
        for table in self.query(DataTable):
            table.add_column("cell", key="cell")
            for n in range(2):
                table.add_row(Text("see the page", style="link https://example.com"), key=str(n))


def link_ids(lines: list[list[Segment]]) -> set[str]:
    return {s.style.link_id for line in lines for s in line if s.style is not None and s.style.link}


async def test_each_drawing_of_a_link_has_an_id_of_its_own():
    """Hovering a link lights up the drawings with its id: a cell's kept styles never give a
    link's id to another cell, or to the same cell drawn again."""
    app = Links()
    async with app.run_test(size=(60, 10)) as pilot:
        await pilot.pause()
        textuals, ours = app.query_one(Textuals), app.query_one(Ours)
        ids = []
        for row in (0, 1, 0):
            ours._clear_caches()
            drawn = ours._render_cell(row, 0, BASE, 20)
            assert painted(drawn) == painted(textuals._render_cell(row, 0, BASE, 20))
            ids.append(link_ids(drawn))
        assert all(len(found) == 1 for found in ids)
        assert len(set.union(*ids)) == 3
