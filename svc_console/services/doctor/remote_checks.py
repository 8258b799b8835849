"""The doctor's checks of the configured service: the marketplace and the wallet proxy answer,
this clock agrees with the service's `Date`, and the wallet holds what a day of approvals takes.
With no service configured (the sandbox) there is nothing to reach."""

from __future__ import annotations

import asyncio
import email.utils
import time
from decimal import Decimal

import httpx

from svc_console.config.errors import SettingsError
from svc_console.config.paths import Paths
from svc_console.config.service import ServiceConfig, configured_ledger, service_config
from svc_console.core.money import format_usdc, from_atomic
from svc_console.core.sanitize import inert_line
from svc_console.services.doctor.findings import Finding, note, ok, serious, warning

DAY_S = 86_400.0
SKEW_WARN_S = 30.0  # beyond this, validity windows (x402's, a mandate's) start to bite
SKEW_SERIOUS_S = 300.0
CLOCK_FIX = "synchronise this host's clock (chrony, systemd-timesyncd)"


def examine(paths: Paths, timeout_s: float) -> list[Finding]:
    try:
        service = service_config(paths)
    except SettingsError as exc:
        return [serious("service", str(exc), "run svc-console login and svc-console connect")]
    if service is None:
        return [note("service", "no service configured: the console runs the embedded sandbox")]
    found = _reach(service.base_url, "service", timeout_s)
    found += _reach(service.wallet_api_base, "wallet-proxy", timeout_s)[:1]
    if found[0].level == "ok":
        found.append(_balance(paths, service, timeout_s))
    return found


def _reach(url: str, check: str, timeout_s: float) -> list[Finding]:
    """Whether `url` answers at all (any HTTP status), and the clock against its `Date`."""
    shown = inert_line(url, 200)
    sent = time.time()
    try:
        with httpx.Client(timeout=timeout_s, follow_redirects=False) as client:
            response = client.get(url)
    except httpx.HTTPError as exc:
        return [
            serious(
                check,
                f"{shown} does not answer: {inert_line(exc, 200) or type(exc).__name__}",
                "check the address (SVC_BASE_URL, [service] in settings.toml, the wallet config)"
                " and this host's network",
            )
        ]
    found = [ok(check, f"{shown} answers (HTTP {response.status_code})")]
    date = response.headers.get("date")
    if date:
        found.append(skew_finding(email.utils.parsedate_to_datetime(date).timestamp(), sent))
    return found


def skew_finding(their_time: float, our_time: float) -> Finding:
    """This clock against the service's (its `Date` has whole seconds: a second is no skew)."""
    skew = our_time - their_time
    said = f"this clock is {abs(skew):.0f} s {'ahead of' if skew > 0 else 'behind'} the service's"
    if abs(skew) > SKEW_SERIOUS_S:
        return serious("clock", said + ": payments' validity windows will be refused", CLOCK_FIX)
    if abs(skew) > SKEW_WARN_S:
        return warning("clock", said, CLOCK_FIX)
    return ok("clock", "this clock agrees with the service's (within 30 s)")


def _balance(paths: Paths, service: ServiceConfig, timeout_s: float) -> Finding:
    from svc_console.market.account import AccountClient
    from svc_console.market.errors import MarketError

    async def read() -> Decimal:
        async with AccountClient(
            service.base_url, api_key=service.api_key, timeout_s=timeout_s
        ) as client:
            return (await client.wallets()).balance_usdc

    try:
        balance = asyncio.run(read())
    except (MarketError, httpx.HTTPError) as exc:
        return warning(
            "balance", f"the wallet's balance cannot be read: {inert_line(exc, 200)}", "check it"
        )
    day = approved_last_day(paths)
    said = f"the wallet holds {format_usdc(balance)} USDC; the last day approved {format_usdc(day)}"
    if balance < day:
        return warning(
            "balance",
            said + ": at that pace it runs dry within a day (requests then wait for funds)",
            "fund the wallet: the wallet screen's f, or svc-console wallet fund ID",
        )
    return ok("balance", said)


def approved_last_day(paths: Paths, now: float | None = None) -> Decimal:
    """The ceilings approved in the last day: what the next day is likely to need."""
    from svc_console.config.service import configured_ledger_url
    from svc_console.ledger.audit import AuditError, open_read_only

    since = (time.time() if now is None else now) - DAY_S
    try:
        conn = open_read_only(configured_ledger(paths), configured_ledger_url(paths))
    except (AuditError, SettingsError):
        return Decimal(0)
    try:
        row = conn.execute(
            f"SELECT sum(ceiling_usdc) FROM decisions WHERE approved = 1 AND at >= {float(since)!r}"
        ).fetchone()
    finally:
        conn.close()
    return from_atomic(int(row[0] or 0))
