"""JSON Schema building blocks for the seeded endpoints' inputs, and the shapes of the seed data:
a `Template` is one kind of endpoint a provider of a domain type may offer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# --- JSON Schema building blocks -------------------------------------------------------------


def obj(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    # Unknown fields are refused so a typo ("max_result") fails the dry run instead of being
    # silently ignored by the provider.
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def string(description: str, **rules: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **rules}


def integer(description: str, low: int, high: int, default: int | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "integer",
        "description": description,
        "minimum": low,
        "maximum": high,
    }
    if default is not None:
        schema["default"] = default
    return schema


def number(description: str, low: float, high: float) -> dict[str, Any]:
    return {"type": "number", "description": description, "minimum": low, "maximum": high}


def enum(description: str, values: list[Any], default: Any = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"description": description, "enum": values}
    if default is not None:
        schema["default"] = default
    return schema


def array(description: str, items: dict[str, Any], low: int, high: int) -> dict[str, Any]:
    return {
        "type": "array",
        "description": description,
        "items": items,
        "minItems": low,
        "maxItems": high,
    }


URL = r"^https?://"
HTTPS = r"^https://"
DATE = r"^\d{4}-\d{2}-\d{2}$"
LANG = r"^[a-z]{2}$"
EMAIL = r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$"
ADDRESS = r"^(0x[0-9a-fA-F]{40}|[1-9A-HJ-NP-Za-km-z]{32,44})$"


def prompt(limit: int = 2000) -> dict[str, Any]:
    return string("what to generate, in plain language", minLength=1, maxLength=limit)


def latlon() -> dict[str, dict[str, Any]]:
    return {
        "lat": number("latitude in degrees", -90, 90),
        "lon": number("longitude in degrees", -180, 180),
    }


@dataclass(frozen=True)
class Template:
    """One kind of endpoint a provider of a domain type may offer."""

    kind: str
    name: str
    description: str
    product_class: str
    schema: dict[str, Any]
    outputs: str
    band: tuple[str, str]
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Domain:
    stems: tuple[str, ...]
    tags: tuple[str, ...]
    templates: tuple[Template, ...]


JSON = "JSON (application/json)"

__all__ = [
    "ADDRESS",
    "DATE",
    "EMAIL",
    "HTTPS",
    "JSON",
    "LANG",
    "URL",
    "Domain",
    "Template",
    "array",
    "enum",
    "integer",
    "latlon",
    "number",
    "obj",
    "prompt",
    "string",
]
