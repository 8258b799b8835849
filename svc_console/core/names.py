"""The names agents and operators go by: what a name may be and the one form names are compared
in, everywhere (enrolment, the agent registry, policy lists and globs, budgets, brakes, grants,
the two-person rule, operator accounts). Importable without the models, by the commands that
only read a settings or accounts file.

A name is canonicalised once, where it enters (a hello, the registry, an accounts file, a policy
load): Unicode NFKC, then case-folded, so `TRUSTED-BOT` and its full-width spelling are
`trusted-bot`. The canonical form must then be a plain name (letters, digits, `.`, `_`, `-`).
Names that merely look alike (`trusted-b0t`) are told apart by their Unicode TR39 skeletons, so
enrolment and registration can refuse one that would pass for a registered name.
"""

from __future__ import annotations

import functools
import re
import unicodedata

# \Z, not $: "$" also matches before a final newline, which would let "bot\n" through.
AGENT_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._\-]{0,63}\Z")
AGENT_NAME_RULE = "must be 1-64 letters, digits, '.', '_' or '-', starting with one"

# What every agent that did not prove its name counts as, for every per-agent limit, list and
# grant: inventing names multiplies nothing. No name can be spelt so (parentheses).
UNVERIFIED = "(unverified)"


def fold(name: str) -> str:
    """NFKC, case-folded (and NFKC again: folding can leave a form NFKC would change). For
    names already recorded; `canonical` is for names that enter."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def canonical(name: str) -> str:
    """The form a name entering the console is kept and compared in; ValueError (the rule) when
    that form is no name."""
    form = fold(name)
    if not AGENT_NAME.match(form):
        raise ValueError(AGENT_NAME_RULE)
    return form


def counted_as(agent: str, verified: bool) -> str:
    """Who a request counts as for policies, budgets, brakes and grants: its agent when the agent
    proved its name, else the one unverified agent."""
    return agent if verified else UNVERIFIED


@functools.lru_cache(maxsize=4096)  # names recur: each registered one, each agent's
def skeleton(name: str) -> str:
    """The TR39 skeleton of a canonical name, case-folded: two names with one skeleton look
    alike (`trusted-b0t`, `trusted-bot`; `rn`, `m`)."""
    text = unicodedata.normalize("NFD", name)
    shown = "".join(_prototype(char) for char in text)
    return unicodedata.normalize("NFD", shown).casefold()


def look_alike(one: str, other: str) -> bool:
    """Whether two different canonical names could pass for each other."""
    return one != other and skeleton(one) == skeleton(other)


@functools.cache
def _prototype(char: str) -> str:
    """What `char` maps to in Unicode's confusables data. The confusable-homoglyphs package
    holds that data both ways (each source with its prototype, each prototype with its
    sources), so the characters that look alike form a star around their prototype: the
    sequence when one side is several characters (`m` and `rn`), else the one most map to."""
    data, marked = _confusables()
    if char not in data and char not in marked:
        return char

    def around(node: str) -> list[str]:
        entries = data.get(node) or data.get(marked.get(node, ""), ())
        return [_plain(entry["c"]) for entry in entries]

    seen, queue = {char}, [char]
    while queue:
        for other in around(queue.pop()):
            if other not in seen:
                seen.add(other)
                queue.append(other)
    longer = sorted(node for node in seen if len(node) > 1)
    if longer:
        return longer[0]
    return min(seen, key=lambda node: (-len(around(node)), node))


def _plain(text: str) -> str:
    # The package wraps right-to-left letters in bidi marks, which are no part of them.
    return text.replace("\u200e", "").replace("\u200f", "")


@functools.cache
def _confusables() -> tuple[dict[str, list[dict[str, str]]], dict[str, str]]:
    """The package's table (read as its own data file: importing the package's module would
    also import urllib, for a download only its maintainers run), and its keys held in bidi
    marks by what they hold."""
    import json
    from importlib import resources

    text = (resources.files("confusable_homoglyphs") / "confusables.json").read_text("utf-8")
    data: dict[str, list[dict[str, str]]] = json.loads(text)
    marked = {_plain(key): key for key in data if "\u200e" in key or "\u200f" in key}
    return data, marked
