"""The SKILLS.md editor: Textual's TextArea with a light highlighting of Markdown and of the YAML in
`policy` blocks, and the lines that have errors marked in the gutter (their number in the error
colour and a `●`).

Textual highlights through tree-sitter, which is not installed here; this editor fills the same
highlight map from a few regular expressions instead (headings, fences, YAML keys, comments,
strings, numbers), using only the style names every TextArea theme defines. It is rebuilt on each
edit, line by line, which costs far less than a keystroke's repaint for a policy-sized file.

The editor is the one place a policy file is shown as it is (it must be editable). A TextArea
reads no markup, but it would hand a file's control characters to the terminal: an escape sequence
in a policy file could recolour the screen, set the title or write the clipboard. So each line is
drawn with every control, bidi and invisible character as one visible character (ESC as `␛`), while
the text being edited keeps them as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.geometry import Offset
from textual.strip import Strip
from textual.widgets import TextArea

from svc_console.policy.errors import PolicyError

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*(\S*)")
_HEADING = re.compile(r"^ {0,3}#{1,6}(\s|$)")
_INLINE_CODE = re.compile(r"`[^`\n]+`")
_KEY = re.compile(r"^(\s*(?:-\s+)*)([^\s#:'\"{}\[\],][^#:{}\[\],]*?|\"[^\"]*\"|'[^']*'):(?=\s|$)")
_FLOW_KEY = re.compile(r"[{,]\s*([A-Za-z_][\w.-]*):\s")
_STRING = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^']|'')*'")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")
_BOOLEAN = re.compile(r"(?<![\w-])(?:true|false|null|yes|no)(?![\w-])", re.IGNORECASE)
_COMMENT = re.compile(r"(?:^|\s)(#.*)$")

Highlight = tuple[int, int | None, str]

# What `core.sanitize` makes inert, drawn here one character for one: C0 controls (not tab), DEL,
# C1, and the characters that reorder or hide text. The editor's columns must match the text.
_HIDDEN = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb\U000e0000-\U000e007f\ud800-\udfff]"
)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ␛ for ESC
    return "\u2421" if code == 0x7F else "\ufffd"


def visible(line: str) -> str:
    """A line as the editor draws it: every hidden or active character made visible."""
    return _HIDDEN.sub(_visible, line)


def highlights(lines: Iterable[str]) -> dict[int, list[Highlight]]:
    """Highlights by line index as TextArea draws them: (start byte, end byte or None, name)."""
    result: dict[int, list[Highlight]] = {}
    fence: str | None = None  # the fence of the open code block
    in_policy = False
    for index, line in enumerate(lines):
        marks: list[tuple[int, int | None, str]] = []
        opening = _FENCE.match(line)
        if fence is None and opening is not None:
            fence, in_policy = opening.group(1), opening.group(2) == "policy"
            marks.append((0, opening.end(1), "punctuation.special"))
            if opening.group(2):
                marks.append((opening.start(2), opening.end(2), "info_string"))
        elif fence is not None and opening is not None and line.strip().startswith(fence):
            fence, in_policy = None, False
            marks.append((0, None, "punctuation.special"))
        elif in_policy:
            marks += _yaml(line)
        elif fence is None:
            if _HEADING.match(line):
                marks.append((0, None, "heading"))
            else:
                marks += [(m.start(), m.end(), "inline_code") for m in _INLINE_CODE.finditer(line)]
        if marks:
            result[index] = _as_bytes(line, marks)
    return result


def _yaml(line: str) -> list[tuple[int, int | None, str]]:
    comment = _COMMENT.search(line)
    code_end = comment.start(1) if comment else len(line)
    code = line[:code_end]
    marks: list[tuple[int, int | None, str]] = []
    key = _KEY.match(code)
    value_start = 0
    if key is not None:
        marks.append((key.start(2), key.end(2), "yaml.field"))
        value_start = key.end()
    marks += [(m.start(1), m.end(1), "yaml.field") for m in _FLOW_KEY.finditer(code, value_start)]
    strings = list(_STRING.finditer(code, value_start))
    marks += [(m.start(), m.end(), "string") for m in strings]

    def outside_strings(start: int) -> bool:
        return not any(s.start() <= start < s.end() for s in strings)

    for pattern, name in ((_NUMBER, "number"), (_BOOLEAN, "boolean")):
        marks += [
            (m.start(), m.end(), name)
            for m in pattern.finditer(code, value_start)
            if outside_strings(m.start())
        ]
    if comment is not None:
        marks.append((comment.start(1), None, "comment"))
    return marks


def _as_bytes(line: str, marks: list[tuple[int, int | None, str]]) -> list[Highlight]:
    """Character offsets to the UTF-8 byte offsets TextArea expects."""
    if line.isascii():
        return marks

    def at(offset: int | None) -> int | None:
        return None if offset is None else len(line[:offset].encode("utf-8"))

    return [(at(start) or 0, at(end), name) for start, end, name in marks]


class PolicyEditor(TextArea):
    """A TextArea for SKILLS.md: line numbers, two-space indents (YAML), soft wrap, highlighting,
    and `show_errors` to mark the lines that have errors."""

    DEFAULT_CSS = """
    PolicyEditor { height: 1fr; border: none; padding: 0; }
    PolicyEditor:focus { border: none; }
    """

    def __init__(self, text: str = "", *, id: str | None = None) -> None:
        super().__init__(
            text,
            id=id,
            soft_wrap=True,
            tab_behavior="indent",
            show_line_numbers=True,
            highlight_cursor_line=True,
        )
        self.indent_width = 2
        self._error_lines: dict[int, str] = {}  # 0-based line → its first error

    async def _on_key(self, event: events.Key) -> None:
        # With tab indenting, TextArea moves the focus on escape itself; here escape is the
        # screen's own key (binding `policies.leave`), which knows where the focus should go.
        # Textual calls each class's handler, this one first; the rest are TextArea's.
        if event.key == "escape":
            event.prevent_default()

    # -- highlighting ---------------------------------------------------------------------------

    def _build_highlight_map(self) -> None:
        # Called by TextArea after every edit and on a new document: the map it draws from.
        self._line_cache.clear()
        self._highlights.clear()
        self._highlights.update(highlights(self.document.lines))

    # -- errors ---------------------------------------------------------------------------------

    def show_errors(self, errors: Iterable[PolicyError]) -> None:
        lines: dict[int, str] = {}
        for error in errors:
            lines.setdefault(error.where.line - 1, error.message)
        if lines != self._error_lines:
            self._error_lines = lines
            self.refresh()

    @property
    def error_lines(self) -> list[int]:
        """The 1-based lines marked as having errors."""
        return sorted(line + 1 for line in self._error_lines)

    def jump_to(self, line: int, column: int = 1) -> None:
        """Put the cursor at a 1-based line and column (clamped to the text) and show it."""
        row = max(0, min(line - 1, self.document.line_count - 1))
        col = max(0, min(column - 1, len(self.document.get_line(row))))
        self.move_cursor((row, col), center=True)

    def get_line(self, line_index: int) -> Text:
        # TextArea draws each line from here (its documented styling hook).
        line = super().get_line(line_index)
        line.plain = visible(line.plain)
        return line

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        if not self._error_lines or not self.show_line_numbers:
            return strip
        row = y + self.scroll_offset.y
        wrapped = self.wrapped_document
        if row >= wrapped.height:
            return strip
        line, _ = wrapped.offset_to_location(Offset(0, row))
        if line not in self._error_lines or wrapped.location_to_offset((line, 0)).y != row:
            return strip  # a line without errors, or the continuation of a wrapped one
        width = self.gutter_width
        colour = self.app.current_theme.error or "red"
        first = next(iter(strip), None)
        # Keep the gutter's own background (the cursor line's differs): only the colour changes.
        style = (first.style if first and first.style else Style()) + Style(color=colour, bold=True)
        number = f"{line + self.line_number_start:>{width - 2}}"
        gutter = Strip([Segment(number, style), Segment("● ", style)], width)
        return Strip.join([gutter, strip.crop(width, strip.cell_length)])
