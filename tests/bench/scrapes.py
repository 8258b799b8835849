"""Reading the broker's `/metrics` while a benchmark drives it, as Prometheus would: what its
decision-latency histogram says, to set beside what the benchmark measured from the outside.

A histogram's median is known only to within its bucket: it is read as Prometheus's
`histogram_quantile` reads it, linearly within the bucket that holds the middle observation.
"""

from __future__ import annotations

import socket
import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

LATENCY = "svc_console_decision_latency_seconds"


def free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class Buckets:
    """Cumulative counts by upper bound (seconds), as one scrape gave them."""

    counts: tuple[tuple[float, float], ...]

    @property
    def total(self) -> float:
        return self.counts[-1][1] if self.counts else 0.0

    def since(self, earlier: Buckets) -> Buckets:
        """The observations made between `earlier` and this scrape."""
        before = dict(earlier.counts)
        return Buckets(tuple((bound, n - before.get(bound, 0.0)) for bound, n in self.counts))

    def median_ms(self) -> float | None:
        total = self.total
        if total == 0:
            return None
        middle = total / 2
        lower, below = 0.0, 0.0
        for bound, cumulative in self.counts:
            if cumulative >= middle:
                if bound == float("inf"):
                    return lower * 1000  # past the last bound: all Prometheus can say
                share = (middle - below) / (cumulative - below) if cumulative > below else 0
                return (lower + (bound - lower) * share) * 1000
            lower, below = bound, cumulative
        return None


def decision_latency(address: tuple[str, int], decided_by: str = "console") -> Buckets:
    """The decision-latency histogram's buckets for `decided_by`, scraped now."""
    host, port = address
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    counts: list[tuple[float, float]] = []
    for family in text_string_to_metric_families(text):
        if family.name != LATENCY:
            continue
        for sample in family.samples:
            if sample.name.endswith("_bucket") and sample.labels.get("decided_by") == decided_by:
                counts.append((float(sample.labels["le"]), sample.value))
    return Buckets(tuple(sorted(counts)))
