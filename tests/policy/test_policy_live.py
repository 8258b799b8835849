"""Live policies: a saved SKILLS.md is in force without a restart and recorded as a policy version;
an invalid save (corrupted, empty, an unknown key, deleted) never widens what is allowed: the last
valid version stays in force, auto-approval is suspended, and the error is there for the banner."""

from __future__ import annotations

import getpass
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from helpers import eventually

from svc_console.agent import AsyncAgent
from svc_console.broker import BrokerConfig
from svc_console.core.states import State
from svc_console.ledger import policy_versions
from svc_console.runtime import Runtime

# Denies scraping; approves small searches on its own.
GOOD = """# SKILLS.md

```policy
deny:
  domain_types: [A8]
auto_approve:
  - name: small searches
    when: {domain_types: [A7], max_usdc: 0.05}
```
"""
SEARCH = {"endpoint_id": "ep_websearch_basic", "inputs": {"query": "solar"}, "purpose": "p"}
SCRAPE = {"endpoint_id": "ep_scrape_page", "inputs": {"url": "https://example.com"}, "purpose": "p"}


@pytest.fixture
def start(paths, sandbox, keep_started) -> Callable[..., Awaitable[Runtime]]:
    return lambda **options: keep_started(
        Runtime(paths=paths, sandbox=sandbox, config=BrokerConfig(), **options)
    )


def save(path: Path, text: str) -> None:
    """Save as editors do: a new file renamed over the old one."""
    temporary = path.with_name(f".{path.name}.swp")
    temporary.write_text(text)
    os.replace(temporary, path)


async def outcome(runtime: Runtime, request: dict) -> dict:
    async with AsyncAgent("bot", runtime.paths.socket) as agent:
        ticket = await agent.submit(**request)
    return await eventually(
        lambda: (
            (r := runtime.broker.get(ticket["request_id"])).state
            not in (State.received, State.inspecting, State.auto_approved, State.executing)
            and r
        )
    )


async def test_a_saved_change_is_in_force_and_recorded_as_a_version(start, paths):
    skills = paths.home / "SKILLS.md"
    save(skills, GOOD)
    runtime = await start()
    first_sha = runtime.policy.status.sha256
    assert runtime.policy.status.state == "active"
    assert (await outcome(runtime, SEARCH)).state == State.succeeded

    changed = GOOD.replace("[A8]", "[A7]")
    save(skills, changed)
    await eventually(lambda: runtime.policy.status.sha256 != first_sha)
    denied = await outcome(runtime, SEARCH)
    assert denied.state == State.denied and "deny.domain_types (SKILLS.md:5)" in denied.reason

    versions = policy_versions.history(runtime.ledger, str(skills))
    assert [v.text for v in versions] == [changed, GOOD]
    assert all(v.valid and v.saved_by == getpass.getuser() for v in versions)
    assert versions[0].sha256 == runtime.policy.status.sha256
    chain = [e for e in runtime.ledger.db["events"].rows if e["type"] == "policy_version"]
    assert len(chain) == 2


@pytest.mark.parametrize(
    ("broken", "line", "words"),
    [
        (GOOD.replace("deny:\n  domain_types: [A8]", "deny: [unclosed"), 5, "YAML"),
        ("", 1, "no policy block found"),
        (GOOD.replace("deny:", "deny_list:"), 4, 'unknown key "deny_list"'),
        (GOOD.replace("```\n", "").replace("```policy", "```policy"), 3, "never closed"),
    ],
    ids=["corrupted", "empty", "unknown-key", "unclosed"],
)
async def test_an_invalid_save_keeps_the_last_valid_policy_and_suspends_auto_approval(
    start, paths, broken, line, words
):
    skills = paths.home / "SKILLS.md"
    save(skills, GOOD)
    runtime = await start()
    good_sha = runtime.policy.status.sha256
    seen: list[str] = []
    runtime.policy.subscribe(lambda status: seen.append(status.state))

    save(skills, broken)
    status = await eventually(
        lambda: runtime.policy.status.state == "invalid" and runtime.policy.status
    )
    assert seen == ["invalid"]
    assert status.sha256 == good_sha and status.auto_approval_suspended
    assert status.errors[0].startswith(f"{skills}:{line}:") and words in status.errors[0]
    assert status.message.startswith("POLICY ERROR ")
    assert "stays in force" in status.message and "auto-approval suspended" in status.message

    # Nothing is widened: the deny of the last valid version still applies...
    assert (await outcome(runtime, SCRAPE)).state == State.denied
    # ...and what it would approve now waits for the operator, saying why.
    waiting = await outcome(runtime, SEARCH)
    assert waiting.state == State.pending and waiting.decision is None
    assert "suspended" in waiting.verdict.summary
    invalid = policy_versions.latest(runtime.ledger, str(skills))
    assert not invalid.valid and words in invalid.error

    save(skills, GOOD)  # fixed: in force again, auto-approval back
    await eventually(lambda: runtime.policy.status.state == "active")
    assert runtime.policy.status.message is None
    assert (await outcome(runtime, SEARCH)).state == State.succeeded


