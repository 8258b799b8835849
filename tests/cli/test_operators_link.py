"""`svc-console operators link NAME --slack USER_ID`: one Slack user decides as one operator
account, linked by an operator who proves their account; every mistake changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import run
from test_operators_cli import add, as_operator

from svc_console.config.operator_accounts import OperatorAccounts


def test_an_operator_links_a_slack_user_and_the_list_shows_it(home: Path):
    token = add("alice")
    linked = as_operator("alice", token, "operators", "link", "alice", "--slack", "u012ab3cd")
    assert linked.returncode == 0, linked.stderr
    assert "Slack user U012AB3CD now decides as operator alice" in linked.stdout
    accounts = OperatorAccounts(home / "operators.json")
    assert accounts.slack_operator("U012AB3CD").name == "alice"
    assert accounts.pin().slack_operator("U012AB3CD").name == "alice"
    rows = json.loads(run("operators", "list", "--json").stdout)
    assert rows[0]["slack_user"] == "U012AB3CD"
    assert "Slack U012AB3CD" in run("operators", "list").stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("link", "alice", "--slack", "not-an-id"), "must be a Slack user id"),
        (("link", "alice", "--slack", "C0CHANNEL"), "must be a Slack user id"),
        (("link", "mallory", "--slack", "U0MALLORY"), "no operator account 'mallory'"),
        (("link", "bob", "--slack", "U0ALICE"), "U0ALICE is already linked to operator alice"),
    ],
)
def test_a_bad_link_says_why_and_changes_nothing(home: Path, args, words):
    token = add("alice")
    as_operator("alice", token, "operators", "add", "bob")
    assert (
        as_operator("alice", token, "operators", "link", "alice", "--slack", "U0ALICE").returncode
        == 0
    )
    before = (home / "operators.json").read_text()
    refused = as_operator("alice", token, "operators", *args)
    assert refused.returncode == 2 and words in refused.stderr
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert (home / "operators.json").read_text() == before


def test_linking_needs_an_operator_s_token(home: Path):
    add("alice")
    before = (home / "operators.json").read_text()
    refused = run("operators", "link", "alice", "--slack", "U0ALICE")
    assert refused.returncode == 2 and "needs an operator account" in refused.stderr
    wrong = as_operator("alice", "svcop_wrong", "operators", "link", "alice", "--slack", "U0X1")
    assert wrong.returncode == 2 and "unknown operator or wrong token" in wrong.stderr
    assert (home / "operators.json").read_text() == before


def test_a_removed_operator_s_slack_user_decides_no_more(home: Path):
    accounts = OperatorAccounts(home / "operators.json")
    accounts.add("alice")
    accounts.link_slack("alice", "U0ALICE")
    pinned = accounts.pin()
    assert pinned.slack_operator("U0ALICE") is not None
    accounts.remove("alice")
    assert pinned.slack_operator("U0ALICE") is None and accounts.slack_operator("U0ALICE") is None
    # A link made after the console started counts from its next start.
    accounts.add("bob")
    accounts.link_slack("bob", "U0BOB")
    assert pinned.slack_operator("U0BOB") is None
    assert accounts.pin().slack_operator("U0BOB").name == "bob"
