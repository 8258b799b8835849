"""Loading a policy: files → `policy` blocks → YAML with positions → validated, merged rules.

Every block is validated on its own (so an error points into the block that has it) and every
error of every block is reported, not just the first. Blocks then combine in order: mappings merge
key by key, lists add up, and a single value (a cap, a threshold) given twice is an error naming
both places, because which one wins would be a guess.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from pathlib import Path as FilePath
from typing import Any

from pydantic import ValidationError

from svc_console.policy.document import policy_blocks
from svc_console.policy.errors import (
    Path,
    PolicyError,
    PolicyInvalid,
    Where,
    dotted,
    from_validation,
)
from svc_console.policy.rules import Rules, known_keys
from svc_console.policy.source import SourceMap, compose

KNOWN_KEYS = known_keys()


@dataclass(frozen=True)
class PolicyFile:
    path: FilePath | None
    name: str  # as errors and verdicts name it
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class BlockRules:
    file: str
    line: int  # the opening fence
    rules: dict[str, Any]


@dataclass(frozen=True)
class LoadedPolicy:
    files: tuple[PolicyFile, ...]
    rules: Rules
    source: SourceMap
    blocks: tuple[BlockRules, ...]

    @property
    def sha256(self) -> str:
        """The text's SHA-256 (of one file), or a digest of each file's (of several)."""
        if len(self.files) == 1:
            return self.files[0].sha256
        joined = "\n".join(f"{f.name}\0{f.sha256}" for f in self.files)
        return hashlib.sha256(joined.encode()).hexdigest()

    def rules_json(self) -> dict[str, Any]:
        """The merged rules as JSON, in one canonical spelling (for drift and versions)."""
        return self.rules.model_dump(mode="json", by_alias=True, exclude_none=True)


def read(path: FilePath, name: str | None = None) -> PolicyFile:
    """A policy file's text; raises PolicyInvalid when it cannot be read as UTF-8 text."""
    shown = name or str(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise PolicyInvalid([PolicyError(Where(shown, 1), "no such file")]) from None
    except UnicodeDecodeError as exc:
        raise PolicyInvalid(
            [PolicyError(Where(shown, 1), f"is not UTF-8 text (byte {exc.start})")]
        ) from None
    except OSError as exc:
        raise PolicyInvalid(
            [PolicyError(Where(shown, 1), f"cannot be read ({exc.strerror})")]
        ) from None
    return PolicyFile(path, shown, text)


def load_paths(paths: list[FilePath]) -> LoadedPolicy:
    return load([read(path) for path in paths])


def load_text(text: str, name: str = "SKILLS.md") -> LoadedPolicy:
    return load([PolicyFile(None, name, text)])


def load(files: list[PolicyFile]) -> LoadedPolicy:
    """Validate and merge; raises PolicyInvalid with every error found."""
    errors: list[PolicyError] = []
    parsed: list[tuple[Any, SourceMap, BlockRules]] = []
    for policy_file in files:
        try:
            blocks = policy_blocks(policy_file.text, policy_file.name)
        except PolicyInvalid as exc:
            errors += exc.errors
            continue
        if not blocks:
            errors.append(
                PolicyError(
                    Where(policy_file.name, 1),
                    "no policy block found: rules go in a fenced code block tagged policy",
                )
            )
        for block in blocks:
            try:
                data, source = compose(block)
            except PolicyInvalid as exc:
                errors += exc.errors
                continue
            if data is None:
                errors.append(PolicyError(source.fallback, "this policy block holds no rules"))
                continue
            if not isinstance(data, dict):
                errors.append(
                    PolicyError(source.value(()), "a policy block must hold a mapping (key: value)")
                )
                continue
            try:
                Rules.model_validate(data)
            except ValidationError as exc:
                errors += from_validation(exc, source, known_keys=KNOWN_KEYS)
                continue
            parsed.append((data, source, BlockRules(block.file, block.fence_line, data)))
    if errors:
        raise PolicyInvalid(errors)

    merged: dict[str, Any] = {}
    merged_source = SourceMap(parsed[0][1].fallback)
    for data, source, _ in parsed:
        _merge(merged, merged_source, data, source, (), errors)
    if errors:
        raise PolicyInvalid(errors)
    try:
        rules = Rules.model_validate(merged)
    except ValidationError as exc:  # blocks valid alone, invalid together: still positioned
        raise PolicyInvalid(from_validation(exc, merged_source, known_keys=KNOWN_KEYS)) from None
    return LoadedPolicy(tuple(files), rules, merged_source, tuple(b for _, _, b in parsed))


def _merge(
    into: dict[str, Any],
    into_source: SourceMap,
    data: dict[str, Any],
    source: SourceMap,
    path: Path,
    errors: list[PolicyError],
) -> None:
    for key, value in data.items():
        here = (*path, key)
        if key not in into:
            into[key] = copy.deepcopy(value)
            into_source.absorb(source, here, here)
            continue
        current = into[key]
        if isinstance(current, dict) and isinstance(value, dict):
            _merge(current, into_source, value, source, here, errors)
        elif isinstance(current, list) and isinstance(value, list):
            offset = len(current)
            current.extend(copy.deepcopy(value))
            for index in range(len(value)):
                into_source.absorb(source, (*here, index), (*here, offset + index))
        else:
            errors.append(
                PolicyError(
                    source.key(here), f"{dotted(here)} is already set at {into_source.key(here)}"
                )
            )
