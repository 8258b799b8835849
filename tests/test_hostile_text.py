"""Hostile strings (tests/hostile_strings.py) shown to the operator: through the sanitiser, then end
to end as an agent's and a provider's fields over the real socket and sandbox, on the approvals
screen and in `svc-console approvals list`. Each must show as visible, harmless text: no escape or
control character, no bidi control or invisible character, markup shown literally and never acted
on, long values cut with a marker. Lookalike provider names are flagged."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from hostile_strings import HOMOGLYPH_NAMES, HOSTILE
from rich.console import Console
from rich.text import Text
from textual.widgets import Static

from svc_console.core.sanitize import DEFAULT_LIMIT, inert, inert_line

# Characters that must never reach the screen as themselves: controls, format characters (bidi,
# zero-width, tags), surrogates, line and paragraph separators, and the code points Unicode says
# render as nothing (Default_Ignorable_Code_Point, DerivedCoreProperties.txt), plus the braille
# blank, which draws an empty cell.
FORBIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}
DEFAULT_IGNORABLE = [
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
]
BRAILLE_BLANK = 0x2800
MARKER = "more characters]"
IDS = [name for name, _ in HOSTILE]


def unsafe(text: str, allowed: str = "") -> list[str]:
    """The characters of `text` that must not be shown as themselves."""
    found = []
    for char in text:
        if char in allowed:
            continue
        code = ord(char)
        if (
            unicodedata.category(char) in FORBIDDEN_CATEGORIES
            or code == BRAILLE_BLANK
            or any(low <= code <= high for low, high in DEFAULT_IGNORABLE)
        ):
            found.append(f"U+{code:04X}")
    return found


def rendered(text: str) -> tuple[str, list[Any]]:
    """What Rich draws for `text` shown as a `Text` (the way widgets show untrusted text): the
    plain output and every segment's style."""
    console = Console(width=10_000, color_system=None, force_terminal=False, record=True)
    segments = list(console.render(Text(text), console.options.update(no_wrap=True)))
    console.print(Text(text), soft_wrap=True, end="")
    return console.export_text(), [segment.style for segment in segments]


def acts(style: Any) -> bool:
    """Whether a style would make text a link or a clickable action."""
    if style is None:
        return False
    return bool(style.link) or "@click" in (style.meta or {})


def test_the_corpus_holds_every_kind_of_trouble():
    assert len(HOSTILE) >= 60
    assert len(set(IDS)) == len(IDS)
    joined = "".join(text for _, text in HOSTILE)
    for needed in ("\x1b[", "\x1b]8;", "\x1b]52;", "\x1bP", "\r", "\x08", "[@click=", "[link="):
        assert needed in joined
    for needed in ("\u202e", "\u2066", "\u200b", "\ufeff", "\x00", "\x9b", "\ud800", "\t"):
        assert needed in joined
    assert any(len(text) > DEFAULT_LIMIT for _, text in HOSTILE)
    assert len(HOMOGLYPH_NAMES) >= 5


@pytest.mark.parametrize(("name", "text"), HOSTILE, ids=IDS)
def test_inert_leaves_only_visible_text(name: str, text: str):
    shown, line = inert(text), inert_line(text)
    assert unsafe(shown, allowed="\n\t") == []
    assert unsafe(line) == []
    assert "\n" not in line and "\t" not in line
    if "\x1b" in text:
        assert "<ESC>" in shown or MARKER in shown
    if "\u202e" in text:
        assert "<U+202E>" in shown


@pytest.mark.parametrize(("name", "text"), HOSTILE, ids=IDS)
def test_long_values_are_cut_with_a_marker(name: str, text: str):
    for cut, limit in ((inert(text), DEFAULT_LIMIT), (inert_line(text), 80), (inert(text, 10), 10)):
        if len(cut) > limit:
            head, _, tail = cut.rpartition("… [")
            assert len(head) == limit and tail.endswith(MARKER)


@pytest.mark.parametrize(("name", "text"), HOSTILE, ids=IDS)
def test_markup_is_shown_literally_and_never_links_or_acts(name: str, text: str):
    for shown in (inert(text, 400), inert_line(text, 400)):
        plain, styles = rendered(shown)
        # Rich draws the text as it is (tabs expanded): no tag consumed, no emoji code replaced.
        assert plain == shown.expandtabs(8)
        assert not any(acts(style) for style in styles)
        static = Static(shown, markup=False).render()
        assert static.plain == shown
        assert not any(acts(getattr(span, "style", None)) for span in static.spans)


def test_every_invisible_or_control_character_is_marked():
    """Not only the corpus: every code point of those categories this Python knows, so a newer
    Unicode cannot slip a format character past the sanitiser unnoticed."""
    everything = "".join(
        chr(code)
        for code in range(0x110000)
        if code not in (0x09, 0x0A)
        and (
            unicodedata.category(chr(code)) in FORBIDDEN_CATEGORIES
            or any(low <= code <= high for low, high in DEFAULT_IGNORABLE)
        )
    )
    assert len(everything) > 2000
    assert unsafe(inert_line(everything, limit=len(everything) * 10)) == []
    assert unsafe(inert(everything, limit=len(everything) * 10), allowed="\n\t") == []


def test_emoji_and_letters_of_every_script_stay_as_they_are():
    for text in ("naïve café", "\u0645\u0631\u062d\u0628\u0627", "日本語", "\U0001f600", "Ωmega"):
        assert inert(text) == text and inert_line(text) == text
