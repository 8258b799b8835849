"""The benchmark harness (tests/bench/harness.py): the benchmarks themselves are not collected by
the test run, so their shared helpers are tested here and cannot break silently."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "bench"))

import harness
from harness import Baseline, BenchResult, Figures, Target


def test_percentiles_interpolate_between_ranks_like_numpy() -> None:
    values = [15, 20, 35, 40, 50]
    assert harness.percentile(values, 0) == 15
    assert harness.percentile(values, 100) == 50
    assert harness.percentile(values, 50) == 35
    assert harness.percentile(values, 40) == pytest.approx(29.0)  # numpy.percentile's answer
    assert harness.percentile(range(1, 101), 99) == pytest.approx(99.01)
    assert harness.percentile([7], 99) == 7
    with pytest.raises(ValueError):
        harness.percentile([], 50)
    with pytest.raises(ValueError):
        harness.percentile([1, 2], 101)


def test_figures_report_a_p99_only_with_enough_samples() -> None:
    few = Figures.of([3.0, 1.0, 2.0])
    assert (few.median, few.p99, few.min, few.max, few.samples) == (2.0, None, 1.0, 3.0, 3)
    many = Figures.of([float(n) for n in range(1, 201)])
    assert many.p99 == pytest.approx(198.01)
    assert Figures.of([1.0, 2.0], p99=True).p99 == pytest.approx(1.99)
    with pytest.raises(ValueError):
        Figures.of([])


def test_meets_target_for_latencies_rates_and_conditions() -> None:
    latency = Target({"median": 5.0, "p99": 20.0})
    assert latency.met_by(Figures(4.0, 19.0, 1.0, 30.0, 200))
    assert latency.met_by(Figures(5.0, 20.0, 1.0, 30.0, 200))  # a bound is inclusive
    assert not latency.met_by(Figures(6.0, 19.0, 1.0, 30.0, 200))
    assert not latency.met_by(Figures(4.0, 21.0, 1.0, 30.0, 200))
    assert not latency.met_by(Figures(4.0, None, 1.0, 30.0, 50))  # p99 never measured

    rate = Target({"median": 5000.0}, higher_is_better=True)
    assert rate.met_by(Figures(5200.0, None, 4000.0, 6000.0, 3))
    assert not rate.met_by(Figures(4800.0, None, 4000.0, 6000.0, 3))

    result = BenchResult("throughput", "req/s", Figures(5200.0, None, 1, 1, 3), rate)
    assert result.meets_target
    result.conditions["none lost"] = False
    assert not result.meets_target


def test_result_json_has_the_documented_shape_and_reads_back() -> None:
    result = BenchResult(
        name="decision path",
        unit="ms",
        figures=Figures(12.5, 21.0, 8.0, 30.0, 500),
        target=Target({"median": 5.0, "p99": 20.0}),
        baseline=Baseline("echo", Figures(0.07, 0.6, 0.05, 0.8, 500)),
        context={"ledger_rows": 0},
    )
    data = json.loads(json.dumps(result.to_json()))
    assert data["name"] == "decision path"
    assert data["unit"] == "ms"
    assert (data["median"], data["p99"], data["min"], data["max"]) == (12.5, 21.0, 8.0, 30.0)
    assert data["target"]["median"] == 5.0 and data["target"]["p99"] == 20.0
    assert data["target"]["better"] == "lower"
    assert data["baseline"] == {
        "name": "echo",
        "median": 0.07,
        "p99": 0.6,
        "min": 0.05,
        "max": 0.8,
        "samples": 500,
    }
    assert data["meets_target"] is False
    again = BenchResult.from_json(data)
    assert again.to_json() == result.to_json()


def test_results_file_is_a_list_and_the_table_says_what_was_missed(tmp_path: Path) -> None:
    met = BenchResult("fast", "ms", Figures(1.0, None, 1.0, 1.0, 3), Target({"median": 2.0}))
    missed = BenchResult("slow", "ms", Figures(9.0, None, 9.0, 9.0, 3), Target({"median": 2.0}))
    path = tmp_path / "results.json"
    harness.write_json([met, missed], path)
    written = json.loads(path.read_text())
    assert isinstance(written, list)
    assert [(r["name"], r["meets_target"]) for r in written] == [("fast", True), ("slow", False)]
    table = harness.format_table([met, missed]).splitlines()
    assert table[0].split()[:3] == ["benchmark", "unit", "median"]
    assert table[2].startswith("fast") and table[2].rstrip().endswith("yes")
    assert table[3].startswith("slow") and table[3].rstrip().endswith("NO")


def test_run_process_reports_wall_time_and_peak_memory() -> None:
    # A child that holds about 64 MB: its high-water mark must show it.
    code = "b = bytearray(64 * 1024 * 1024); print('done')"
    run = harness.run_process([sys.executable, "-c", code])
    assert run.returncode == 0 and run.stdout.strip() == "done"
    assert run.peak_rss_mb > 60
    assert run.wall_ms > 0
    failed = harness.run_process([sys.executable, "-c", "import sys; sys.exit(3)"])
    assert failed.returncode == 3


def test_a_baseline_row_is_shown_beside_the_targets_and_never_counted_as_met() -> None:
    limit = BenchResult(
        "the sandbox alone",
        "req/s",
        Figures(6000.0, None, 5000.0, 7000.0, 3),
        Target({"median": 2000.0}, higher_is_better=True),
        role="baseline",
    )
    assert not limit.meets_target
    data = json.loads(json.dumps(limit.to_json()))
    assert data["role"] == "baseline" and data["meets_target"] is None
    assert BenchResult.from_json(data).role == "baseline"
    harness.stamp([limit], harness.new_run(), [0.5, 0.4, 0.3])
    assert harness.format_table([limit]).splitlines()[3].endswith("baseline, not a target")


def test_every_row_carries_its_run_and_a_table_refuses_rows_of_two_runs() -> None:
    first, second = harness.new_run(), {"id": "another", "started": "20260101T000000Z"}
    rows = [
        BenchResult("a", "ms", Figures(1.0, None, 1.0, 1.0, 3), Target({"median": 2.0})),
        BenchResult("b", "ms", Figures(1.0, None, 1.0, 1.0, 3), Target({"median": 2.0})),
    ]
    harness.stamp(rows, first, [1.25, 1.0, 0.5])
    data = rows[0].to_json()["run"]
    assert data["id"] == first["id"] and data["started"] == first["started"]
    assert data["load_average"] == [1.25, 1.0, 0.5] and len(data["load_average_after"]) == 3
    table = harness.format_table(rows).splitlines()
    assert table[0].startswith(f"run {first['id']} (started {first['started']})")
    assert table[1].split()[-2:] == ["load", "met"] and table[3].split()[-2:] == ["1.25", "yes"]
    harness.stamp(rows[1:], second, [9.0, 9.0, 9.0])
    with pytest.raises(ValueError, match="2 runs"):
        harness.format_table(rows)
    unstamped = BenchResult("c", "ms", Figures(1.0, None, 1.0, 1.0, 3), Target({"median": 2.0}))
    with pytest.raises(ValueError, match="runs"):
        harness.one_run([rows[0], unstamped])


def test_a_scraped_latency_histogram_gives_its_median_within_the_bucket_and_between_scrapes() -> (
    None
):
    """The decision benchmark sets /metrics' median beside its own (tests/bench/scrapes.py): read
    from a real registry served over HTTP, as Prometheus's histogram_quantile reads it."""
    import time

    import scrapes
    from prometheus_client import start_http_server

    from svc_console.services.metrics import ConsoleMetrics

    metrics = ConsoleMetrics(clock=time.time)
    console = metrics.latency.labels("console")
    for seconds in [0.0012] * 10 + [0.0035] * 20 + [0.02] * 10:
        console.observe(seconds)
    metrics.latency.labels("operator").observe(30)  # another series: never mixed in
    address = ("127.0.0.1", scrapes.free_loopback_port())
    server, thread = start_http_server(address[1], address[0], registry=metrics.registry)
    try:
        first = scrapes.decision_latency(address)
        # The 20th of 40 lies halfway through the (3 ms, 4 ms] bucket's 20 observations.
        assert first.total == 40 and first.median_ms() == pytest.approx(3.5)
        for _ in range(10):
            console.observe(0.0012)
        later = scrapes.decision_latency(address)
    finally:
        server.shutdown()
        thread.join()
    between = later.since(first)
    assert between.total == 10 and between.median_ms() == pytest.approx(1.25)
    assert scrapes.Buckets(()).median_ms() is None
