"""The JSON Schema of a policy block, for editors (`svc-console policy schema`): completion and
inline errors in YAML editors that take a schema (for example through a `# yaml-language-server:
$schema=...` comment, or the editor's schema settings for `policy` blocks).

Generated from the pydantic models of `rules.py`, so it can never drift from what the console
accepts; each field describes the input an author writes (`"15m"`, `"0.05"`), not the value
after parsing.
"""

from __future__ import annotations

from typing import Any

from svc_console.policy.rules import Rules

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def policy_schema() -> dict[str, Any]:
    schema = Rules.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": DIALECT,
        "title": "svc-console policy block (SKILLS.md)",
        "description": "The YAML inside a fenced code block tagged `policy`. Blocks combine: "
        "mappings merge, lists add up, a single value given twice is an error. Unknown keys "
        "are errors. See policies/README.md.",
        **{key: value for key, value in schema.items() if key not in ("title", "description")},
    }
