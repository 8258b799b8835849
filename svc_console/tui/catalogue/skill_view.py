"""Untrusted Markdown (an endpoint's skill.md) rendered as Markdown, with nothing in it able to act.

The choice, and why:

- The text first goes through `core.sanitize.inert_markdown`: control characters, OSC/ANSI
  escapes, bidi overrides and zero-width characters become visible tokens (`<ESC>`), and a `[`
  opening an action or link tag (`[@click=...]`, `[link=...]`) is escaped so it reads as text.
- The parser is markdown-it's "gfm-like" (what Textual uses) with every rule that makes something
  clickable or decodes hidden characters switched off: links, images, autolinks, linkify,
  reference definitions, raw HTML (block and inline) and character entities (`&#27;` would
  otherwise decode to a raw ESC after sanitising). Such constructs stay visible as the text they
  are: `[docs](https://…)` shows its address instead of hiding it behind a label.
- With no link tokens, Textual's Markdown creates no `@click` action at all; `open_links=False`
  and a handler that stops `LinkClicked` guard the day a parser change lets one through.
- Textual builds Markdown text as `Content` spans, never parsing it as markup, so `[b]`, `[/]` or
  `[@click=app.quit]` in the document are shown literally.

Tables, lists, headings, emphasis and code blocks still render: the operator reads skill.md as
the provider wrote it, minus anything that could act.
"""

from __future__ import annotations

import asyncio

from markdown_it import MarkdownIt
from textual.await_complete import AwaitComplete
from textual.widgets import Markdown
from textual.widgets._markdown import (
    MarkdownBlock,
    MarkdownBullet,
    MarkdownBulletList,
    MarkdownFence,
    MarkdownListItem,
    MarkdownParagraph,
)

from svc_console.core.sanitize import inert_markdown

# Rules of markdown-it that make something clickable, or turn text into characters not typed.
DISABLED_RULES = (
    "link",
    "image",
    "autolink",
    "linkify",
    "reference",
    "html_block",
    "html_inline",
    "entity",
)


def inert_parser() -> MarkdownIt:
    """The parser of untrusted Markdown: Textual's default minus `DISABLED_RULES`."""
    parser = MarkdownIt("gfm-like", {"html": False, "linkify": False})
    parser.disable(list(DISABLED_RULES), ignoreInvalid=True)
    return parser


class InertMarkdown(Markdown):
    """A Markdown widget for text from the network; `show` is the only way to fill it.

    Moving through the catalogue shows one skill.md after another, and the service writes them
    all from one template: about half their blocks are the same text at the same place (the
    headings, the call flow), and most others are paragraphs with other words. Textual's
    `update` mounts a new widget for every block of every document (a hundred or more, each
    styled and laid out afresh: most of a move's time). `show` keeps a block whose text is
    unchanged, gives a paragraph, a code block or a list's one-paragraph items at the same
    place their new words, and mounts only the rest. What is drawn is what a new widget would
    draw (a test compares them)."""

    DEFAULT_CSS = """
    InertMarkdown { padding: 0; margin: 0; }
    InertMarkdown MarkdownH1 { margin: 1 0 0 0; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(
            None, id=id, classes=classes, parser_factory=inert_parser, open_links=False
        )
        self._lines: list[str] = []  # of the document whose blocks are mounted
        self.shown: str | None = None  # that document (sanitised), once all of it is mounted

    def show(self, untrusted: str) -> AwaitComplete:
        """Render untrusted Markdown, made inert first (awaitable: until it is mounted)."""
        return AwaitComplete(self._show(inert_markdown(untrusted)))

    async def _show(self, markdown: str) -> None:
        async with self.lock:  # one document at a time, the last asked shown last
            self._markdown, self._table_of_contents = markdown, None
            self._theme = self.app.theme
            # Parsed off the loop, as Textual's `update` does: the text is the network's.
            tokens = await asyncio.get_running_loop().run_in_executor(
                None, inert_parser().parse, markdown
            )
            lines = markdown.splitlines(keepends=True)
            blocks = list(self._parse_markdown(tokens))
            mounted = list(self.query_children(MarkdownBlock))
            with self.app.batch_update():
                for index, block in enumerate(blocks):
                    if index == len(mounted):
                        await self.mount_all(blocks[index:])
                        break
                    current = mounted[index]
                    if not await self._reuse(current, block, lines):
                        await self.mount(block, before=current)
                        await current.remove()
                await self.remove_children(mounted[len(blocks) :])
            self._lines = lines
            self._last_parsed_line = len(lines)
            self.shown = markdown
        self.post_message(Markdown.TableOfContentsUpdated(self, self.table_of_contents))

    async def _reuse(self, current: MarkdownBlock, block: MarkdownBlock, lines: list[str]) -> bool:
        """Whether `current` now shows what `block` would: kept as it is when its text is the
        same, or given the new words when it is a paragraph or a code block as `block` is, or a
        bullet list of as many one-paragraph items."""
        if type(current) is not type(block):
            return False
        if _text(self._lines, current.source_range) == _text(lines, block.source_range):
            # Nested blocks keep their place in the document too (`source` reads it).
            shift = block.source_range[0] - current.source_range[0]
            for inner in current.query(MarkdownBlock):
                start, end = inner.source_range
                inner.source_range = (start + shift, end + shift)
        elif isinstance(current, MarkdownParagraph | MarkdownFence):
            await current._update_from_block(block)  # Textual's own in-place update of these
        elif isinstance(current, MarkdownBulletList) and (pairs := _items(current, block)):
            for paragraph, new in pairs:
                await paragraph._update_from_block(new)
                paragraph.source_range = new.source_range
        else:
            return False
        current.source_range = block.source_range
        return True

    def on_markdown_link_clicked(self, event: Markdown.LinkClicked) -> None:
        # No link should exist (the parser makes none); if one ever did, it goes nowhere.
        event.stop()
        event.prevent_default()


def _items(
    current: MarkdownBulletList, block: MarkdownBlock
) -> list[tuple[MarkdownParagraph, MarkdownParagraph]] | None:
    """Each mounted item's paragraph with its new one, when both lists are items of one
    paragraph each, as many, with the same bullets (a list of fields, say); else None."""
    new = [
        (item.bullet, item._blocks[0])
        for item in block._blocks
        if isinstance(item, MarkdownListItem)
        and len(item._blocks) == 1
        and type(item._blocks[0]) is MarkdownParagraph
    ]
    mounted = [
        ([b.symbol for b in row.query(MarkdownBullet)], list(row.query(MarkdownBlock)))
        for row in current.children
    ]
    if len(new) != len(block._blocks) or len(new) != len(mounted):
        return None
    pairs = []
    for (bullet, paragraph), (symbols, shown) in zip(new, mounted, strict=True):
        if symbols != [bullet] or len(shown) != 1 or type(shown[0]) is not MarkdownParagraph:
            return None
        pairs.append((shown[0], paragraph))
    return pairs


def _text(lines: list[str], where: tuple[int, int]) -> str:
    return "".join(lines[where[0] : where[1]])
