"""Every picture of the README and the guide is drawn by the console from its script
(`docs/tools/pictures.py`); a committed picture that is no longer what the script draws fails
here, by name, until `make docs` draws it again."""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "tools"))

import pictures  # noqa: E402

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("name", sorted(pictures.PICTURES))
def test_a_committed_picture_is_what_its_script_draws(name: str):
    committed = pictures.structure((pictures.IMAGES / f"{name}.svg").read_text())
    drawn = pictures.structure(pictures.draw(name))
    changed = "\n".join(
        line[:200] for line in difflib.unified_diff(committed.splitlines(), drawn.splitlines(), n=0)
    )
    assert committed == drawn, (
        f"docs/images/{name}.svg is not what the console draws now (run `make docs`):\n"
        + changed[:4000]
    )


def test_every_picture_shown_is_one_the_console_draws():
    shown = {
        (page.parent / target).resolve()
        for page in PAGES
        for target in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page.read_text())
    }
    drawn = {(pictures.IMAGES / f"{name}.svg").resolve() for name in pictures.PICTURES}
    assert shown, "no picture found in the pages"
    assert shown <= drawn, f"pictures not drawn by docs/tools/pictures.py: {shown - drawn}"
    assert {p.name for p in pictures.IMAGES.iterdir()} == {p.name for p in drawn}


def test_only_ages_and_times_left_are_left_out_of_the_comparison():
    """An age of `8s` is padded more than one of `32s` in its cell: the same picture. A changed
    amount or name is not."""
    drawn = "<t>&#160;32s&#160;</t><t>&#160;14m&#160;28s&#160;</t><t>&#160;0.05&#160;</t>"
    later = "<t>&#160;8s&#160;&#160;</t><t>&#160;14m&#160;52s&#160;</t><t>&#160;0.05&#160;</t>"
    dearer = "<t>&#160;32s&#160;</t><t>&#160;14m&#160;28s&#160;</t><t>&#160;0.06&#160;</t>"
    assert pictures.structure(drawn) == pictures.structure(later)
    assert pictures.structure(drawn) != pictures.structure(dearer)
