"""The command line as a script uses it: `serve` in one process, `agent submit --wait` in another,
`approvals approve/deny` in a third, with the exit codes of DESIGN.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import seed_in_flight
from operator_support import pending_ids, run_typing, serving, set_passphrase

CLI = [sys.executable, "-m", "svc_console"]
# The agent: a process of its own that runs the CLI, as an agent's program would. The console
# traces its requests to it, so the operator's commands (children of this test, not of it) may
# decide them.
AS_AGENT = [sys.executable, "-c", "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"]


def run(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


def decide(*args: str) -> subprocess.CompletedProcess[str]:
    """`svc-console approvals ...` as the operator runs it: at a terminal, typing the passphrase
    (agents of this user are accepted, so the console's decisions need it)."""
    return run_typing(["approvals", *args])


def as_agent(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AS_AGENT, *CLI, *args], capture_output=True, text=True, timeout=timeout)


def wait_for(predicate, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


@pytest.fixture
def served(home: Path):
    set_passphrase(home)
    with serving():
        yield home


def submit_and_wait(*extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            *AS_AGENT, *CLI, "agent", "submit", "--endpoint", "ep_websearch_basic",
            "--inputs", '{"query": "heat pumps"}', "--purpose", "market sizing", "--wait",
            *extra,
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_submit_wait_exits_0_after_approve(served):
    agent = submit_and_wait("--json")
    request_id = wait_for(pending_ids)[0]
    approved = decide("approve", request_id)
    assert approved.returncode == 0, approved.stderr
    out, err = agent.communicate(timeout=30)
    assert agent.returncode == 0, err
    request = json.loads(out)
    assert request["state"] == "succeeded"
    assert request["outcome"]["charged_usdc"] == "0.01"


def test_submit_wait_exits_3_after_deny(served):
    agent = submit_and_wait()
    request_id = wait_for(pending_ids)[0]
    denied = decide("deny", request_id, "--reason", "use the free tier")
    assert denied.returncode == 0, denied.stderr
    out, _ = agent.communicate(timeout=30)
    assert agent.returncode == 3
    assert "denied" in out and "use the free tier" in out


def test_approvals_list_shows_the_request_and_refuses_unknown_ids(served):
    ticket = run(
        "agent", "submit", "--endpoint", "ep_websearch_basic", "--inputs", '{"query": "q"}',
        "--purpose", "look \x1b[31mred\x1b[0m up",
    )  # fmt: skip
    assert ticket.returncode == 0, ticket.stderr
    request_id = ticket.stdout.split()[0]
    wait_for(lambda: request_id in pending_ids())
    listing = run("approvals", "list")
    assert request_id in listing.stdout and "Web Search" in listing.stdout
    assert "\x1b" not in listing.stdout and "<ESC>[31mred" in listing.stdout
    missing = decide("approve", "req_nope")
    assert missing.returncode == 2
    assert missing.stderr.strip() == "svc-console: no request req_nope"


def test_bad_inputs_json_is_a_usage_error(home):
    result = run("agent", "submit", "--endpoint", "x", "--inputs", "{not json", "--purpose", "p")
    assert result.returncode == 2
    assert result.stderr.startswith("svc-console: --inputs is not valid JSON")
    assert "Traceback" not in result.stderr


def test_no_broker_running_is_a_clear_connection_error(home):
    result = run("agent", "submit", "--endpoint", "x", "--inputs", "{}", "--purpose", "p")
    assert result.returncode == 2
    assert "is svc-console running?" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_help_for_every_command():
    for command in (
        [],
        ["demo"],
        ["serve"],
        ["sandbox"],
        ["agent", "submit"],
        ["approvals", "list"],
        ["approvals", "approve"],
        ["approvals", "deny"],
    ):
        result = run(*command, "--help")
        assert result.returncode == 0
        assert "usage: svc-console" in result.stdout


def test_help_imports_only_what_the_parser_needs():
    """`--help` is the start-up an operator waits on most often: the modules a command needs
    only once it runs (a dataclass for the audit's ledger, the subprocess of `service status`)
    are imported then, not here."""
    code = (
        "import sys\n"
        "from svc_console.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert "usage: svc-console" in done.stdout
    loaded = set(done.stdout.splitlines()[-1].split())  # after the help it printed
    assert "svc_console.cli.audit" in loaded  # the parser was built, every command with it
    assert not {"dataclasses", "subprocess"} & loaded


def test_serve_refuses_a_second_broker_on_the_same_home(served):
    second = run("serve", timeout=20)
    assert second.returncode == 1
    assert "another svc-console broker" in second.stderr
    assert os.path.exists(served / "svc.sock")


@pytest.mark.engines("sqlite")  # `serve` keeps the sandbox's ledger in its file
def test_serve_reports_on_stderr_the_calls_it_found_in_flight(paths):
    """A console killed mid-call left two executions in flight: `serve` turns them unknown and
    says so on stderr, one line each (request, endpoint, approved ceiling, how to reconcile), the
    endpoint's text inert."""
    seed_in_flight(paths, "req_crash1", endpoint_id="ep_websearch_basic", ceiling="0.02")
    seed_in_flight(paths, "req_crash2", endpoint_id="ep_\x1b]0;owned\x07x", ceiling="1.5")
    server = subprocess.Popen(
        [*CLI, "serve"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        banner = server.stdout.readline()
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=10)
    assert "broker on" in banner, errors
    lines = [line for line in errors.splitlines() if "unknown" in line]
    assert len(lines) == 2, errors
    first = next(line for line in lines if "req_crash1" in line)
    assert "ep_websearch_basic" in first and "0.02 USDC" in first
    assert "svc-console usage" in first and "Usage screen" in first and "Reconcile" in first
    second = next(line for line in lines if "req_crash2" in line)
    assert "1.50 USDC" in second and "\x1b" not in errors and "\x07" not in errors


def test_sandbox_command_serves_on_loopback_and_keeps_credentials_private(home: Path):
    server = subprocess.Popen(
        [*CLI, "sandbox", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = server.stdout.readline()
        assert "no real money moves" in line, server.stderr.read()
        base_url = line.split(" listening on ")[1].split()[0]
        assert base_url.startswith("http://127.0.0.1:")
        credentials_path = home / "sandbox" / "credentials.json"
        assert credentials_path.stat().st_mode & 0o777 == 0o600
        credentials = json.loads(credentials_path.read_text())
        assert credentials["api_key"] not in line and credentials["api_token"] not in line
        import httpx

        health = httpx.get(f"{base_url}/api/health").json()
        assert health["sandbox"] is True and health["realMoney"] is False
        record = httpx.get(
            f"{base_url}/api/endpoints/ep_websearch_basic",
            headers={"Authorization": f"Bearer {credentials['api_key']}"},
        )
        assert record.json()["name"] == "Web Search"
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert not (home / "sandbox" / "credentials.json").exists()


def test_a_configured_service_without_a_key_is_a_clear_error(home: Path):
    env = {**os.environ, "SVC_BASE_URL": "https://market.example"}
    result = subprocess.run([*CLI, "serve"], capture_output=True, text=True, timeout=30, env=env)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "svc-console: no API key for https://market.example: run svc-console login"
    )


def test_approving_above_the_threshold_asks_for_the_typed_amount(served):
    # A 1.50 USDC video generation: above the default 1 USDC threshold.
    ticket = as_agent(
        "agent", "submit", "--endpoint", "ep_frameify_generate",
        "--inputs", '{"prompt": "a lighthouse at dawn"}', "--purpose", "storyboard",
    )  # fmt: skip
    request_id = ticket.stdout.split()[0]
    wait_for(lambda: request_id in pending_ids())
    untyped = decide("approve", request_id)
    assert untyped.returncode == 2
    assert "--confirm-amount 1.50" in untyped.stderr
    mistyped = decide("approve", request_id, "--confirm-amount", "1.05")
    assert mistyped.returncode == 2
    assert request_id in pending_ids()
    typed = decide("approve", request_id, "--confirm-amount", "1.5")
    assert typed.returncode == 0, typed.stderr
    assert request_id not in pending_ids()


def test_wrong_typed_amount_is_refused_and_changes_nothing(served):
    ticket = as_agent(
        "agent", "submit", "--endpoint", "ep_websearch_basic", "--inputs", '{"query": "q"}',
        "--purpose", "p",
    )  # fmt: skip
    request_id = ticket.stdout.split()[0]
    wait_for(lambda: request_id in pending_ids())
    wrong = decide("approve", request_id, "--confirm-amount", "not-a-number")
    assert wrong.returncode == 2
    assert "confirm_amount" in wrong.stderr
    assert request_id in pending_ids()


# An agent that submits, then runs the operator's command on its own request: one that even knows
# the passphrase (an operator's own script, run at their terminal).
SELF_APPROVING_AGENT = """
import json, subprocess, sys, time
cli = sys.argv[1:]
ticket = subprocess.run(
    [*cli, "agent", "submit", "--endpoint", "ep_websearch_basic", "--inputs", '{"query": "q"}',
     "--purpose", "approve me"], capture_output=True, text=True, check=True)
request_id = ticket.stdout.split()[0]
deadline = time.monotonic() + 15
while time.monotonic() < deadline:
    listing = subprocess.run([*cli, "approvals", "list", "--json"], capture_output=True, text=True)
    if request_id in listing.stdout:
        break
    time.sleep(0.05)
approve = subprocess.run([*cli, "approvals", "approve", request_id], capture_output=True, text=True)
print(json.dumps({"request_id": request_id, "rc": approve.returncode, "stderr": approve.stderr}))
"""


def test_an_agent_cannot_approve_its_own_request_through_the_cli(served):
    import sqlite3

    agent = run_typing([SELF_APPROVING_AGENT, *CLI], program=[sys.executable, "-c"])
    assert agent.returncode == 0, agent.stderr
    attempt = json.loads(agent.stdout)
    assert attempt["rc"] == 2
    assert "an agent cannot decide its own request" in attempt["stderr"]
    request_id = attempt["request_id"]
    assert request_id in pending_ids()  # nothing was decided
    # The refusal is evidence: in the audit chain, with the process that tried.
    ledger = sqlite3.connect(f"file:{served / 'ledger-sandbox.db'}?mode=ro", uri=True)
    with ledger:
        rows = ledger.execute(
            "SELECT data FROM events WHERE request_id = ? AND type = 'decision_refused'",
            [request_id],
        ).fetchall()
    ledger.close()
    assert len(rows) == 1
    refused = json.loads(rows[0][0])
    assert refused["evidence"]["channel"] == "cli" and refused["evidence"]["pid"] > 0
    # The operator, in a process tree of their own, still decides it.
    assert decide("deny", request_id, "--reason", "no").returncode == 0


def test_serve_says_a_broken_policy_on_stderr_and_approvals_list_repeats_it(home: Path):
    policy = home / "SKILLS.md"
    home.mkdir(parents=True, exist_ok=True)
    policy.write_text("```policy\nauto_approve: [{name: x, when: {max_usdc: lots}}]\n```\n")
    server = subprocess.Popen(
        [*CLI, "serve"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert "broker on" in server.stdout.readline()
        said = ""
        while "POLICY ERROR" not in said:  # each line as serve writes it
            line = server.stderr.readline()
            assert line, said
            said += line
        assert "SKILLS.md:2" in said and "auto-approval suspended" in said
        listing = run("approvals", "list")
        assert listing.returncode == 0 and "POLICY ERROR" in listing.stderr
        policy.write_text("```policy\nper_call_max_usdc: 1\n```\n")
        while "valid again" not in said:
            line = server.stderr.readline()
            assert line, said
            said += line
        assert "POLICY ERROR" not in run("approvals", "list").stderr
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.mark.parametrize(
    "args",
    [
        ("approvals", "list"),
        ("approvals", "approve", "req_x"),
        ("approvals", "deny", "req_x", "--reason", "r"),
        ("agent", "submit", "--endpoint", "e", "--inputs", "{}", "--purpose", "p"),
    ],
)
def test_with_no_console_running_each_command_says_so_in_one_line(home: Path, args):
    result = run(*args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and "is svc-console running?" in result.stderr


def test_a_reader_that_goes_away_gets_no_traceback(served):
    listing = subprocess.Popen(
        [*CLI, "approvals", "list", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    listing.stdout.close()  # like `| head` that has read enough
    err = listing.stderr.read()
    listing.wait(timeout=30)
    assert "Traceback" not in err and listing.returncode in (0, 141)


def test_sigterm_stops_serve_with_one_line_of_what_it_left_pending(home: Path):
    server = subprocess.Popen(
        [*CLI, "serve"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert "broker on" in server.stdout.readline()
        agent = submit_and_wait()
        wait_for(pending_ids)
        agent.kill()
        agent.wait(timeout=10)
    finally:
        server.terminate()
        out, err = server.communicate(timeout=30)
    assert server.returncode == 0, err
    assert "Traceback" not in err
    last = out.strip().splitlines()[-1]
    assert last == "svc-console: stopped; left pending: 1 request waiting for a decision"


def test_approvals_list_is_a_table_with_a_header_age_and_expiry():
    from svc_console.cli.approvals import table

    now = 1_795_000_000.0

    def request(n: int, name: str, agent: str, purpose: str) -> dict:
        return {
            "id": f"req_{n:0{n}d}",
            "state": "pending",
            "agent": agent,
            "agent_verified": n == 1,
            "purpose": purpose,
            "created_at": now - 65 * n,
            "expires_at": now + 600 * n,
            "endpoint": {"name": name, "providerName": "Searchly", "verified": True},
            "estimate": {"amount_usdc": "0.01"},
            "verdict": {"outcome": "ask"},
        }

    lines = table(
        [request(1, "Web Search", "bot", "look"), request(3, "FX", "a\x1b[2Jb", "x" * 200)], now
    )
    header, first, second = lines
    assert header.split() == (
        [
            "ID",
            "STATE",
            "USDC",
            "AGE",
            "EXPIRES",
            "ENDPOINT",
            "PROVIDER",
            "VERDICT",
            "AGENT",
            "AGENT",
            "WROTE",
        ]
    )
    for column in ("STATE", "USDC", "AGE", "EXPIRES", "ENDPOINT", "AGENT WROTE"):
        at = header.index(column)
        assert first[at - 2 : at] == "  " and second[at - 2 : at] == "  "
    assert "1m" in first and "in 10m" in first and "3m" in second and "in 30m" in second
    assert "\x1b" not in second and "a<ESC>[2Jb (unverified)" in second
    assert second.endswith("| " + "x" * 50 + "… [150 more characters]")  # cut, and said so


def test_submit_without_wait_returns_after_intake_and_a_rejection_is_an_error(served):
    typo = run(
        "agent", "submit", "--endpoint", "ep_websearch_basci", "--inputs", '{"query": "q"}',
        "--purpose", "p",
    )  # fmt: skip
    assert typo.returncode == 7, typo.stderr
    assert "rejected" in typo.stdout and "no endpoint ep_websearch_basci" in typo.stdout
    ok = run(
        "agent", "submit", "--endpoint", "ep_websearch_basic", "--inputs", '{"query": "q"}',
        "--purpose", "p",
    )  # fmt: skip
    assert ok.returncode == 0 and ok.stdout.split()[1] == "pending"
