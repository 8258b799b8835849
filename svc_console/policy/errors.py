"""Policy errors as a policy author reads them: `SKILLS.md:23:5: per_call_max_usdc must be a number
of USDC, got "two"` (file, line and column, then what was expected and what was found).

Pydantic's validation errors are translated here, using the positions YAML gave each value, so a
message points at the token to fix rather than at a Python type.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pydantic import ValidationError

Path = tuple[str | int, ...]


@dataclass(frozen=True, order=True)
class Where:
    """A position in a policy file, 1-based like an editor's."""

    file: str
    line: int
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class PolicyError:
    where: Where
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


class PolicyInvalid(Exception):
    """A policy that must not be put in force; `errors` holds every problem found, in order."""

    def __init__(self, errors: Sequence[PolicyError]):
        self.errors = sorted(errors, key=lambda error: error.where)
        super().__init__("\n".join(str(error) for error in self.errors))


def dotted(path: Iterable[str | int]) -> str:
    """`("budgets", 0, "max_usdc")` as an author writes it: `budgets[0].max_usdc`."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def shown(value: Any) -> str:
    """A found value as it would read in YAML, quoted when it is text, kept short."""
    if isinstance(value, Decimal):
        text = str(value)
    elif isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
    elif value is None:
        text = "nothing"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, dict):
        text = "a mapping"
    elif isinstance(value, list):
        text = "a list"
    else:
        text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


# What pydantic's error types mean, in the words of the vocabulary.
_EXPECTED = {
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "string_type": "must be text",
    "list_type": "must be a list",
    "dict_type": "must be a mapping of keys to values",
    "model_type": "must be a mapping of keys to values",
    "model_attributes_type": "must be a mapping of keys to values",
    "too_short": "must not be empty",
}


def from_validation(
    exc: ValidationError,
    at: Any,
    prefix: Path = (),
    known_keys: dict[Path, Sequence[str]] | None = None,
) -> list[PolicyError]:
    """Translate a pydantic error into positioned messages. `at` is the block's `SourceMap`
    (anything with `value(path)` and `key(path)` returning a `Where`)."""
    errors = []
    for error in exc.errors(include_url=False):
        loc = prefix + tuple(error["loc"])
        kind = error["type"]
        if kind == "extra_forbidden":
            key = str(loc[-1])
            message = f'unknown key "{key}"'
            if known_keys is not None:
                close = difflib.get_close_matches(key, known_keys.get(_shape(loc[:-1]), ()), 1)
                if close:
                    message += f' (did you mean "{close[0]}"?)'
            elif loc[:-1]:
                message += f" in {dotted(loc[:-1])}"
            errors.append(PolicyError(at.key(loc), message))
            continue
        if kind == "missing":
            field = str(loc[-1])
            owner = dotted(loc[:-1]) or "the policy"
            errors.append(PolicyError(at.value(loc[:-1]), f'{owner} needs "{field}"'))
            continue
        text = dotted(loc) or "the policy block"
        if kind == "literal_error":
            expected = error.get("ctx", {}).get("expected", "")
            message = f"must be one of {expected.replace(chr(39), '')}"
        elif kind in _EXPECTED:
            message = _EXPECTED[kind]
        elif kind == "value_error":
            message = str(error.get("ctx", {}).get("error", error["msg"]))
        else:
            message = error["msg"][:1].lower() + error["msg"][1:]
        found = error.get("input")
        # A whole item or list judged at once (warn above max, two rules of one name) is shown
        # by its position, not its text.
        whole = isinstance(found, dict) or (kind == "value_error" and isinstance(found, list))
        if kind != "too_short" and not whole:
            message += f", got {shown(found)}"
        # A keyed value is pointed at by its key (the rule's name starts the message); an entry
        # of a list, by itself.
        where = at.key(loc) if loc and isinstance(loc[-1], str) else at.value(loc)
        errors.append(PolicyError(where, f"{text} {message}"))
    return errors


def _shape(path: Path) -> Path:
    """A path with list indices folded, to look up which keys a mapping accepts."""
    return tuple("[]" if isinstance(part, int) else part for part in path)
