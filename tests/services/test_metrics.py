"""`/metrics`, scraped over HTTP from a real runtime while agents submit through the socket and
operators decide in process and over the operator socket: each figure moves with the traffic,
the levels read at the scrape agree with the ledger, and the hooks on the broker's path read
nothing from the ledger."""

from __future__ import annotations

import socket
import traceback
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from typing import Any

import httpx
import pytest
from helpers import SEARCH, FakeClock, agent_token, eventually, submit
from operator_support import operator_knowing
from prometheus_client.parser import text_string_to_metric_families

from svc_console.agent import AsyncAgent
from svc_console.broker.params import ApproveParams
from svc_console.config.agent_registry import AgentRegistry
from svc_console.config.notify_settings import NotifySettings, Webhook
from svc_console.core.models import Decision, Evidence, Outcome, Receipt
from svc_console.core.states import State
from svc_console.runtime import Runtime
from svc_console.services.metrics import ConsoleMetrics
from svc_console.services.notify_messages import Notice

POLICY = """
```policy
deny:
  agents: ["blocked-bot"]
rate_limits:
  - per: agent
    window: 10m
    max_requests: 2
    then: deny
budgets:
  - window: month
    max_usdc: 300
```

```policy
auto_approve:
  - name: small searches
    when:
      agents: ["auto-bot"]
      max_usdc: 0.05
```
"""
Samples = dict[tuple[str, frozenset], float]


