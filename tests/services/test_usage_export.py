"""`svc-console usage export`: the usage history as finance gets it, compared with the ledger row by
row; dates as people type them; owner-only files; errors in one line; safe for spreadsheets and
terminals; streamed rather than loaded whole."""

from __future__ import annotations

import csv
import io
import json
import stat
import subprocess
import sys
import time
import tracemalloc
from decimal import Decimal
from pathlib import Path

import pytest

from svc_console.cli import main
from svc_console.config.paths import Paths
from svc_console.core.money import from_atomic
from svc_console.core.usage import DAY_S, UsageCharge, UsageFilter, iso_instant
from svc_console.ledger import Ledger
from svc_console.ledger import usage_query as ledger_usage
from svc_console.ledger.readers import open_reader
from svc_console.ledger.usage_seed import seed_usage
from svc_console.ledger.usage_write import sync_usage
from svc_console.services.usage_export import FIELDS, csv_cell, export, parse_since, parse_until

CLI = [sys.executable, "-m", "svc_console"]
SEEDED = 1000


def ledger_rows(paths: Paths, f: UsageFilter | None = None) -> list[ledger_usage.UsageRow]:
    f = f or UsageFilter()
    conn = open_reader(paths.ledger(sandbox=True))
    try:
        return list(ledger_usage.stream(conn, f))
    finally:
        conn.close()


@pytest.fixture
def seeded(paths: Paths) -> Paths:
    paths.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    seed_usage(paths.ledger(sandbox=True), SEEDED, days=60)
    return paths


def export_csv(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, str]]:
    assert main(["usage", "export", *args]) == 0
    out = capsys.readouterr().out
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == list(FIELDS)
    return [dict(zip(FIELDS, row, strict=True)) for row in rows[1:]]


