"""Made-up rows for the seeded datasets: previews, deliveries and the bodies they travel in.

Every value is drawn from a random stream seeded by the dataset id and the row number, so a row
is the same in a trial's preview and in the delivered content, in every process. Nothing here is
real data: addresses sit under the reserved `.example` domain and names are invented.
"""

from __future__ import annotations

import csv
import io
import json
import random
from datetime import date, timedelta
from typing import Any

from svc_console.core.datasets import SchemaColumn
from svc_console.sandbox.seed.datasets import WORDS

# A fixed "today", as in sandbox.upstream, so values never change between runs.
AS_OF = date(2025, 6, 2)
PREVIEW_ROWS = 5
DELIVERED_ROWS = 25
DELIVERED_DOCUMENTS = 3
PREVIEW_TEXT_CHARS = 280

_COUNTRIES = ("US", "DE", "FR", "GB", "JP", "BR", "IN", "CA", "AU", "NL", "SG", "ZA")
_CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD")
_TICKERS = ("ACME", "GLBX", "NWND", "QNTV", "HRBR", "KSTL", "BLHR", "USDC", "ETH", "SOL", "XLM")
_CITIES = ("Lisbon", "Osaka", "Denver", "Leeds", "Lyon", "Pune", "Austin", "Porto", "Graz")
_REGIONS = ("North", "South", "East", "West", "Central", "Coastal", "Metro")
_ORG_WORDS = ("Northwind", "Meridian", "Harbor", "Kestrel", "Atlas", "Summit", "Lattice", "Sable")
_ORG_SUFFIXES = ("Group", "Holdings", "Media", "Partners", "Systems", "Co", "Authority")
_ORG_COLUMNS = frozenset(
    {"brand", "company", "outlet", "publisher", "agency", "court", "carrier", "operator",
     "assignee", "marketplace", "authority", "body", "protocol", "venue", "parties", "source"}
)  # fmt: skip


def _words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(count))


def _day(rng: random.Random, within_days: int = 900) -> date:
    return AS_OF - timedelta(days=rng.randrange(within_days))


def _string(name: str, rng: random.Random) -> str:
    if name in _ORG_COLUMNS:
        return f"{rng.choice(_ORG_WORDS)} {rng.choice(_ORG_SUFFIXES)}"
    if name.endswith("handle"):
        return f"@{rng.choice(WORDS)}{rng.randrange(100, 999)}"
    if name in {"domain", "site"}:
        return f"{rng.choice(WORDS)}{rng.choice(WORDS)}.example"
    if name == "doi":
        return f"10.5555/sbx.{rng.randrange(10**5, 10**6)}"
    if name == "fiscal_quarter":
        return f"{rng.randrange(2019, 2025)}Q{rng.randrange(1, 5)}"
    if name in {"city"}:
        return rng.choice(_CITIES)
    if name in {"region", "zone", "jurisdiction"}:
        return f"{rng.choice(_REGIONS)} {rng.choice(_CITIES)}"
    if name.endswith("address"):
        return "0x" + "".join(rng.choice("0123456789abcdef") for _ in range(40))
    if name in {"origin", "destination"}:
        return "".join(rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(3))
    if name == "postal_code":
        return f"{rng.randrange(10000, 99999)}"
    if name in {"name", "title", "headline", "condition", "category"}:
        return _words(rng, rng.randint(2, 5)).capitalize()
    return _words(rng, 2)


def _integer(name: str, rng: random.Random, row: int) -> int:
    if name == "year":
        return rng.randrange(2010, 2026)
    if name == "rank":
        return row + 1
    if name in {"rating"}:
        return rng.randint(1, 5)
    # Counts of things people do are heavy-tailed.
    return int(10 ** rng.uniform(0, 5))


def _number(name: str, rng: random.Random) -> float:
    if name == "sentiment":
        return round(rng.uniform(-1, 1), 3)
    if name == "rating":
        return round(rng.uniform(1, 5), 1)
    if name in {"rate", "eps"}:
        return round(rng.uniform(0.2, 3), 4)
    return round(rng.uniform(0, 1000), 2)


