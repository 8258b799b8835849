"""The one way untrusted text (from agents, providers, the network) reaches a screen or a terminal.

`inert` makes a string visibly harmless: terminal control sequences, C0/C1 controls, bidi
overrides and zero-width characters become visible `<U+XXXX>`-style tokens, so nothing can recolour
the screen, move the cursor, set the title, write the clipboard or hide text. Rich/Textual markup is
not escaped here: widgets that show untrusted text render it as `rich.text.Text` (never parsed as
markup).
Long values are cut with a marker that says how much was cut.
"""

import re
import unicodedata

# Characters that change how the surrounding text is laid out or read without being seen.
_INVISIBLE = {
    0x061C, 0x115F, 0x1160, 0x180E, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2028, 0x2029,
    0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0x2066,
    0x2067, 0x2068, 0x2069, 0x206A, 0x206B, 0x206C, 0x206D, 0x206E, 0x206F, 0x3164, 0xFEFF,
    0xFFA0, 0xFFF9, 0xFFFA, 0xFFFB,
}  # fmt: skip
_NAMED = {0x1B: "ESC", 0x07: "BEL", 0x08: "BS", 0x0D: "CR", 0x7F: "DEL", 0x9B: "CSI", 0x9D: "OSC"}
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"
    + "".join(re.escape(chr(c)) for c in sorted(_INVISIBLE))
    + "\U000e0000-\U000e007f\ud800-\udfff]"
)
_UNSAFE_LINE = re.compile(_UNSAFE.pattern[:-1] + "\n\t]")

DEFAULT_LIMIT = 2000


def _token(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code == 0x0A:
        return "⏎"
    if code == 0x09:
        return " "
    name = _NAMED.get(code)
    return f"<{name}>" if name else f"<U+{code:04X}>"


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


def inert(text: object, limit: int = DEFAULT_LIMIT) -> str:
    """Untrusted text as visible, harmless text; newlines and tabs kept."""
    value = unicodedata.normalize("NFC", str(text))
    return _cut(_UNSAFE.sub(_token, value), limit)


def inert_line(text: object, limit: int = 80) -> str:
    """Untrusted text for one table cell or title: newlines shown as ⏎, tabs as spaces."""
    value = unicodedata.normalize("NFC", str(text))
    return _cut(_UNSAFE_LINE.sub(_token, value), limit)


# A Rich/Textual markup tag that would carry an action or a link: `[@click=...]`, `[link=...]`.
_ACTIVE_MARKUP = re.compile(r"\[(?=\s*/?\s*(?:@|link\b))", re.IGNORECASE)


def inert_markdown(text: object, limit: int = 64_000) -> str:
    """Untrusted Markdown (an endpoint's skill.md) for a Markdown widget: `inert` first, then
    every `[` that opens an action or link tag (`[@click=app.quit]`, `[link=...]`) is
    backslash-escaped, which Markdown shows as a plain `[`. The widget must still be one that
    never follows links nor parses markup (`tui/widgets/skill_view.py`: its parser has links,
    images, autolinks, raw HTML and entities switched off); the escape keeps the text inert even
    if it ever reached a renderer that read markup."""
    return _ACTIVE_MARKUP.sub(r"\\[", inert(text, limit))