def test_csv_on_stdout_is_the_ledger_oldest_first(seeded: Paths):
    done = subprocess.run([*CLI, "usage", "export"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    rows = list(csv.reader(io.StringIO(done.stdout)))
    expected = ledger_rows(seeded)
    assert len(rows) == SEEDED + 1 and rows[0] == list(FIELDS)
    for line, row in zip(rows[1:], expected, strict=True):
        item = dict(zip(FIELDS, line, strict=True))
        assert item["id"] == row.id and item["time"] == iso_instant(row.at)
        assert Decimal(item["amount_usdc"]) == from_atomic(row.amount)
        assert item["provider"] == row.provider and item["chain"] == row.chain
        assert item["reconciled"] == row.state and item["request_id"] == (row.request_id or "")
        ceiling = item["approved_ceiling_usdc"]
        assert (Decimal(ceiling) if ceiling else None) == row.ceiling_usdc
    times = [r[FIELDS.index("time")] for r in rows[1:]]
    assert times == sorted(times)


def test_json_file_is_exact_and_owner_only(seeded: Paths, tmp_path: Path):
    out = tmp_path / "reports" / "usage.json"
    done = subprocess.run(
        [*CLI, "usage", "export", "--state", "flagged", "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    expected = ledger_rows(seeded, UsageFilter(state="flagged"))
    assert f"{len(expected)} charges written to {out}" in done.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert stat.S_IMODE(out.parent.stat().st_mode) == 0o700  # a folder made for it is private
    items = json.loads(out.read_text())
    assert [i["id"] for i in items] == [r.id for r in expected] and items
    for item, row in zip(items, expected, strict=True):
        assert Decimal(item["amount_usdc"]) == from_atomic(row.amount)
        assert item["reconciled"] in ("uncovered", "over") and item["flag_reason"]
        assert item["flag"] == row.flag


def test_an_existing_file_is_replaced_owner_only(seeded: Paths, tmp_path: Path):
    out = tmp_path / "usage.csv"
    out.write_text("old, and readable by everyone\n")
    out.chmod(0o644)
    assert main(["usage", "export", "--output", str(out), "--agent", "nobody"]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert out.read_text() == ",".join(FIELDS) + "\n"
    assert not list(tmp_path.glob(".*partial"))


def test_date_range_and_filters(seeded: Paths, capsys: pytest.CaptureFixture[str]):
    everything = ledger_rows(seeded)
    sample = everything[len(everything) // 2]
    since, until = 1_777_593_600.0, 1_779_321_600.0  # 2026-05-01 and 2026-05-21 (exclusive)
    rows = export_csv(capsys, "--since", "2026-05-01", "--until", "2026-05-20")
    assert [r["id"] for r in rows] == [r.id for r in everything if since <= r.at < until]
    assert rows

    rows = export_csv(
        capsys, "--agent", sample.agent, "--provider", sample.provider, "--chain", sample.chain
    )
    assert [r["id"] for r in rows] == [
        r.id
        for r in everything
        if (r.agent, r.provider, r.chain) == (sample.agent, sample.provider, sample.chain)
    ]
    rows = export_csv(capsys, "--domain-type", sample.domain_type, "--state", "ok")
    assert [r["id"] for r in rows] == [
        r.id for r in everything if r.domain_type == sample.domain_type and not r.flagged
    ]
    # An ISO time is exact: a millisecond's range holds the one charge made in it.
    rows = export_csv(
        capsys, "--since", iso_instant(sample.at), "--until", iso_instant(sample.at + 0.001)
    )
    assert [r["id"] for r in rows] == [sample.id]


def test_relative_since(paths: Paths, capsys: pytest.CaptureFixture[str]):
    paths.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    now = time.time()
    ledger = Ledger(paths.ledger(sandbox=True))
    try:
        charges = [
            UsageCharge.model_validate(
                {
                    "id": f"ch_{days}d",
                    "createdAt": iso_instant(now - days * DAY_S),
                    "resourceId": "ep_x",
                    "chain": "base",
                    "protocol": "x402",
                    "amountUsdc": "0.01",
                }
            )
            for days in (40, 10, 1)
        ]
        sync_usage(ledger, charges, service="https://svc.example")
    finally:
        ledger.close()
    assert [r["id"] for r in export_csv(capsys, "--since", "30d")] == ["ch_10d", "ch_1d"]
    assert [r["id"] for r in export_csv(capsys, "--since", "48h")] == ["ch_1d"]
    assert [r["id"] for r in export_csv(capsys, "--until", "5d")] == ["ch_40d", "ch_10d"]


def test_parsing_dates():
    now = 1_779_955_200.0
    assert parse_since("30d", now) == now - 30 * DAY_S
    assert parse_since(" 12h ", now) == now - 12 * 3600
    assert parse_since("2026-05-01", now) == 1_777_593_600.0
    assert parse_until("2026-05-01", now) == 1_777_593_600.0 + DAY_S
    assert parse_until("2026-05-01T09:00Z", now) == 1_777_593_600.0 + 9 * 3600
    for bad in ("yesterday", "30 days", "2026-13-01", ""):
        with pytest.raises(Exception, match="is not a time"):
            parse_since(bad, now)


def test_errors_are_one_line_and_change_nothing(seeded: Paths, tmp_path: Path, capsys):
    bad = subprocess.run(
        [*CLI, "usage", "export", "--since", "yesterday"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().count("\n") == 0 and "is not a time" in bad.stderr
    assert "Traceback" not in bad.stderr

    assert main(["usage", "export", "--since", "2026-05-10", "--until", "2026-05-01"]) == 2
    assert "after its start" in capsys.readouterr().err

    folder = tmp_path / "a-folder"
    folder.mkdir()
    assert main(["usage", "export", "--output", str(folder)]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert list(folder.iterdir()) == []


def test_no_ledger_yet(home: Path):
    done = subprocess.run([*CLI, "usage", "export"], capture_output=True, text=True)
    assert done.returncode == 2 and "no ledger at" in done.stderr
    assert not (home / "ledger-sandbox.db").exists()  # reading never creates one


def test_a_service_configured_in_settings_exports_its_ledger_not_the_sandbox(
    seeded: Paths, capsys: pytest.CaptureFixture[str]
):
    seeded.settings.write_text('[service]\nbase_url = "https://svc.example"\n')
    assert main(["usage", "export"]) == 2
    assert f"no ledger at {seeded.ledger(sandbox=False)}" in capsys.readouterr().err
    seed_usage(seeded.ledger(sandbox=False), 7, days=3)
    assert len(export_csv(capsys)) == 7  # the real history, not the sandbox's thousand


def test_runs_beside_a_broker_holding_the_ledger(seeded: Paths, capsys):
    holder = Ledger(seeded.ledger(sandbox=True))  # the broker's exclusive writer lock
    try:
        assert len(export_csv(capsys)) == SEEDED
    finally:
        holder.close()


def test_a_charge_in_two_versions_is_exported_twice_the_second_flagged_conflict(
    paths: Paths, capsys
):
    """Both versions of a charge the service reported with other facts reach finance: the
    first as it was, the second flagged CONFLICT, each with its service and version."""
    paths.home.mkdir(parents=True, exist_ok=True, mode=0o700)

    def charge(amount: str) -> UsageCharge:
        return UsageCharge.model_validate(
            {
                "id": "ch_000001",
                "createdAt": "2026-05-01T00:00:00Z",
                "resourceId": "ep_x",
                "chain": "base",
                "protocol": "x402",
                "amountUsdc": amount,
            }
        )

    ledger = Ledger(paths.ledger(sandbox=True))
    try:
        for amount in ("0.01", "0.03"):
            sync_usage(ledger, [charge(amount)], service="sandbox-5eed")
    finally:
        ledger.close()
    first, second = export_csv(capsys, "--format", "csv")
    assert (first["id"], first["amount_usdc"], first["reconciled"]) == (
        "ch_000001",
        "0.01",
        "uncovered",
    )
    assert (second["id"], second["amount_usdc"], second["reconciled"]) == (
        "ch_000001",
        "0.03",
        "conflict",
    )
    assert second["flag_reason"].startswith("the service reported this charge before")
    assert [(r["service"], r["version"]) for r in (first, second)] == [
        ("sandbox-5eed", "1"),
        ("sandbox-5eed", "2"),
    ]
    assert main(["usage", "export", "--format", "json", "--state", "conflict"]) == 0
    (only,) = json.loads(capsys.readouterr().out)
    assert (only["amount_usdc"], only["flag"], only["version"]) == ("0.03", "conflict", 2)


def test_hostile_text_is_safe_in_csv_and_exact_in_json(paths: Paths, capsys):
    paths.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    hostile = {
        "provider": '=HYPERLINK("http://evil.example","open me")',
        "agent": "\x1b]52;c;SGVsbG8=\x07bot",
        "resourceId": "+cmd|' /C calc'!A0",
    }
    ledger = Ledger(paths.ledger(sandbox=True))
    try:
        charge = UsageCharge.model_validate(
            {
                "id": "ch_evil",
                "createdAt": "2026-05-01T00:00:00Z",
                "chain": "base",
                "protocol": "x402",
                "amountUsdc": "1",
                **hostile,
            }
        )
        sync_usage(ledger, [charge], service="https://svc.example")
    finally:
        ledger.close()
    (row,) = export_csv(capsys)
    assert row["provider"] == "'" + hostile["provider"]
    assert row["resource"] == "'" + hostile["resourceId"]
    assert row["agent"] == "<ESC>]52;c;SGVsbG8=<BEL>bot"

    assert main(["usage", "export", "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out  # escaped in the JSON text
    (item,) = json.loads(out)
    assert item["agent"] == hostile["agent"] and item["provider"] == hostile["provider"]
    assert csv_cell(None) == "" and csv_cell("-1") == "'-1" and csv_cell("plain") == "plain"


def test_export_streams_instead_of_loading_the_table(tmp_path: Path):
    """Peak memory of an export is that of a batch or two (1,000 rows each), not of the table:
    doubling the rows barely moves it, where loading them whole would double it."""
    peaks = {}
    for rows in (1500, 3000):
        path = tmp_path / f"ledger-{rows}.db"
        seed_usage(path, rows)
        conn = open_reader(path)
        sink = _CountingSink()
        tracemalloc.start()
        try:
            export(conn, UsageFilter(), "json", sink)
            peaks[rows] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            conn.close()
        assert sink.lines == rows + 2
    assert peaks[3000] < 1.6 * peaks[1500], peaks


class _CountingSink(io.TextIOBase):
    """A text stream that keeps nothing but how many lines went through it."""

    def __init__(self) -> None:
        self.lines = 0

    def write(self, text: str) -> int:
        self.lines += text.count("\n")
        return len(text)