def value(column: SchemaColumn, rng: random.Random, row: int, category: str) -> Any:
    """One made-up cell of `column`, in the type the schema declares."""
    kind, name = column.type, column.name
    if kind == "id":
        return f"{name.removesuffix('_id') or 'id'}_{rng.randrange(16**8):08x}"
    if kind == "text":
        return _words(rng, rng.randint(30, 70)).capitalize() + "."
    if kind == "integer":
        return _integer(name, rng, row)
    if kind == "number":
        return _number(name, rng)
    if kind == "money":
        return round(10 ** rng.uniform(0, 3), 2)
    if kind == "percent":
        return round(rng.uniform(0, 100), 1)
    if kind == "boolean":
        return rng.random() < 0.7
    if kind == "date":
        return _day(rng).isoformat()
    if kind == "datetime":
        minutes = rng.randrange(24 * 60)
        return f"{_day(rng).isoformat()}T{minutes // 60:02d}:{minutes % 60:02d}:00Z"
    if kind == "url":
        return f"https://data.sandbox.example/{category}/{rng.randrange(10**6)}"
    if kind == "country":
        return rng.choice(_COUNTRIES)
    if kind == "currency":
        return rng.choice(_CURRENCIES)
    if kind == "latitude":
        return round(rng.uniform(-60, 70), 5)
    if kind == "longitude":
        return round(rng.uniform(-180, 180), 5)
    if kind == "ticker":
        return rng.choice(_TICKERS)
    if kind.startswith("enum["):
        return rng.choice(kind[5:-1].split("|"))
    return _string(name, rng)


def rows(
    dataset_id: str, columns: tuple[SchemaColumn, ...], category: str, count: int
) -> list[dict[str, Any]]:
    """The first `count` rows of a dataset; row n is the same whatever `count` is."""
    result = []
    for row in range(count):
        rng = random.Random(f"{dataset_id}/{row}")
        result.append({c.name: value(c, rng, row, category) for c in columns})
    return result


def shorten(row: dict[str, Any]) -> dict[str, Any]:
    """A preview keeps long texts short: a trial shows the shape, not the content."""
    return {
        key: item[: PREVIEW_TEXT_CHARS - 1] + "…"
        if isinstance(item, str) and len(item) > PREVIEW_TEXT_CHARS
        else item
        for key, item in row.items()
    }


# --- bodies ----------------------------------------------------------------------------------

# What each format is delivered as. The sandbox writes no binary files: parquet travels as JSON
# Lines and PDF as the extracted plain text, and `deliveredAs` says so.
DELIVERED_AS = {
    "csv": ("csv", "text/csv; charset=utf-8"),
    "tsv": ("tsv", "text/tab-separated-values; charset=utf-8"),
    "json": ("json", "application/json"),
    "jsonl": ("jsonl", "application/x-ndjson"),
    "parquet": ("jsonl", "application/x-ndjson"),
    "txt": ("txt", "text/plain; charset=utf-8"),
    "md": ("md", "text/markdown; charset=utf-8"),
    "pdf": ("txt", "text/plain; charset=utf-8"),
}


def _delimited(records: list[dict[str, Any]], columns: list[str], delimiter: str) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, delimiter=delimiter, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return out.getvalue()


def _document(record: dict[str, Any], markdown: bool) -> str:
    title = str(record.get("title", record.get("doc_id", "")))
    meta = [f"{k}: {v}" for k, v in record.items() if k not in {"title", "body"}]
    if markdown:
        return f"# {title}\n\n" + "\n".join(f"- {m}" for m in meta) + f"\n\n{record.get('body')}\n"
    return f"{title}\n\n" + "\n".join(meta) + f"\n\n{record.get('body')}\n"


def body(fmt: str, records: list[dict[str, Any]], columns: list[str]) -> str:
    """The delivered records written in the format `DELIVERED_AS[fmt]` names."""
    delivered = DELIVERED_AS[fmt][0]
    if delivered == "csv":
        return _delimited(records, columns, ",")
    if delivered == "tsv":
        return _delimited(records, columns, "\t")
    if delivered == "json":
        return json.dumps(records, ensure_ascii=False, indent=1)
    if delivered == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    separator = "\n---\n\n" if delivered == "md" else "\n\f\n"
    return separator.join(_document(r, delivered == "md") for r in records)
