"""Compiled forms of the rules' lists, built once per policy so an evaluation only does dictionary
lookups and one regular-expression match per list.

Names and globs compare without regard to case: a deny of `Scrape*` must not miss `scrape-co`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator, Sequence
from typing import Any

from svc_console.core import secrets_scan
from svc_console.policy import linear_regex

_GLOB_CHARS = frozenset("*?[")
KNOWN_MAX = 8192
KNOWN_TEXT = 256  # characters of the longest text an input scanner remembers
MISSING = object()  # not looked up yet (None in `known` means: looked up, no entry matches)


class Matcher:
    """Which entry of a list (names, codes or globs) a value matches, by index."""

    __slots__ = ("_any_glob", "_exact", "_globs", "entries", "known")

    def __init__(self, entries: Sequence[str]):
        self.entries = tuple(entries)
        self._exact: dict[str, int] = {}
        globs: list[tuple[re.Pattern[str], int]] = []
        for index, entry in enumerate(entries):
            folded = entry.casefold()
            if _GLOB_CHARS.isdisjoint(entry):
                self._exact.setdefault(folded, index)
            else:
                globs.append((re.compile(fnmatch.translate(folded)), index))
        self._globs = tuple(globs)
        self._any_glob = (
            re.compile("|".join(f"(?:{pattern.pattern})" for pattern, _ in globs))
            if globs
            else None
        )
        # Names recur (the same agents, the same providers): what each matched (an index, or
        # None), so a name is folded and matched once. Hot loops read it directly and call
        # `find` only for a name not yet seen. Bounded; emptied when full.
        self.known: dict[str, int | None] = {}

    def find(self, value: str) -> int | None:
        known = self.known
        if value in known:
            return known[value]
        if len(known) >= KNOWN_MAX:
            known.clear()
        found = known[value] = self._match(value)
        return found

    def _match(self, value: str) -> int | None:
        folded = value.casefold()
        index = self._exact.get(folded)
        if index is not None or self._any_glob is None:
            return index
        if self._any_glob.match(folded) is None:
            return None
        # Rare (a match): which glob, so the verdict can cite its line.
        return next(index for pattern, index in self._globs if pattern.match(folded))

    def find_any(self, *values: str | None) -> tuple[int, str] | None:
        """The first entry matched by any of the values, and the value that matched."""
        for value in values:
            if value is not None:
                index = self.find(value)
                if index is not None:
                    return index, value
        return None


# Text a secret kind cannot appear without: a substring test is far cheaper than the regex, and
# most inputs hold none of these. (pattern name → (literal, compare in lower case))
_HINTS: dict[str, tuple[str, bool]] = {
    "email": ("@", False),
    "api_key": ("sk_live_", False),
    "bearer_token": ("bearer", True),
}


class InputScanner:
    """Patterns that must never leave in a request's inputs: named secret kinds and regexes."""

    def __init__(self, kinds: Sequence[tuple[str, str]], patterns: dict[str, str]):
        """`kinds`: (name in the policy, secrets_scan kind); `patterns`: name → regex."""
        # (name, pattern, shortest text it can match, literal it needs, literal in lower case).
        # An author's pattern gets no length shortcut: RE2's syntax is not Python's (a POSIX
        # class such as [[:digit:]] would be measured wrong), and a wrong shortcut misses a match.
        self.patterns: tuple[tuple[str, linear_regex.Pattern, int, str | None, bool], ...] = tuple(
            (name, pattern, _shortest(pattern), *_HINTS.get(kind, (None, False)))
            for name, kind in kinds
            for pattern in (secrets_scan.PATTERNS[kind][0],)
        )
        # The author's patterns as one alternation: one RE2 search per text finds whether any
        # of them is there (each search has a fixed cost several times its matching); which one
        # is looked up only on a hit.
        self._authored = [(name, linear_regex.compile(regex)) for name, regex in patterns.items()]
        self._any_authored = (
            linear_regex.compile("|".join(f"(?:{regex})" for regex in patterns.values()))
            if patterns
            else None
        )
        # Shorter text cannot hold any of them (most keys, many values).
        self.shortest = min((entry[2] for entry in self.patterns), default=0) if not patterns else 0
        # What each text seen found (a pattern's name or None): keys and many values recur, and
        # one search costs far more than a lookup. Bounded; emptied when full.
        self.known: dict[str, str | None] = {}

    def find(self, inputs: Any) -> tuple[str, str] | None:
        """(field path, pattern name) of the first forbidden value found, or None."""
        if type(inputs) is dict:  # the usual shape, a flat object: no generator on the way
            for key, value in inputs.items():
                if type(value) is str:
                    name = self.match(key) or self.match(value)
                    if name is not None:
                        return key, name
                else:
                    found = self._walk({key: value})
                    if found is not None:
                        return found
            return None
        return self._walk(inputs)

    def _walk(self, inputs: Any) -> tuple[str, str] | None:
        for path, text in _strings(inputs, ""):
            name = self.match(text)
            if name is not None:
                return path, name
        return None

    def match(self, text: str) -> str | None:
        """The name of the first pattern found in `text`, or None."""
        if len(text) > KNOWN_TEXT:
            return self._search(text)
        known = self.known
        found = known.get(text, MISSING)
        if found is MISSING:
            if len(known) >= KNOWN_MAX:
                known.clear()
            found = known[text] = self._search(text)
        return found

    def _search(self, text: str) -> str | None:
        size = len(text)
        if size < self.shortest:
            return None
        lowered = None
        for name, pattern, shortest, hint, fold in self.patterns:
            if size < shortest:
                continue
            if hint is not None:
                if fold:
                    if lowered is None:
                        lowered = text.lower()
                    if hint not in lowered:
                        continue
                elif hint not in text:
                    continue
            if pattern.search(text):
                return name
        if self._any_authored is not None and self._any_authored.search(text):
            return next(name for name, pattern in self._authored if pattern.search(text))
        return None


def _shortest(pattern: re.Pattern[str]) -> int:
    """The fewest characters `pattern` can match (0 when it cannot be told)."""
    try:
        import re._parser as parser  # type: ignore[import-not-found]

        return int(parser.parse(pattern.pattern, pattern.flags).getwidth()[0])
    except Exception:  # another Python's internals: no shortcut, never a wrong one
        return 0


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string in a JSON value, keys included (a secret in a key leaves all the same)."""
    if isinstance(value, str):
        yield path or "(value)", value
    elif isinstance(value, dict):
        for key, item in value.items():
            inner = f"{path}.{key}" if path else str(key)
            yield inner, str(key)
            yield from _strings(item, inner)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")
