"""The socket's replies (`broker/jsonrpc.py` `encode`): written by orjson where it can, by json
where it cannot, and read back by an agent as the same values json alone would have sent, for
every kind of value a reply may carry."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pytest
from hostile_strings import HOSTILE

from svc_console.broker.jsonrpc import encode
from svc_console.core.funding import Stage
from svc_console.core.states import State


@dataclasses.dataclass
class Shown:
    amount: int = 5


VALUES: list[tuple[str, Any]] = [
    *HOSTILE,
    ("a big integer", 10**30),
    ("a negative big integer", -(2**64)),
    ("a small float", 1e-05),
    ("a large float", 1.5e300),
    ("a decimal", Decimal("0.005")),
    ("a time", dt.datetime(2026, 11, 29, 9, 30, tzinfo=dt.UTC)),
    ("a date", dt.date(2026, 11, 29)),
    ("a dataclass", Shown()),
    ("a state", State.pending),
    ("a stage", Stage(1)),
    ("a tuple", (1, "two")),
    ("keys that are not text", {1: "one", None: "none", 2.5: "half"}),
    ("a lone surrogate", "before \ud800 after"),
    ("nesting", {"a": [{"b": [None, True, False, {"c": "é"}]}]}),
]


@pytest.mark.parametrize(("name", "value"), VALUES, ids=[name for name, _ in VALUES])
def test_an_agent_reads_the_values_json_would_have_sent(name: str, value: Any):
    reply = {"jsonrpc": "2.0", "id": 7, "result": {"value": value, "name": name}}
    line = encode(reply)
    assert line.endswith(b"\n") and line.count(b"\n") == 1  # one line, whatever the text holds
    as_json = json.dumps(reply, separators=(",", ":"), default=str, ensure_ascii=True)
    assert json.loads(line) == json.loads(as_json)


def test_a_float_that_is_no_number_is_sent_as_null_which_agents_can_read():
    """json would write NaN, which no strict JSON reader (nor this socket's own) accepts."""
    line = encode({"jsonrpc": "2.0", "id": 1, "result": {"x": float("nan")}})
    assert json.loads(line) == {"jsonrpc": "2.0", "id": 1, "result": {"x": None}}
