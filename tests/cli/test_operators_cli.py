"""`svc-console operators add / list / remove` and decisions from the command line with
`--operator NAME`: the token shown once and kept only as a slow hash in an owner-only file;
once accounts exist, changing them, registering an agent or deciding needs an account's token;
a wrong one changes nothing."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from operator_support import once_past_the_wait
from test_cli import AS_AGENT, run, wait_for

from svc_console.config.agent_registry import AgentRegistry
from svc_console.config.operator_accounts import OperatorAccounts

CLI = [sys.executable, "-m", "svc_console"]
SUBMIT = ["--endpoint", "ep_websearch_basic", "--inputs", '{"query": "q"}', "--purpose", "p"]


def as_operator(name: str, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SVC_OPERATOR_TOKEN": token}
    return subprocess.run(
        [*CLI, *args, "--operator", name], capture_output=True, text=True, timeout=30, env=env
    )


def add(name: str) -> str:
    added = run("operators", "add", name)
    assert added.returncode == 0, added.stderr
    return added.stdout.strip()


def test_add_prints_the_token_once_and_keeps_a_slow_hash_owner_only(home: Path):
    token = add("alice")
    assert token.startswith("svcop_")
    added = run("operators", "add", "bob")  # accounts exist: it takes an operator's token
    assert added.returncode == 2 and "needs an operator account" in added.stderr
    bob = as_operator("alice", token, "operators", "add", "bob")
    assert bob.returncode == 0, bob.stderr
    stored = home / "operators.json"
    text = stored.read_text()
    assert token not in text and "scrypt$" in text
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    listed = run("operators", "list", "--json")
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["alice"]["added_by"] is None and rows["bob"]["added_by"] == "alice"
    assert token not in listed.stdout
    assert "bob" in run("operators", "list").stdout


def test_a_wrong_token_or_an_unknown_operator_changes_nothing(home: Path):
    token = add("alice")
    before = (home / "operators.json").read_text()
    for name, given in (("alice", "svcop_wrong"), ("mallory", token)):
        refused = as_operator(name, given, "operators", "remove", "alice")
        assert refused.returncode == 2
        assert "unknown operator or wrong token" in refused.stderr
        assert "Traceback" not in refused.stderr
    assert (home / "operators.json").read_text() == before
    removed = as_operator("alice", token, "operators", "remove", "alice")
    assert removed.returncode == 0 and "no longer works" in removed.stdout
    assert OperatorAccounts(home / "operators.json").authenticate("alice", token) is None
    assert run("operators", "list", "--json").stdout.count('"active": false') == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("operators", "add", "bad name"), "must be 1-64 letters"),
        (("operators", "add", "x", "--token-file", "/nonexistent"), "goes with --operator"),
    ],
)
def test_bad_operator_commands_say_why(home: Path, args, message):
    result = run(*args)
    assert result.returncode == 2 and message in result.stderr
    assert not (home / "operators.json").exists()


def test_agents_add_records_the_operator_who_registered_it(home: Path):
    token = add("alice")
    unnamed = run("agents", "add", "research-bot")
    assert unnamed.returncode == 2 and "needs an operator account" in unnamed.stderr
    registered = as_operator("alice", token, "agents", "add", "research-bot")
    assert registered.returncode == 0, registered.stderr
    assert AgentRegistry(home / "agents.json").registrant("research-bot") == "alice"
    assert "by alice" in run("agents", "list").stdout


@contextlib.contextmanager
def serving_one_pending() -> Iterator[str]:
    """`svc-console serve` running, with one request an agent submitted waiting for the
    operator: its id. The broker is stopped after."""
    server = subprocess.Popen(
        [*CLI, "serve"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert "broker on" in server.stdout.readline()
        submitted = subprocess.run(
            [*AS_AGENT, *CLI, "agent", "submit", *SUBMIT],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert submitted.returncode == 0, submitted.stderr
        ids = wait_for(lambda: json.loads(run("approvals", "list", "--json").stdout))
        yield ids[0]["id"]
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_a_cli_decision_names_its_operator_and_a_bad_token_decides_nothing(home: Path):
    token = add("alice")
    token_file = home / "alice.token"
    token_file.write_text(token)
    token_file.chmod(0o600)
    with serving_one_pending() as request_id:
        bare = run("approvals", "approve", request_id)
        assert bare.returncode == 2 and "need an operator account" in bare.stderr
        wrong = as_operator("alice", "svcop_wrong", "approvals", "approve", request_id)
        assert wrong.returncode == 2 and "unknown operator or wrong token" in wrong.stderr
        assert [r["id"] for r in json.loads(run("approvals", "list", "--json").stdout)] == [
            request_id
        ]
        approved = once_past_the_wait(
            lambda: run(
                "approvals",
                "approve",
                request_id,
                "--operator",
                "alice",
                "--token-file",
                str(token_file),
            )
        )
        assert approved.returncode == 0, approved.stderr
        history = json.loads(run("approvals", "list", "--history", "--json").stdout)
        decision = next(r for r in history if r["id"] == request_id)["decision"]
        assert decision["by"] == "alice" and decision["evidence"]["operator"] == "alice"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("operators.json", "{broken", "is not a valid operator accounts file"),
        ("settings.toml", '[operator]\nname = "two words"\n', "[operator] name must be"),
    ],
)
def test_a_broken_accounts_file_or_operator_setting_stops_serve_in_one_line(
    home: Path, name, text, message
):
    (home / name).write_text(text)
    (home / name).chmod(0o600)
    served = run("serve", timeout=60)
    assert served.returncode == 1 and message in served.stderr
    assert "Traceback" not in served.stderr


def test_revoking_a_grant_from_the_cli_needs_an_operator_and_names_them(home: Path):
    token = add("alice")
    with serving_one_pending() as request_id:
        granted = as_operator(
            "alice", token, "approvals", "approve", request_id, "--for", "1h", "--total", "1"
        )
        assert granted.returncode == 0, granted.stderr
        [grant] = json.loads(run("grants", "list", "--json").stdout)

        bare = run("grants", "revoke", str(grant["id"]))
        assert bare.returncode == 2 and "need an operator account" in bare.stderr
        wrong = as_operator("alice", "svcop_wrong", "grants", "revoke", str(grant["id"]))
        assert wrong.returncode == 2 and "unknown operator or wrong token" in wrong.stderr
        assert [g["id"] for g in json.loads(run("grants", "list", "--json").stdout)] == [
            grant["id"]
        ]

        revoked = once_past_the_wait(
            lambda: as_operator("alice", token, "grants", "revoke", str(grant["id"]))
        )
        assert revoked.returncode == 0, revoked.stderr
        assert json.loads(run("grants", "list", "--json").stdout) == []
        [ended] = json.loads(run("grants", "list", "--all", "--json").stdout)
        assert ended["ended_by"] == "alice"


TWO_PERSON = "```policy\ntwo_person:\n  above_usdc: 5\n```\n"


@contextlib.contextmanager
def serving() -> Iterator[None]:
    server = subprocess.Popen(
        [*CLI, "serve"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert "broker on" in server.stdout.readline(), server.stderr.read()
        yield
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_under_a_two_person_rule_adding_an_operator_takes_a_second_one(home: Path):
    alice = add("alice")
    bob = as_operator("alice", alice, "operators", "add", "bob")
    assert bob.returncode == 0, bob.stderr
    bob_token = bob.stdout.strip()
    (home / "SKILLS.md").write_text(TWO_PERSON)
    before = (home / "operators.json").read_text()
    # No console running to record the two operators' decision: refused, nothing changed.
    offline = as_operator("alice", alice, "operators", "add", "carol")
    assert offline.returncode == 2 and "svc-console serve" in offline.stderr
    assert "two-person rule" in offline.stderr and offline.stderr.count("\n") == 1
    assert (home / "operators.json").read_text() == before
    with serving():
        asked = as_operator("alice", alice, "operators", "add", "carol")
        assert asked.returncode == 0, asked.stderr
        assert "second operator adds it" in asked.stdout and "svcop_" not in asked.stdout
        assert (home / "operators.json").read_text() == before
        again = as_operator("alice", alice, "operators", "add", "carol")
        assert again.returncode == 2 and "second, different operator" in again.stderr
        seconded = as_operator("bob", bob_token, "operators", "add", "carol")
        assert seconded.returncode == 0, seconded.stderr
        assert seconded.stdout.strip().startswith("svcop_")
        assert "added by alice and bob" in seconded.stderr
    rows = {row["name"]: row for row in json.loads(run("operators", "list", "--json").stdout)}
    assert (rows["carol"]["added_by"], rows["carol"]["seconded_by"]) == ("alice", "bob")
    assert "carol" in run("operators", "list").stdout
    assert "by alice and bob" in run("operators", "list").stdout
