"""Regular expressions that come from a policy, run by RE2: its matching time grows linearly with
the text, so no pattern an author writes can stall the broker (Python's backtracking engine takes
seconds on `(a+)+$` against a few dozen letters, doubling with each one).

RE2 has no backreferences or lookaround; a pattern that needs them is refused when the policy
loads, with RE2's reason, rather than run by a slower engine.
"""

from __future__ import annotations

from typing import Protocol

import re2


class Pattern(Protocol):
    pattern: str

    def search(self, text: str) -> object | None: ...


def _options() -> re2.Options:
    options = re2.Options()
    # RE2 reports a bad pattern to stderr as well as raising; the policy error says it already.
    options.log_errors = False
    return options


_OPTIONS = _options()


def compile(pattern: str) -> Pattern:
    """The pattern compiled for RE2; ValueError with the reason when RE2 cannot run it."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args else "not supported"
        raise ValueError(reason) from None
