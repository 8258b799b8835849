"""The policy authors' page: the policy vocabulary (`policies/README.md`, whose test keeps it
whole) followed by a table of every key, written from the policy schema that the console
validates against (`svc_console.policy.schema`), so the table never names a key the console
refuses or misses one it takes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "skills-reference.md"
VOCABULARY = ROOT / "policies" / "README.md"

HEAD = """\
# Policy authors: the SKILLS.md reference

<!-- Written by `make docs` (docs/tools/skills_reference.py) from policies/README.md and the
policy schema; edit those, not this page. -->
"""


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]] | {
            k: v for k, v in node.items() if k != "$ref"
        }
    return node


def _type(schema: dict[str, Any], node: dict[str, Any]) -> str:
    node = _resolve(schema, node)
    if "anyOf" in node:
        kinds = [_type(schema, each) for each in node["anyOf"]]
        kinds = [k for k in kinds if k != "null" and not (k == "integer" and "number" in kinds)]
        return " or ".join(dict.fromkeys(kinds))
    if "enum" in node:
        return ", ".join(f"`{value}`" for value in node["enum"])
    if "const" in node:
        return f"`{node['const']}`"
    if node.get("type") == "array":
        return f"list of {_type(schema, node.get('items', {}))}"
    if "properties" in node:
        return "mapping"
    if "pattern" in node:
        return "text"
    return str(node.get("type", "any"))


def _object(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any] | None:
    """The object a key holds, directly or as a list's items, or None for a plain value."""
    node = _resolve(schema, node)
    for each in node.get("anyOf", []):
        found = _object(schema, each)
        if found:
            return found
    if node.get("type") == "array":
        return _object(schema, node.get("items", {}))
    return node if "properties" in node else None


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def rows(schema: dict[str, Any], node: dict[str, Any], prefix: str, seen: tuple[str, ...]):
    for key, value in node.get("properties", {}).items():
        name = f"{prefix}{key}"
        resolved = _resolve(schema, value)
        meaning = value.get("description") or resolved.get("description", "")
        default = value.get("default", resolved.get("default"))
        shown = "" if default in (None, [], {}) else f"`{json.dumps(default)}`"
        yield f"| `{name}` | {_cell(_type(schema, value))} | {_cell(meaning)} | {shown} |"
        inner = _object(schema, value)
        ref = json.dumps(inner, sort_keys=True) if inner else ""
        if inner and ref not in seen:
            is_list = _resolve(schema, value).get("type") == "array" or any(
                _resolve(schema, each).get("type") == "array" for each in resolved.get("anyOf", [])
            )
            yield from rows(schema, inner, f"{name}{'[]' if is_list else ''}.", (*seen, ref))


def vocabulary() -> str:
    """policies/README.md as a page of the guide: its title is the page's, and its links to the
    example files (beside it, outside the guide) become their paths."""
    text = VOCABULARY.read_text()
    text = text.split("\n", 1)[1]  # "# Policies": the page has its own title
    return re.sub(r"\[`([^`]+)`\]\(([^)]+)\)", r"`policies/\2`", text)


def render() -> str:
    from svc_console.policy.schema import policy_schema

    schema = policy_schema()
    table = [
        "## Every key, from the schema",
        "",
        "Written from the JSON Schema the console validates policy blocks against (`svc-console "
        "policy schema` prints it, for editors). `a[].b` is the key `b` of each item of the list "
        "`a`.",
        "",
        "| key | takes | meaning | default |",
        "|---|---|---|---|",
        *rows(schema, schema, "", ()),
    ]
    return HEAD + vocabulary().rstrip() + "\n\n" + "\n".join(table) + "\n"
