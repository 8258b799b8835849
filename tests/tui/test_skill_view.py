"""`InertMarkdown.show` keeps and rewrites the blocks of the document before: what it draws must be
what a new widget draws for the same text, document after document."""

from __future__ import annotations

from typing import Any

from rich.segment import Segment
from textual.app import App, ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets._markdown import MarkdownBlock, MarkdownH2, MarkdownParagraph
from tui_support import until

from svc_console.sandbox.catalog import catalog, skill_markdown
from svc_console.tui.catalogue.skill_view import InertMarkdown, inert_parser

# Documents of other shapes, shown between the service's: each changes what the one before had
# at some place (a list's length, its bullets, an item of two paragraphs, a nested list, an
# ordered list, a table, a code block, a heading's level), so a block reused where it must not
# be draws something else.
SHAPES = [
    "# One\n\n- a\n- b\n- c\n\nText.\n",
    "# One\n\n- a\n- b\n\nText.\n",
    "# One\n\n* a\n* b\n\nOther text.\n",
    "# One\n\n- a\n\n  second paragraph of a\n- b\n\nText.\n",
    "# One\n\n- a\n  - nested\n- b\n\nText.\n",
    "# One\n\n1. a\n2. b\n\n```\ncode\n```\n",
    "# One\n\n3. a\n4. b\n\n```python\nother = 1\n```\n",
    "## One\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> quoted\n",
    "## One\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n> quoted again\n",
    "---\n\nOnly a rule above.\n",
    "",
    "Just a paragraph, `code` and **bold**.\n",
]


def documents() -> list[str]:
    market = catalog()
    served = [skill_markdown(e, market.outputs[e.id]) for e in market.endpoints[:6]]
    mixed = []
    for n, text in enumerate(served):
        mixed.append(text)
        if n % 2:
            mixed.append(SHAPES[(n // 2) % len(SHAPES)])
    return mixed + SHAPES + served[:2]


def shape(text: str) -> list[str]:
    """The kinds of a document's blocks, in order (and of its list items' blocks)."""
    return [t.type for t in inert_parser().parse(text) if t.nesting != -1 and t.type != "inline"]


class SideBySide(App[None]):
    """The widget that shows one document after another, and one made new for each."""

    CSS = "VerticalScroll { width: 1fr; height: 1fr; }"

    def compose(self) -> ComposeResult:
        with Horizontal():
            with VerticalScroll(id="kept"):
                yield InertMarkdown()
            yield VerticalScroll(id="new")


def settled(app: App[Any]) -> bool:
    """Nothing left for the screen to lay out or paint (what Textual does when idle)."""
    screen = app.screen
    return not (
        screen._layout_required
        or screen._scroll_required
        or screen._repaint_required
        or screen._recompose_required
        or screen._dirty_widgets
    )


def drawn(app: App[Any], pane: str) -> list[list[tuple[str, Any]]]:
    """Each line of a pane as the screen draws it: every character with its style."""
    region = app.query_one(f"#{pane}").region
    lines = app.screen._compositor.render_strips()[region.y : region.bottom]
    return [
        [
            (char, segment.style)
            for segment in Segment.split_and_crop_lines(
                [*strip.crop(region.x, region.right)], region.width
            ).__next__()
            for char in segment.text
        ]
        for strip in lines
    ]


async def test_each_document_is_drawn_as_a_new_widget_draws_it():
    app = SideBySide()
    async with app.run_test(size=(120, 40)) as pilot:
        kept = app.query_one("#kept InertMarkdown", InertMarkdown)
        for number, text in enumerate(documents()):
            pane = app.query_one("#new", VerticalScroll)
            await pane.remove_children()
            fresh = InertMarkdown()
            await pane.mount(fresh)
            await kept.show(text)
            await fresh.show(text)
            await until(pilot, lambda: settled(app))
            assert kept.shown == fresh.shown
            assert drawn(app, "kept") == drawn(app, "new"), (number, text[:80])
            # The document's place in the text, as `source` reads it, follows too.
            assert [b.source for b in kept.query(MarkdownBlock)] == [
                b.source for b in fresh.query(MarkdownBlock)
            ], number


async def test_a_document_like_the_one_before_keeps_its_blocks():
    """Two endpoints' skill.md: the headings stay the same widgets, the paragraphs with other
    words are rewritten, not mounted again."""
    market = catalog()
    served = [skill_markdown(e, market.outputs[e.id]) for e in market.endpoints]
    first = served[0]
    second = next(t for t in served[1:] if t != first and shape(t) == shape(first))
    app = SideBySide()
    async with app.run_test(size=(160, 60)):
        markdown = app.query_one("#kept InertMarkdown", InertMarkdown)
        await markdown.show(first)
        before = list(markdown.query(MarkdownBlock))
        await markdown.show(second)
        after = list(markdown.query(MarkdownBlock))
        assert [type(b) for b in after] == [type(b) for b in before]
        headings = [b for b in after if isinstance(b, MarkdownH2)]
        assert headings and all(b in before for b in headings)
        paragraphs = [b for b in after if isinstance(b, MarkdownParagraph)]
        assert sum(b in before for b in paragraphs) == len(paragraphs)
        assert markdown.shown is not None and markdown.shown.startswith("# SANDBOX LISTING")
