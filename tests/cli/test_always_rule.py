"""Decide "always": `approvals approve ID --always --policy FILE` approves the request and adds to
the file a rule narrowed to that agent, that endpoint, that amount a call and a daily budget; the
file stays valid, the console reloads it, and the next matching request is approved by the rule
and cites it. A rule that could not load, or a file not in force, approves and writes nothing."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from decimal import Decimal

import pytest
from helpers import agent_token, eventually
from operator_support import operator_cli, set_passphrase

from svc_console.agent import AsyncAgent
from svc_console.core.states import FINAL, State
from svc_console.policy.loader import load_paths
from svc_console.runtime import Runtime

POLICY = """# SKILLS.md

Nothing above a dollar a call.

```policy
per_call_max_usdc: 1
```
"""
SEARCH = {"endpoint_id": "ep_websearch_basic", "purpose": "research"}


@pytest.fixture
async def runtime(paths, make_runtime) -> AsyncIterator[Runtime]:
    paths.home.mkdir(parents=True, exist_ok=True)
    (paths.home / "SKILLS.md").write_text(POLICY)
    set_passphrase(paths.home)  # agents of this user are accepted: the CLI's decisions need it
    runtime = make_runtime()
    await runtime.start()
    yield runtime
    await runtime.stop()


async def settled(
    runtime: Runtime, agent: str = "bot", query: str = "solar", *, verified: bool = True
) -> object:
    """A search by `agent`, registered (proving its name) unless `verified` is False."""
    token = agent_token(runtime.paths, agent) if verified else None
    async with AsyncAgent(agent, runtime.paths.socket, token=token) as client:
        ticket = await client.submit(**{**SEARCH, "inputs": {"query": query}})
    return await eventually(
        lambda: (
            (r := runtime.broker.get(ticket["request_id"])).state in (*FINAL, State.pending) and r
        )
    )


async def cli(runtime: Runtime, *args: str) -> subprocess.CompletedProcess[str]:
    """`svc-console approvals ...` as the operator runs it, typing the passphrase."""
    return await operator_cli(runtime.paths.home, "approvals", *args)


async def test_always_writes_a_valid_rule_that_the_next_matching_request_is_approved_by(runtime):
    policy = runtime.paths.home / "SKILLS.md"
    first = await settled(runtime)
    before = runtime.policy.status.sha256
    done = await cli(
        runtime, "approve", first.id, "--always", "--policy", str(policy), "--daily", "0.05"
    )
    assert done.returncode == 0, done.stderr
    assert '+      agents: ["bot"]' in done.stdout and "+        max_usdc: 0.05" in done.stdout
    assert "rule 'always bot ep_websearch_basic' added to SKILLS.md" in done.stdout
    text = policy.read_text()
    assert text.startswith(POLICY) and f"from request {first.id}" in text
    rules = load_paths([policy]).rules
    assert [r.name for r in rules.auto_approve] == ["always bot ep_websearch_basic"]
    await eventually(lambda: runtime.policy.status.sha256 not in (None, before))
    assert runtime.policy.status.state == "active"
    line = 1 + text.splitlines().index('  - name: "always bot ep_websearch_basic"')
    nxt = await settled(runtime, query="wind")
    assert nxt.state == State.succeeded
    assert nxt.decision.by == (
        f"policy: auto_approve 'always bot ep_websearch_basic' (SKILLS.md:{line})"
    )
    # Narrowed: another agent still waits for the operator.
    assert (await settled(runtime, agent="other-bot")).state == State.pending


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--always"], "--always needs --policy FILE"),
        (["--always", "--policy", "/tmp/elsewhere.md"], "is not a policy file in force"),
        (["--always", "--policy", "{home}/SKILLS.md", "--daily", "lots"], "--daily must be"),
        (["--always", "--policy", "{home}/SKILLS.md", "--for", "1h"], "two different decisions"),
    ],
)
async def test_a_bad_always_approves_and_writes_nothing(runtime, args, message):
    first = await settled(runtime)
    args = [a.replace("{home}", str(runtime.paths.home)) for a in args]
    refused = await cli(runtime, "approve", first.id, *args)
    assert refused.returncode == 2 and message in refused.stderr
    assert runtime.broker.get(first.id).state == State.pending
    assert (runtime.paths.home / "SKILLS.md").read_text() == POLICY
    assert not os.path.exists("/tmp/elsewhere.md")


async def test_a_second_always_for_the_same_call_is_refused_as_a_rule_already_there(runtime):
    policy = runtime.paths.home / "SKILLS.md"
    first = await settled(runtime)
    second = await settled(runtime, query="queued before the rule")
    done = await cli(runtime, "approve", first.id, "--always", "--policy", str(policy))
    assert done.returncode == 0, done.stderr
    written = policy.read_text()
    again = await cli(runtime, "approve", second.id, "--always", "--policy", str(policy))
    assert again.returncode == 2
    assert "has two rules named 'always bot ep_websearch_basic'" in again.stderr
    assert policy.read_text() == written
    assert runtime.broker.get(second.id).state == State.pending


def test_glob_characters_in_a_name_are_written_as_themselves():
    from svc_console.policy.always import Always, with_rule
    from svc_console.policy.budgets import RollingTotals
    from svc_console.policy.engine import CompiledPolicy
    from svc_console.policy.facts import Facts
    from svc_console.policy.loader import load_text

    rule = Always("a*[b]?", "market_call", "ep_*", Decimal("0.01"), Decimal("0.2"), "req_1", 0)
    policy = CompiledPolicy(load_text(with_rule(None, rule)))

    def outcome(agent: str, endpoint: str) -> str:
        facts = Facts(agent=agent, kind="market_call", amount=10_000, endpoint=endpoint)
        return policy.evaluate(facts, RollingTotals(), 1_795_000_000.0).outcome

    assert outcome("a*[b]?", "ep_*") == "auto_approve"
    assert outcome("ab", "ep_*") == "ask" and outcome("axx[b]z", "ep_*") == "ask"
    assert outcome("a*[b]?", "ep_websearch") == "ask"


async def test_always_above_the_threshold_says_what_to_type_and_writes_nothing(paths, make_runtime):
    paths.home.mkdir(parents=True, exist_ok=True)
    policy = paths.home / "SKILLS.md"
    text = POLICY.replace("per_call_max_usdc: 1", "per_call_max_usdc: 1\nconfirm_above_usdc: 0.005")
    policy.write_text(text)
    set_passphrase(paths.home)
    runtime = make_runtime()
    await runtime.start()
    try:
        request = await settled(runtime)
        assert request.state == State.pending
        untyped = await cli(runtime, "approve", request.id, "--always", "--policy", str(policy))
        assert untyped.returncode == 2
        assert "--confirm-amount 0.01; nothing was approved or written" in untyped.stderr
        assert policy.read_text() == text
        assert runtime.broker.get(request.id).state == State.pending
        typed = await cli(
            runtime,
            "approve",
            request.id,
            "--always",
            "--policy",
            str(policy),
            "--confirm-amount",
            "0.01",
        )
        assert typed.returncode == 0, typed.stderr
        assert "always bot ep_websearch_basic" in policy.read_text()
    finally:
        await runtime.stop()


async def test_always_for_an_unverified_agent_names_every_unverified_agent_as_the_policy_does(
    runtime,
):
    """A rule for the name an unverified agent gave would never apply (no rule matches it): the
    rule says `(unverified)`, which the operator reads in the diff before it is written."""
    policy = runtime.paths.home / "SKILLS.md"
    first = await settled(runtime, agent="stranger", verified=False)
    done = await cli(
        runtime, "approve", first.id, "--always", "--policy", str(policy), "--daily", "0.05"
    )
    assert done.returncode == 0, done.stderr
    assert '+      agents: ["(unverified)"]' in done.stdout
    await eventually(
        lambda: runtime.policy.status.state == "active" and runtime.policy.compiled.auto
    )
    other = await settled(runtime, agent="another-stranger", query="wind", verified=False)
    assert other.state == State.succeeded
    assert other.decision.by.startswith("policy: auto_approve 'always (unverified) ep_websearch")
