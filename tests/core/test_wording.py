"""Counts in words: one helper, so "1 charges" cannot come back one screen at a time."""

from __future__ import annotations

import pytest

from svc_console.core.wording import plural
from svc_console.policy.brakes import span, unsuccessful


@pytest.mark.parametrize(
    ("count", "noun", "many", "said"),
    [
        (1, "charge", None, "1 charge"),
        (0, "charge", None, "0 charges"),
        (2, "charge", None, "2 charges"),
        (1204, "request", None, "1,204 requests"),
        (1, "policy", "policies", "1 policy"),
        (3, "policy", "policies", "3 policies"),
    ],
)
def test_a_count_and_its_noun(count: int, noun: str, many: str | None, said: str):
    assert plural(count, noun, many) == said


def test_spans_and_the_breakers_words():
    assert [span(s) for s in (1, 45, 60, 7200, 86_400)] == [
        *("1 second", "45 seconds", "1 minute", "2 hours", "1 day")
    ]
    # Denials count towards the breaker: they are not called failures.
    assert unsuccessful(5) == "5 requests in a row denied or failed"
