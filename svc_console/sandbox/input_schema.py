"""How call inputs break an endpoint's JSON Schema, said per field in words a caller can act on.

Shared by the wallet proxy (`sandbox.wallet_proxy`) and the direct market calls
(`sandbox.market_routes`), so both refuse the same inputs with the same `INVALID_INPUTS` fields.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError as SchemaError

from svc_console.core.models import EndpointRecord
from svc_console.sandbox.web import Refusal

_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "object": "an object",
    "array": "a list",
    "null": "null",
}


def _field(path: list[Any]) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            name = str(part)[:80]
            text += f".{name}" if text else name
    return text or "(inputs)"


def _describe(error: SchemaError) -> list[tuple[str, str]]:
    path, rule, value = list(error.absolute_path), error.validator, error.validator_value
    instance = error.instance
    if rule == "required":
        if not isinstance(instance, dict):
            return []
        return [(_field([*path, name]), "is required") for name in value if name not in instance]
    if rule == "additionalProperties":
        known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        return [
            (_field([*path, key]), "is not a known field") for key in instance if key not in known
        ]
    if rule == "type":
        kinds = value if isinstance(value, list) else [value]
        problem = "must be " + " or ".join(_TYPE_NAMES.get(k, str(k)) for k in kinds)
    elif rule == "minLength":
        problem = "must not be empty" if value == 1 else f"must be at least {value} characters"
    elif rule == "maxLength":
        problem = f"must be at most {value} characters"
    elif rule == "minimum":
        problem = f"must be at least {value}"
    elif rule == "maximum":
        problem = f"must be at most {value}"
    elif rule == "pattern":
        problem = f"must match {value}"
    elif rule == "enum":
        problem = "must be one of " + ", ".join(json.dumps(v) for v in value)
    elif rule == "minItems":
        problem = f"must have at least {value} item(s)"
    elif rule == "maxItems":
        problem = f"must have at most {value} items"
    else:
        problem = f"breaks the {rule} rule"
    return [(_field(path), problem)]


def input_problems(validator: Draft202012Validator, inputs: dict[str, Any]) -> list[dict[str, str]]:
    """Every way the inputs break the endpoint's schema, one entry per field and problem."""
    found: dict[tuple[str, str], None] = {}
    for error in validator.iter_errors(inputs):
        for item in _describe(error):
            found[item] = None
    return [{"field": field, "problem": problem} for field, problem in sorted(found)]


class InputCheck:
    """Refuses inputs that break an endpoint's schema (422 `INVALID_INPUTS`, one entry per field),
    compiling each endpoint's schema once."""

    def __init__(self) -> None:
        self._validators: dict[str, Draft202012Validator] = {}

    def __call__(self, record: EndpointRecord, inputs: dict[str, Any]) -> None:
        validator = self._validators.get(record.id)
        if validator is None:
            validator = self._validators[record.id] = Draft202012Validator(record.inputs)
        problems = input_problems(validator, inputs)
        if problems:
            summary = "; ".join(f"{p['field']} {p['problem']}" for p in problems)
            raise Refusal(422, "INVALID_INPUTS", f"invalid inputs: {summary}", fields=problems)
