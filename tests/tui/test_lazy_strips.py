"""Strips make their caches when they first use them (`svc_console.tui.textual_fixes`): each
is the cache Textual makes, kept once made, and every operation of a strip gives what it gives
on a strip Textual made itself."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual.cache import FIFOCache
from textual.color import Color
from textual.filter import DimFilter
from textual.strip import Strip

from svc_console.tui.textual_fixes import lazy_strip_slots, textual_strip_init

LINK = Style.from_meta({"@click": "app.bell"}) + Style(link="https://example.test")
LINES = [
    [],
    [Segment("plain text")],
    [Segment("bold", Style(bold=True)), Segment(" and "), Segment("red", Style(color="red"))],
    [Segment("宽字符 emoji 🙂", Style(italic=True)), Segment("  ")],
    [Segment("a link", LINK), Segment(" meta", Style.from_meta({"row": 3, "column": 1}))],
]


def made_by_textual(segments: list[Segment], cell_length: int | None = None) -> Strip:
    strip = Strip.__new__(Strip)
    textual_strip_init(strip, segments, cell_length)
    return strip


def cache_slots() -> list[str]:
    reference = made_by_textual([Segment("x")])
    return [name for name in Strip.__slots__ if type(getattr(reference, name)) is FIFOCache]


def test_a_new_strip_holds_no_cache_until_it_uses_one():
    assert len(cache_slots()) >= 5  # Textual's strips make several; none is made here
    strip = Strip([Segment("abcdef")])
    for name in cache_slots():
        with pytest.raises(AttributeError):
            object.__getattribute__(strip, name)
    cropped = strip.crop(1, 4)
    assert type(object.__getattribute__(strip, "_crop_cache")) is FIFOCache
    assert strip.crop(1, 4) is cropped  # the cache, once made, is kept and read
    with pytest.raises(AttributeError):
        object.__getattribute__(strip, "_style_cache")  # still unused, still not made


def test_every_slot_starts_as_textual_starts_it():
    for segments in LINES:
        mine, theirs = Strip(segments, 7), made_by_textual(segments, 7)
        for name in Strip.__slots__:
            ours, textuals = getattr(mine, name), getattr(theirs, name)
            if type(textuals) is FIFOCache:
                assert type(ours) is FIFOCache, name
                assert (ours._maxsize, len(ours)) == (textuals._maxsize, 0), name
            else:
                assert ours == textuals, name


def operations(strip: Strip, console: Console) -> list[dict[str, Any]]:
    """What each operation of a strip gives, as plain values, asked twice: the second answers
    come from the caches the first made, and both are compared."""
    style = Style(bgcolor="blue")
    results: list[dict[str, Any]] = []
    for _ in range(2):
        results.append(
            {
                "text": strip.text,
                "cell_length": strip.cell_length,
                "cell_count": strip.cell_count,
                "link_ids": strip.link_ids,
                "crop": list(strip.crop(1, 6)),
                "divide": [list(part) for part in strip.divide([2, 5, 9])],
                "apply_style": list(strip.apply_style(style)),
                "adjust_longer": list(strip.adjust_cell_length(20, style)),
                "adjust_shorter": list(strip.adjust_cell_length(3, style)),
                "extend": list(strip.extend_cell_length(20, style)),
                "crop_extend": list(strip.crop_extend(2, 18, style)),
                "crop_pad": list(strip.crop_pad(10, 2, 3, style)),
                "offsets": list(strip.apply_offsets(4, 2)),
                "filter": list(strip.apply_filter(DimFilter(), Color(10, 20, 30))),
                "simplify": list(strip.simplify()),
                "discard_meta": list(strip.discard_meta()),
                "text_align": list(strip.text_align(18, "center")),
                "render": strip.render(console),
                "join": list(Strip.join([strip, strip.crop(0, 2)])),
            }
        )
    return results


def test_every_operation_gives_what_it_gives_on_a_strip_textual_made():
    console = Console(width=80, color_system="truecolor", force_terminal=True)
    for segments in LINES:
        first, again = operations(Strip(segments), console)
        assert first == again, segments
        assert [first, again] == operations(made_by_textual(segments), console), segments


def test_a_strip_this_fix_does_not_know_is_left_as_textual_makes_it():
    def with_a_set(strip: Strip, segments: Any, cell_length: int | None = None) -> None:
        textual_strip_init(strip, segments, cell_length)
        strip._link_ids = set()  # a default that a lazy slot could not share between strips

    def reworded(strip: Strip, segments: Any, cell_length: int | None = None) -> None:
        textual_strip_init(strip, [Segment(s.text.upper(), s.style) for s in segments], None)

    assert lazy_strip_slots(textual_strip_init) is not None
    assert lazy_strip_slots(with_a_set) is None
    assert lazy_strip_slots(reworded) is None
