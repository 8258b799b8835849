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

# Characters that change how the surrounding text is laid out or read without being seen: every
# format character (Unicode category Cf: bidi controls, zero-width characters, tags...), the line
# and paragraph separators, surrogates, and every Default_Ignorable_Code_Point (soft hyphen,
# variation selectors, Hangul fillers...), plus the braille blank, which draws an empty cell.
# Variation selectors go too, emoji's U+FE0F included: a terminal may draw the emoji wider than
# the layout counted. tests/e2e/test_hostile_text.py checks the ranges against unicodedata.
_INVISIBLE = [
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD),
    (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x206F), (0x2800, 0x2800),
    (0x3164, 0x3164), (0xD800, 0xDFFF), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
]  # fmt: skip
_NAMED = {0x1B: "ESC", 0x07: "BEL", 0x08: "BS", 0x0D: "CR", 0x7F: "DEL", 0x9B: "CSI", 0x9D: "OSC"}
_RANGES = "".join(f"{re.escape(chr(low))}-{re.escape(chr(high))}" for low, high in _INVISIBLE)
# The invisible characters alone: text that differs only by them reads the same.
INVISIBLE = re.compile(f"[{_RANGES}]")
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + _RANGES + "]")
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
    never follows links nor parses markup (`tui/catalogue/skill_view.py`: its parser has links,
    images, autolinks, raw HTML and entities switched off); the escape keeps the text inert even
    if it ever reached a renderer that read markup."""
    return _ACTIVE_MARKUP.sub(r"\\[", inert(text, limit))
