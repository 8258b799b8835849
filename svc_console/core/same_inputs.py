"""Inputs as the service will see them, so two requests that ask the same thing compare the same:
what the repeated-call brake counts (`policy/brakes.py`) and what an idempotency key must come
with again (`broker/service.py`).

Against the endpoint's JSON Schema: each absent property with a `default` takes it; every string
loses its invisible characters (zero-width, bidi and other format characters: `core/sanitize.py`
lists them), is NFKC-normalised (full-width letters become plain ones) and trimmed; and a string
whose schema says `"x-case-insensitive": true` is case-folded. That keyword is how a schema says
the service ignores a field's case (a search query): JSON Schema has none of its own, and OpenAPI
lets a schema carry `x-` keywords, which validators ignore. A number with nothing after its point
is the whole number (`10.0` is `10`). The inputs sent are never changed: this form is only compared.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from svc_console.core.sanitize import INVISIBLE

CASE_INSENSITIVE = "x-case-insensitive"


def comparable(value: Any, schema: Any = None) -> Any:
    """`value` (inputs, or any part of them) in the form two requests are compared in, read
    against `schema` (its JSON Schema, or None when unknown: then no default and no case)."""
    kind = type(value)
    if kind is str:
        return _text(value, schema)
    if kind is dict:
        # On every request's path (the repeated-call brake): strings, the usual values, are
        # handled here rather than through a call each.
        properties = schema.get("properties") if type(schema) is dict else None
        if type(properties) is not dict:
            properties = _NONE
        seen = {}
        for key, item in value.items():
            spec = properties.get(key)
            if type(item) is str and item.isascii() and type(spec) is not dict:
                seen[key] = item.strip()
            else:
                seen[key] = comparable(item, spec)
        for key, spec in properties.items():
            if key not in seen and type(spec) is dict and "default" in spec:
                seen[key] = comparable(spec["default"], spec)
        return seen
    if kind is list:
        items = schema.get("items") if type(schema) is dict else None
        return [comparable(item, items) for item in value]
    if kind is float and value.is_integer():
        return int(value)
    return value


_NONE: dict[str, Any] = {}


def _text(text: str, schema: Any) -> str:
    if not text.isascii():  # ASCII holds no invisible character and is its own NFKC form
        text = unicodedata.normalize("NFKC", INVISIBLE.sub("", text))
    text = text.strip()
    if type(schema) is dict and schema.get(CASE_INSENSITIVE) is True:
        text = unicodedata.normalize("NFKC", text.casefold())
    return text