@pytest.fixture
def refused_port() -> Any:
    """A loopback port bound and never listened on: a connection to it is refused."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


@pytest.fixture
async def console(make_runtime, refused_port) -> AsyncIterator[Callable[..., Any]]:
    started: list[Runtime] = []

    async def run(*, clock: Any = None) -> Runtime:
        runtime = make_runtime(clock=clock)
        (runtime.paths.home / "SKILLS.md").write_text(POLICY)
        runtime.metrics_at = ("127.0.0.1", 0)
        dead = Webhook(f"http://127.0.0.1:{refused_port}/hook", "ntfy")
        runtime.notify = NotifySettings(webhooks=(dead,), events=frozenset({"policy_error"}))
        runtime.notify_options = {"backoff_s": 0.01}
        await runtime.start()
        started.append(runtime)
        return runtime

    yield run
    for runtime in started:
        if runtime.broker is not None:
            await runtime.stop()


async def scrape(runtime: Runtime) -> Samples:
    async with httpx.AsyncClient() as client:
        answer = await client.get(runtime.metrics.url)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def final(runtime: Runtime, rid: str) -> Any:
    return await runtime.broker.wait(rid, 15)


async def pending(runtime: Runtime, rid: str) -> None:
    request = runtime.broker.get(rid)
    while request.state in (State.received, State.inspecting):
        request = await runtime.broker.wait(rid, 15, any_change=True, seen=request.state)
    assert request.state == State.pending, request.state


async def test_a_scrape_during_traffic_shows_every_figure_move(console):
    runtime = await console()
    token = AgentRegistry(runtime.paths.agent_registry).add("research-bot")
    before = await scrape(runtime)
    assert value(before, "svc_console_queue_depth") == 0
    assert value(before, "svc_console_oldest_waiting_seconds") == 0
    budget = {"budget": "month budget overall", "window": "month", "where": "SKILLS.md:11"}
    assert value(before, "svc_console_budget_remaining_usdc", **budget) == 300

    # The rule and the rate limit name agents that prove their names (an unverified one is
    # `(unverified)` to them).
    auto = await submit(runtime, "auto-bot", agent_token(runtime.paths, "auto-bot"))
    assert (await final(runtime, auto["request_id"])).state == State.succeeded
    async with AsyncAgent("research-bot", runtime.paths.socket, token=token) as agent:
        asked = [(await agent.submit(**SEARCH, purpose=f"ask {n}"))["request_id"] for n in (1, 2)]
    for rid in asked:
        await pending(runtime, rid)
    blocked = await submit(runtime, "blocked-bot")  # a deny rule
    burst_token = agent_token(runtime.paths, "burst-bot")
    burst = [(await submit(runtime, "burst-bot", burst_token))["request_id"] for _ in range(3)]
    assert (await final(runtime, blocked["request_id"])).state == State.denied
    assert (await final(runtime, burst[2])).state == State.denied  # the rate limit's third

    during = await scrape(runtime)
    assert value(during, "svc_console_queue_depth") == 4  # research-bot's two, burst-bot's two
    assert 0 < value(during, "svc_console_oldest_waiting_seconds") < 60

    await runtime.broker.approve(ApproveParams(request_id=asked[0]))  # in the TUI's process
    async with operator_knowing(runtime) as cli:
        await cli.call("approvals.deny", {"request_id": asked[1], "reason": "not now"})
    assert (await final(runtime, asked[0])).state == State.succeeded
    await runtime.ledger.committed()

    after = await scrape(runtime)
    decided = "svc_console_decisions_total"
    assert value(after, decided, outcome="approved", channel="policy") == 1
    assert value(after, decided, outcome="approved", channel="tui") == 1
    assert value(after, decided, outcome="denied", channel="cli") == 1
    assert value(after, decided, outcome="denied", channel="policy") == 2  # the rule, the brake
    latency = "svc_console_decision_latency_seconds_count"
    assert value(after, latency, decided_by="console") == 7  # every request submitted
    assert value(after, latency, decided_by="operator") == 2
    assert value(after, "svc_console_brake_trips_total", brake="rate_limits") == 1
    money = "svc_console_approved_usdc_total"
    assert value(after, money, agent="research-bot", provider="prov_searchly") == 0.01
    assert value(after, money, agent="auto-bot", provider="prov_searchly") == 0.01
    charged = "svc_console_charged_usdc_total"
    assert value(after, charged, agent="research-bot", provider="prov_searchly") == 0.01
    assert value(after, "svc_console_charged_above_approved_total") == 0
    assert value(after, "svc_console_budget_remaining_usdc", **budget) == pytest.approx(299.98)
    assert value(after, "svc_console_queue_depth") == 2
    assert value(after, "svc_console_ledger_commit_seconds_count") > value(
        before, "svc_console_ledger_commit_seconds_count"
    )
    assert value(after, "svc_console_webhook_failures_total") == 0
    assert value(after, "svc_console_slack_failures_total") == 0
    assert value(after, "process_cpu_seconds_total") > 0

    notifier = runtime.notifier
    notifier.send(Notice("policy_error", ("the policy has errors",), 0.0, "d-1"))
    await eventually(lambda: notifier.failed == 1)
    assert value(await scrape(runtime), "svc_console_webhook_failures_total") == 1


async def test_an_expired_request_and_the_oldest_wait_follow_the_broker_s_clock(console):
    clock = FakeClock()
    runtime = await console(clock=clock)
    rid = (await submit(runtime, "research-bot"))["request_id"]
    await pending(runtime, rid)
    clock.advance(90)
    assert value(await scrape(runtime), "svc_console_oldest_waiting_seconds") == 90
    clock.advance(runtime.broker.decisions.pending_ttl_s())
    assert (await final(runtime, rid)).state == State.expired
    samples = await scrape(runtime)
    assert value(samples, "svc_console_requests_expired_total") == 1
    assert value(samples, "svc_console_queue_depth") == 0
    assert value(samples, "svc_console_oldest_waiting_seconds") == 0


@pytest.mark.skipif(
    "SVC_TESTS_LEDGER" in __import__("os").environ, reason="traces SQLite's statements"
)
async def test_the_hooks_on_the_broker_s_path_read_nothing_from_the_ledger(console):
    runtime = await console()
    by_metrics: list[str] = []

    def traced(statement: str) -> None:
        frames = traceback.extract_stack()
        if any(frame.filename.endswith(("services/metrics.py",)) for frame in frames):
            by_metrics.append(statement)
        if any(frame.filename.endswith("services/metrics_scrape.py") for frame in frames):
            by_scrape.append(statement)

    by_scrape: list[str] = []
    runtime.ledger.db.conn.set_trace_callback(traced)
    try:
        token = agent_token(runtime.paths, "auto-bot")  # the rule names registered agents
        rids = [(await submit(runtime, "auto-bot", token))["request_id"] for _ in range(2)]
        rids.append((await submit(runtime, "research-bot"))["request_id"])
        for rid in rids[:2]:
            assert (await final(runtime, rid)).state == State.succeeded
        await pending(runtime, rids[2])
        await runtime.broker.approve(ApproveParams(request_id=rids[2]))
        assert (await final(runtime, rids[2])).state == State.succeeded
        assert by_metrics == []
        await scrape(runtime)
        assert by_scrape  # the levels are read at the scrape, and only then
    finally:
        runtime.ledger.db.conn.set_trace_callback(None)


def test_a_charge_above_its_approval_is_counted_and_each_change_once(sandbox_request):
    metrics = ConsoleMetrics(clock=lambda: 10.0)
    received = sandbox_request(State.received)
    metrics.request_changed(received)
    queued = sandbox_request(State.pending)
    for _ in range(3):  # listeners are told of changes that change nothing they count
        metrics.request_changed(queued)
    decision = Decision(
        approved=True, by="alice", at=12.0, ceiling_usdc=Decimal("0.01"),
        evidence=Evidence(channel="slack", operator="alice", slack_user="U0ALICE"),
    )  # fmt: skip
    approved = sandbox_request(State.approved, decision=decision)
    metrics.request_changed(approved)
    metrics.request_changed(approved)
    paid = Outcome(
        status=200, content_type="text/plain", body="", charged_usdc=Decimal("0.02"),
        chain="base", receipt=Receipt(protocol="x402", network="base", transaction="0x1",
                                      idempotency_key="k"),
    )  # fmt: skip
    metrics.request_changed(sandbox_request(State.succeeded, decision=decision, outcome=paid))
    metrics.request_changed(sandbox_request(State.succeeded, decision=decision, outcome=paid))
    get = metrics.registry.get_sample_value
    labels = {"agent": "(unverified)", "provider": "-"}
    assert get("svc_console_decisions_total", {"outcome": "approved", "channel": "slack"}) == 1
    assert get("svc_console_decision_latency_seconds_count", {"decided_by": "console"}) == 1
    assert get("svc_console_decision_latency_seconds_sum", {"decided_by": "operator"}) == 11
    assert get("svc_console_approved_usdc_total", labels) == 0.01
    assert get("svc_console_charged_usdc_total", labels) == 0.02
    assert get("svc_console_charged_above_approved_total", labels) == 1
    # A request this broker did not take in (another broker's, heard on a shared ledger).
    metrics.request_changed(sandbox_request(State.approved, id="req_other", decision=decision))
    assert get("svc_console_decisions_total", {"outcome": "approved", "channel": "slack"}) == 1


@pytest.fixture
def sandbox_request() -> Callable[..., Any]:
    from helpers import plain_request

    def build(state: State, **fields: Any) -> Any:
        return plain_request().model_copy(update={"state": state, **fields})

    return build
