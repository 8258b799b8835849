"""YAML of a policy block turned into plain data, remembering where every key and value was written.

PyYAML's composed nodes carry line and column marks; plain `yaml.safe_load` forgets them. Values are
built here from the nodes, with three policy-specific choices: numbers with a decimal point become
`Decimal` (an amount of USDC is never a float), mapping keys stay the text that was typed, and a key
given twice in one mapping is an error (YAML would silently keep the last one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from svc_console.policy.document import Block
from svc_console.policy.errors import Path, PolicyError, PolicyInvalid, Where

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_NODES = 20_000
_SCALARS = SafeConstructor()
_TAG = "tag:yaml.org,2002:"


@dataclass
class SourceMap:
    """Where each value (and each mapping key) of the data was written."""

    fallback: Where
    values: dict[Path, Where] = field(default_factory=dict)
    keys: dict[Path, Where] = field(default_factory=dict)

    def value(self, path: Path) -> Where:
        """The position of the value at `path`, or of its nearest written ancestor."""
        for end in range(len(path), -1, -1):
            where = self.values.get(path[:end])
            if where is not None:
                return where
        return self.fallback

    def key(self, path: Path) -> Where:
        return self.keys.get(path) or self.value(path)

    def absorb(self, other: SourceMap, at: Path, shifted: Path) -> None:
        """Take `other`'s positions under `at`, moved to `shifted` (a list appended after
        another one gets new indices)."""
        for mine, theirs in ((self.values, other.values), (self.keys, other.keys)):
            for path, where in theirs.items():
                if path[: len(at)] == at:
                    mine[shifted + path[len(at) :]] = where


def compose(block: Block) -> tuple[Any, SourceMap]:
    """The block's data and its source map; raises PolicyInvalid for YAML that does not parse."""
    fallback = Where(block.file, block.fence_line)
    try:
        node = yaml.compose(block.text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = _where(block, mark) if mark is not None else fallback
        problem = exc.problem or exc.context or "this is not valid YAML"
        raise PolicyInvalid([PolicyError(where, f"YAML: {problem}")]) from None
    except yaml.YAMLError as exc:
        raise PolicyInvalid([PolicyError(fallback, f"YAML: {exc}")]) from None
    source = SourceMap(fallback)
    if node is None:
        return None, source
    builder = _Builder(block, source)
    data = builder.build(node, ())
    if builder.errors:
        raise PolicyInvalid(builder.errors)
    return data, source


def _where(block: Block, mark: Any) -> Where:
    return Where(block.file, block.first_line + mark.line, mark.column + 1)


class _Builder:
    def __init__(self, block: Block, source: SourceMap):
        self.block, self.source = block, source
        self.errors: list[PolicyError] = []
        self.nodes = 0

    def build(self, node: yaml.Node, path: Path) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            if self.nodes == MAX_NODES + 1:
                self.errors.append(
                    PolicyError(
                        self.at(node), f"a policy block may hold at most {MAX_NODES} values"
                    )
                )
            return None
        self.source.values[path] = self.at(node)
        if isinstance(node, yaml.MappingNode):
            return self.mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, index)) for index, item in enumerate(node.value)]
        return self.scalar(node)

    def mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, Any]:
        result: dict[str, Any] = {}
        first_seen: dict[str, Where] = {}
        for key_node, value_node in node.value:
            where = self.at(key_node)
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == f"{_TAG}merge":
                self.errors.append(PolicyError(where, "a key must be plain text"))
                continue
            key = key_node.value
            if key in first_seen:
                self.errors.append(
                    PolicyError(
                        where,
                        f'"{key}" is given twice in this mapping'
                        f" (first at line {first_seen[key].line})",
                    )
                )
                continue
            first_seen[key] = where
            self.source.keys[(*path, key)] = where
            result[key] = self.build(value_node, (*path, key))
        return result

    def scalar(self, node: yaml.Node) -> Any:
        tag = node.tag
        if tag == f"{_TAG}str":
            return node.value
        if tag == f"{_TAG}float":
            try:
                return Decimal(node.value.replace("_", ""))
            except InvalidOperation:
                return _SCALARS.construct_object(node)  # .inf and .nan: refused later
        if tag in (f"{_TAG}int", f"{_TAG}bool", f"{_TAG}null"):
            return _SCALARS.construct_object(node)
        if tag == f"{_TAG}timestamp":
            return node.value  # a date is text to the vocabulary
        self.errors.append(PolicyError(self.at(node), f"unsupported YAML tag {tag}"))
        return None

    def at(self, node: yaml.Node) -> Where:
        return _where(self.block, node.start_mark)