async def test_a_deleted_policy_file_fails_closed(start, paths):
    skills = paths.home / "SKILLS.md"
    save(skills, GOOD)
    runtime = await start()
    skills.unlink()
    status = await eventually(
        lambda: runtime.policy.status.state == "invalid" and runtime.policy.status
    )
    assert "no such file" in status.errors[0]
    assert (await outcome(runtime, SCRAPE)).state == State.denied


async def test_after_a_restart_the_ledgers_last_valid_version_stays_in_force(start, paths):
    skills = paths.home / "SKILLS.md"
    save(skills, GOOD)
    runtime = await start()
    await runtime.stop()
    save(skills, "# broken\n\n```policy\nper_call_max: 2\n```\n")

    again = await start()
    status = again.policy.status
    assert status.state == "invalid" and status.sha256 is not None
    assert 'unknown key "per_call_max"' in status.errors[0]
    assert (await outcome(again, SCRAPE)).state == State.denied
    assert (await outcome(again, SEARCH)).state == State.pending


async def test_a_named_policy_file_that_does_not_exist_is_an_error_not_no_policy(start, paths):
    missing = paths.home / "team.md"
    runtime = await start(policy_files=[missing], policy_optional=False)
    status = runtime.policy.status
    assert status.state == "invalid" and status.sha256 is None
    assert "no such file" in status.message and "operator decides" in status.message
    assert (await outcome(runtime, SEARCH)).state == State.pending
    save(missing, GOOD)  # created: in force
    await eventually(lambda: runtime.policy.status.state == "active")
    assert (await outcome(runtime, SCRAPE)).state == State.denied


async def test_the_default_skills_md_created_later_is_picked_up(start, paths):
    runtime = await start()
    assert runtime.policy.status.state == "none" and runtime.policy.status.message is None
    save(paths.home / "SKILLS.md", GOOD)
    await eventually(lambda: runtime.policy.status.state == "active")
    assert (await outcome(runtime, SCRAPE)).state == State.denied


async def test_drift_reads_the_services_unquoted_decimal_amounts(start, paths, sandbox):
    """The service's SKILLS.md says `max_usdc: 0.5`, a bare YAML number that reaches the console as
    a JSON float: the differing rule is named, not "cannot be read"; the same cap respelled is in
    sync."""
    from svc_console.policy.drift import compare

    save(paths.home / "SKILLS.md", GOOD)
    runtime = await start()
    local = runtime.policy.compiled.loaded

    sandbox.state.accounts.skills_md = GOOD.replace("max_usdc: 0.05", "max_usdc: 0.5")
    drift = compare(local, await runtime.market.account.policies())
    assert not drift.service_problems, drift.service_problems
    assert [(d.path, d.local, d.service) for d in drift.differences] == [
        ("auto_approve[0].when.max_usdc", "0.05", "0.50")
    ]
    assert drift.summary().endswith("first auto_approve[0].when.max_usdc")

    sandbox.state.accounts.skills_md = GOOD.replace("max_usdc: 0.05", "max_usdc: 0.050")
    respelled = compare(local, await runtime.market.account.policies())
    assert not respelled.same_text and respelled.in_sync, respelled.summary()
