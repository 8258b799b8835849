"""The guide's SKILLS.md reference is written from the policy vocabulary and the policy schema
(`docs/tools/skills_reference.py`); the committed page is what that writes today, and it names
every key the schema has. (The command-line reference has its own test, beside the CLI's.)"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "tools"))

import skills_reference  # noqa: E402

from svc_console.policy.schema import policy_schema  # noqa: E402


def test_the_committed_skills_reference_is_what_the_schema_says_today():
    assert skills_reference.PAGE.read_text() == skills_reference.render(), (
        "docs/skills-reference.md is out of date: run `make docs`"
    )


def test_every_top_level_key_of_the_schema_has_a_row():
    page = skills_reference.PAGE.read_text()
    for key in policy_schema()["properties"]:
        assert f"| `{key}` |" in page, f"{key} has no row in docs/skills-reference.md"
