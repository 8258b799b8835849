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

from markdown_it import MarkdownIt
from textual.widgets import Markdown

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
    """A Markdown widget for text from the network; `show` is the only way to fill it."""

    DEFAULT_CSS = """
    InertMarkdown { padding: 0; margin: 0; }
    InertMarkdown MarkdownH1 { margin: 1 0 0 0; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(
            None, id=id, classes=classes, parser_factory=inert_parser, open_links=False
        )

    def show(self, untrusted: str) -> None:
        """Render untrusted Markdown, made inert first."""
        self.update(inert_markdown(untrusted))

    def on_markdown_link_clicked(self, event: Markdown.LinkClicked) -> None:
        # No link should exist (the parser makes none); if one ever did, it goes nowhere.
        event.stop()
        event.prevent_default()
