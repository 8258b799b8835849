"""What `/metrics` reads when Prometheus scrapes, not as the broker works: levels rather than
counts. The queue (two small reads through the ledger's partial index of pending requests),
what each budget of the policy in force has left (from the policy's running totals, in memory),
and the failures the webhooks and Slack counted themselves. Run on the broker's loop, between
its steps, so nothing here races a write."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from svc_console.core.money import from_atomic
from svc_console.core.states import State
from svc_console.policy.budgets import WINDOW_NAMES
from svc_console.policy.verdicts import short


class ScrapeTime(Collector):
    def __init__(self, runtime: Any):
        self.runtime = runtime

    def describe(self) -> list[Metric]:
        return []  # read only at a scrape, never when the registry is put together

    def collect(self) -> Iterator[Metric]:
        runtime = self.runtime
        broker = runtime.broker
        if broker is None:
            return
        depth = broker.ledger.count_in_states([State.pending])
        oldest = broker.ledger.in_states([State.pending], limit=1)
        age = max(0.0, broker.clock() - oldest[0].created_at) if oldest else 0.0
        yield GaugeMetricFamily(
            "svc_console_queue_depth", "Requests waiting for an operator", value=depth
        )
        yield GaugeMetricFamily(
            "svc_console_oldest_waiting_seconds",
            "How long the oldest request waiting for an operator has waited (0: none waits)",
            value=age,
        )
        yield self._budgets(runtime.policy, broker.clock())
        notifier, slack = runtime.notifier, runtime.slack
        yield CounterMetricFamily(
            "svc_console_webhook_failures",
            "Notices a webhook did not accept after every attempt",
            value=notifier.failed if notifier is not None else 0,
        )
        yield CounterMetricFamily(
            "svc_console_slack_failures",
            "Slack Web API calls that failed (posts, updates, modals, replies)",
            value=slack.failures if slack is not None else 0,
        )

    @staticmethod
    def _budgets(policy: Any, now: float) -> Metric:
        """Each hard-stopped budget of the policy in force: USDC left in its window now, for
        each bucket it has counted spend in (per agent, per provider, ...)."""
        family = GaugeMetricFamily(
            "svc_console_budget_remaining_usdc",
            "USDC a policy budget has left in its window (spent and reserved taken off)",
            labels=["budget", "window", "where"],
        )
        compiled = getattr(policy, "compiled", None)
        if compiled is None:
            return family
        totals = policy.totals
        for check in compiled.budgets:
            if check.max is None:
                continue
            for scope, key in _buckets(check, totals):
                used = totals.used((scope, key), check.window, now)
                family.add_metric(
                    [check.label_for(key), WINDOW_NAMES[check.window], short(check.where)],
                    float(from_atomic(max(0, check.max - used))),
                )
        return family


def _buckets(check: Any, totals: Any) -> list[tuple[str, str]]:
    """The buckets a budget reads: its one bucket, or one per key with spend counted."""
    if check.attr is None:
        return [(check.scope, "")]
    keys = [bucket for bucket in totals.buckets if bucket[0] == check.scope]
    if check.only is not None:
        keys = [bucket for bucket in keys if check.only.find_any(bucket[1]) is not None]
    return sorted(keys)
