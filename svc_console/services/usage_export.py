"""Export the usage history, as finance asks for it: CSV or JSON, under the same filters as the
usage screen, from `svc-console usage export` or from the screen itself.

Rows are streamed from the ledger a batch at a time (`ledger.usage_query.stream`), never the whole
table in memory. A file is written owner-only under a temporary name and renamed when complete, so a
reader never sees half an export and an interrupted one leaves nothing behind.

JSON is exact: every value as stored, amounts as decimal strings, non-ASCII escaped (so nothing in
it can act on a terminal it is printed to). CSV is for spreadsheets: strings from the service are
shown inert (control characters become visible tokens) and a cell that a spreadsheet would read as
a formula (`=`, `+`, `-`, `@`) is prefixed with an apostrophe.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

from svc_console.core.money import format_usdc, from_atomic
from svc_console.core.sanitize import inert_line
from svc_console.core.usage import DAY_S, FLAG_TEXT, UsageFilter, iso_instant, parse_instant
from svc_console.ledger import usage_query as ledger_usage
from svc_console.ledger.readers import Connection
from svc_console.ledger.usage_query import UsageRow

FORMATS = ("csv", "json")
FIELDS = (
    "id",
    "time",
    "agent",
    "kind",
    "resource",
    "provider",
    "domain_type",
    "chain",
    "protocol",
    "amount_usdc",
    "idempotency_key",
    "receipt",
    "request_id",
    "decision",
    "decided_by",
    "approved_ceiling_usdc",
    "reconciled",
    "flag",
    "flag_reason",
    "service",
    "version",
)
# Cells a spreadsheet would evaluate (OWASP's list for CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_RELATIVE = re.compile(r"^\s*(\d{1,5})\s*([dh])\s*$")
CELL_LIMIT = 10_000


def usdc_text(units: int | None) -> str | None:
    """Atomic units as the exact decimal string the marketplace writes ("0.01", "0.0035")."""
    return None if units is None else format_usdc(from_atomic(units))


class ExportError(Exception):
    """A bad option or an unwritable file; the message says which."""


def record(row: UsageRow) -> dict[str, object]:
    """One charge as an export row (JSON-ready, exact)."""
    return {
        "id": row.id,
        "time": iso_instant(row.at),
        "agent": row.agent,
        "kind": row.kind,
        "resource": row.resource,
        "provider": row.provider,
        "domain_type": row.domain_type,
        "chain": row.chain,
        "protocol": row.protocol,
        "amount_usdc": usdc_text(row.amount),
        "idempotency_key": row.idempotency_key,
        "receipt": row.receipt,
        "request_id": row.request_id,
        "decision": row.decision,
        "decided_by": row.decided_by,
        "approved_ceiling_usdc": usdc_text(row.ceiling),
        "reconciled": row.state,
        "flag": row.flag,
        "flag_reason": FLAG_TEXT.get(row.flag, row.flag) if row.flag else None,
        # Whose charge it is, and which version: a `conflict` row is version 2 or later of a
        # charge id this service reported before with other facts (both rows are exported).
        "service": row.service,
        "version": row.version,
    }


def csv_cell(value: object) -> str:
    """A value as a spreadsheet-safe CSV cell."""
    if value is None:
        return ""
    text = inert_line(value, CELL_LIMIT)
    if text.startswith(_FORMULA_START):
        return "'" + text
    return text


def write_csv(rows: Iterable[UsageRow], out: TextIO) -> int:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FIELDS)
    written = 0
    for row in rows:
        item = record(row)
        writer.writerow([csv_cell(item[f]) for f in FIELDS])
        written += 1
    return written


def write_json(rows: Iterable[UsageRow], out: TextIO) -> int:
    """A JSON array, one charge per line, written as it is read."""
    out.write("[")
    written = 0
    for row in rows:
        out.write(",\n" if written else "\n")
        out.write(json.dumps(record(row), ensure_ascii=True, separators=(", ", ": ")))
        written += 1
    out.write("\n]\n" if written else "]\n")
    return written


WRITERS: dict[str, Callable[[Iterable[UsageRow], TextIO], int]] = {
    "csv": write_csv,
    "json": write_json,
}


def export(conn: Connection, f: UsageFilter, fmt: str, out: TextIO) -> int:
    """Write every charge under `f`, oldest first, to `out`; returns how many."""
    if fmt not in WRITERS:
        raise ExportError(f"format must be one of {', '.join(FORMATS)}")
    if not ledger_usage.has_usage(conn):
        return WRITERS[fmt]([], out)  # a ledger from before usage was kept: nothing to export
    return WRITERS[fmt](ledger_usage.stream(conn, f), out)


def export_file(conn: Connection, f: UsageFilter, fmt: str, path: Path) -> int:
    """`export` into a new owner-only file at `path` (replacing one that exists)."""
    path = path.expanduser()
    if path.is_dir():
        raise ExportError(f"{path} is a folder; give a file name")
    if not path.parent.exists():
        # Only folders made here are made private; an existing folder is left as it is.
        path.parent.mkdir(parents=True, mode=0o700)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    with contextlib.suppress(FileNotFoundError):
        partial.unlink()
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise ExportError(f"cannot write in {path.parent}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            written = export(conn, f, fmt, out)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
        raise
    return written


def format_for(path: Path | None, wanted: str | None) -> str:
    """The format asked for, else the one the file name says, else CSV."""
    if wanted:
        return wanted
    if path is not None and path.suffix.lower() == ".json":
        return "json"
    return "csv"


def default_path(folder: Path, fmt: str, now: float) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    return folder / f"usage-{stamp}.{fmt}"


# -- dates as people type them --------------------------------------------------------------------


def parse_since(text: str, now: float) -> float:
    """`30d` or `12h` (that long before now), a date (its midnight, UTC) or an ISO-8601 time."""
    relative = _RELATIVE.match(text)
    if relative:
        amount, unit = int(relative.group(1)), relative.group(2)
        return now - amount * (DAY_S if unit == "d" else 3600)
    return _instant(text)


def parse_until(text: str, now: float) -> float:
    """Like `parse_since`, but a date alone includes that whole day (the range ends at the next
    midnight), so `--since 2026-05-01 --until 2026-05-31` is the month of May."""
    relative = _RELATIVE.match(text)
    if relative:
        return parse_since(text, now)
    if _is_date(text):
        return _instant(text) + DAY_S
    return _instant(text)


def _is_date(text: str) -> bool:
    return re.fullmatch(r"\s*\d{4}-\d{2}-\d{2}\s*", text) is not None


def _instant(text: str) -> float:
    try:
        return parse_instant(text.strip())
    except ValueError:
        raise ExportError(
            f"{text[:40]!r} is not a time: use 30d, 12h, 2026-05-01 or 2026-05-01T09:00Z"
        ) from None


def describe_range(f: UsageFilter) -> str:
    """The date range of a filter in words: midnights as dates, an end at midnight as the day
    before it (the range includes that whole day)."""

    def midnight(at: float) -> bool:
        return at % DAY_S == 0

    def show(at: float) -> str:
        return iso_instant(at)[:10] if midnight(at) else iso_instant(at)

    if f.since is None and f.until is None:
        return "all dates"
    last = None
    if f.until is not None:
        last = show(f.until - DAY_S) if midnight(f.until) else f"before {show(f.until)}"
    if f.since is None:
        return f"until {last}"
    if last is None:
        return f"since {show(f.since)}"
    return f"{show(f.since)} … {last}"
