"""The two lines under the usage table about the selected charge: what was paid, to whom, where
and with which receipt; then whether an approval covers it, and which.

Every string in a row comes from the service or from agents: each goes through
`core.sanitize.inert_line` into `Text`, never parsed as markup.
"""

from __future__ import annotations

from rich.text import Text

from svc_console.core.sanitize import inert_line
from svc_console.core.taxonomy import domain_label
from svc_console.core.usage import Reconciled, iso_instant
from svc_console.ledger.usage_query import UsageRow
from svc_console.tui.colors import Palette
from svc_console.tui.usage.table import state_label, usdc


def short(reference: str | None) -> str:
    """A long transaction reference as its two ends ("0xa21b11ed…3f2a")."""
    if not reference:
        return "-"
    text = inert_line(reference, 200)
    return text if len(text) <= 16 else f"{text[:10]}…{text[-4:]}"


def provider_words(row: UsageRow, name: str | None) -> str:
    """The provider by name with its id ("Exa Search · prov_exa"), or its id alone."""
    provider = inert_line(row.provider or "-", 30)
    if name and name != row.provider:
        provider = f"{inert_line(name, 40)} · {provider}"
    if row.domain_type:
        provider += f", {inert_line(row.domain_type, 8)} {domain_label(row.domain_type)}"
    return provider


def detail_text(row: UsageRow, colours: Palette, provider_name: str | None = None) -> Text:
    what = Text.assemble(
        (inert_line(row.id, 30), "bold"),
        f" · {inert_line(row.service, 24)}" if row.service is not None else "",
        f" · {iso_instant(row.at)} · ",
        inert_line(row.agent or "-", 30),
        " → ",
        inert_line(row.resource, 40),
        f" ({provider_words(row, provider_name)})",
        f" · {inert_line(row.chain, 12)} {inert_line(row.protocol, 6)}",
        f" · receipt {short(row.receipt)}",
    )
    if row.request_id is not None:
        decided = f"{row.decision or 'undecided'} by {inert_line(row.decided_by or '-', 30)}"
        request = inert_line(row.request_id, 30)
        ledger = f"request {request} {decided}, ceiling {usdc(row.ceiling)}"
    else:
        ledger = f"idempotency key {inert_line(row.idempotency_key or 'none', 40)}"
    charged = f"charged {usdc(row.amount)} USDC"
    if row.state == Reconciled.ok:
        why = Text.assemble(("covered", colours.good), f": {charged}; {ledger}")
    else:
        label = state_label(row)
        if row.version > 1:
            label += f" (version {row.version})"
        why = Text.assemble((f"{label}: {row.flag_text}", colours.high), f" · {charged}; {ledger}")
    # One line each, cut at the edge: the reconciliation line must never be pushed out.
    return Text("\n", no_wrap=True, overflow="ellipsis").join([what, why])
