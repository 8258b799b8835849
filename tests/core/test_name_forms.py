"""The one form names are compared in, and inputs as the service will see them: pure functions,
checked against the spellings an agent might try."""

from __future__ import annotations

import pytest

from svc_console.core import names
from svc_console.core.same_inputs import comparable


def full_width(text: str) -> str:
    return "".join(chr(0xFEE0 + ord(c)) if c.isalnum() else c for c in text)


@pytest.mark.parametrize(
    "spelling",
    ["trusted-bot", "TRUSTED-BOT", "Trusted-Bot", full_width("TRUSTED-BOT"), "\u212aelvin"],
)
def test_every_spelling_of_a_name_has_one_canonical_form(spelling):
    form = names.canonical(spelling)
    assert form == form.casefold() and names.AGENT_NAME.match(form)
    assert names.canonical(form) == form  # once canonical, always


def test_compatibility_and_case_forms_are_the_plain_name():
    assert names.canonical(full_width("TRUSTED-BOT")) == "trusted-bot"
    assert names.canonical("\u212aelvin") == "kelvin"  # KELVIN SIGN
    assert names.canonical("\ufb01le-bot") == "file-bot"  # the fi ligature


@pytest.mark.parametrize(
    "bad", ["", "bad name", "bot\n", "trusted\u200b-bot", "trust\u0435d-bot", "(unverified)"]
)
def test_a_form_that_is_no_name_is_refused_with_the_rule(bad):
    with pytest.raises(ValueError, match="must be 1-64 letters"):
        names.canonical(bad)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("trusted-bot", "trusted-b0t"),
        ("bot-1", "bot-l"),
        ("mallory", "rnallory"),
        ("a1ice", "alice"),
    ],
)
def test_names_that_look_alike_share_a_skeleton(one, other):
    assert names.skeleton(one) == names.skeleton(other)


@pytest.mark.parametrize(("one", "other"), [("trusted-bot", "trusted-bat"), ("bot-a", "bot_a")])
def test_names_that_do_not_look_alike_do_not(one, other):
    assert names.skeleton(one) != names.skeleton(other)


def test_an_unverified_agent_counts_as_the_one_unverified_agent():
    assert names.counted_as("research-bot", True) == "research-bot"
    assert names.counted_as("research-bot", False) == names.UNVERIFIED == "(unverified)"


SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "x-case-insensitive": True},
        "url": {"type": "string"},
        "max_results": {"type": "integer", "default": 10},
        "filters": {
            "type": "object",
            "properties": {"lang": {"type": "string", "default": "en"}},
        },
    },
}


@pytest.mark.parametrize(
    "again",
    [
        {"query": "  Solar Prices\t", "url": "https://a.example/X"},
        {"query": "solar\u200b prices\u2060", "url": "https://a.example/X"},
        {"query": full_width("solar") + " prices", "url": "https://a.example/X"},
        {"query": "solar prices", "url": "https://a.example/X", "max_results": 10.0},
    ],
)
def test_inputs_compare_as_the_service_sees_them(again):
    first = {"query": "solar prices", "url": "https://a.example/X"}
    assert comparable(again, SCHEMA) == comparable(first, SCHEMA)
    assert comparable(first, SCHEMA)["max_results"] == 10


def test_case_counts_where_the_schema_does_not_say_otherwise():
    one = comparable({"url": "https://a.example/X"}, SCHEMA)
    assert one != comparable({"url": "https://a.example/x"}, SCHEMA)
    assert comparable({"query": "Solar"}) != comparable({"query": "solar"})  # no schema known


def test_nested_defaults_are_filled_and_the_inputs_left_as_they_were():
    inputs = {"filters": {}, "query": "x"}
    seen = comparable(inputs, SCHEMA)
    assert seen["filters"] == {"lang": "en"} and inputs == {"filters": {}, "query": "x"}
    assert comparable([" a ", {"b": "\ufeffc"}]) == ["a", {"b": "c"}]
