"""`svc-console wallet fund REQUEST_ID`: headless, what the wallet screen's `f` does for a request
that waits for funds. Over the operator socket (`wallet.fund_start`, `wallet.fund_wait`,
`wallet.fund_retry`): a checkout for what the wallet lacks, its address and a QR code, the wait
until the balance covers what the request was approved for, then its single retry and how it
ended. Each step is printed as the wallet screen words it (`core.funding`).

The checkout's address came from the service: it is printed, and drawn as a QR code, only when it
is a plain http(s) URL (`core.funding.safe_link`), else shown inert and never encoded. Ctrl-C
stops waiting and leaves the request waiting for funds, its one retry kept.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from svc_console.cli.arguments import timeout
from svc_console.cli.errors import EXIT_BY_STATE, EXIT_USAGE, CommandError
from svc_console.cli.operators import identity_options
from svc_console.cli.socket_client import call, connect

DEFAULT_TIMEOUT_S = 900.0
# One `wallet.fund_wait` at most this long (the socket's timeout is a little longer).
WAIT_CHUNK_S = 60.0
# How long the retry itself may take before the command stops watching it.
RETRY_WAIT_S = 300.0
SOCKET_SLACK_S = 30.0
# Starting reads the balance and asks for a checkout: two calls to the service.
START_WAIT_S = 60.0
EXIT_UNDECIDED = 9  # re-priced: back in the approvals queue (as `agent submit --wait`'s 9)
# Black on white whatever the terminal's colours: scanners expect dark modules on a light ground.
_QR_ON, _QR_OFF = "\x1b[30;47m", "\x1b[0m"


def add_commands(commands: Any) -> None:
    wallet = commands.add_parser(
        "wallet", help="the wallet: fund a request that waits for funds"
    ).add_subparsers(title="wallet commands", metavar="COMMAND", required=True)
    fund = wallet.add_parser(
        "fund",
        help="a checkout for what a request awaiting funds lacks, the wait, then its one retry",
        description="Start a funding checkout for what the request lacks (its address and a QR"
        " code are printed), wait until the balance covers what it was approved for, then retry"
        " it once. Ctrl-C stops waiting; the request keeps waiting for funds.",
    )
    fund.add_argument("request_id")
    fund.add_argument(
        "--timeout",
        type=timeout,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long to wait for the funds (default {DEFAULT_TIMEOUT_S:g})",
    )
    identity_options(fund, "with operator accounts: who funds it")
    fund.set_defaults(run=run_fund)


def run_fund(args: argparse.Namespace) -> int:
    from svc_console.cli.approvals import as_operator

    with connect(None, operator=True) as line:
        who = as_operator(line, args, {}, passphrase=False)
        funding = _Funding(line, args.request_id, who)
        try:
            return funding.run(args.timeout)
        except KeyboardInterrupt:
            print(f"svc-console: {funding.interrupted()}", file=sys.stderr)
            return 130


class _Funding:
    """One run of the flow: the operator socket's answers applied to a `FundingFlow`, each new
    step printed."""

    def __init__(self, line: Any, request_id: str, who: dict[str, Any]):
        from svc_console.core.sanitize import inert_line

        self.line, self.request_id, self.who = line, request_id, who  # who: the operator
        self.shown_id = inert_line(request_id, 100)  # as typed: said back inert
        self.flow: Any = None
        self.retry_asked = False

    def _call(self, method: str, params: dict[str, Any], wait_s: float = 0.0) -> Any:
        params = {"request_id": self.request_id, **self.who, **params}
        timeout = wait_s + SOCKET_SLACK_S if wait_s else None
        return call(lambda: self.line.call(method, params, timeout_s=timeout))

    def _say(self, stage: Any) -> None:
        from svc_console.core.funding import step_line

        print(f"{stage.value} {step_line(self.flow, stage)[0]}", flush=True)

    def run(self, timeout_s: float) -> int:
        from svc_console.core.funding import Stage

        self._start()
        if self.flow.stage == Stage.waiting:
            self._wait_for_funds(timeout_s)
        self._say(Stage.funded)
        return self._retry()

    def _start(self) -> None:
        from decimal import Decimal

        from svc_console.core.funding import FundingFlow, Stage
        from svc_console.core.models import FundingCheckout

        started = self._call("wallet.fund_start", {}, START_WAIT_S)
        balance = Decimal(started["balance_usdc"])
        flow = FundingFlow(self.request_id, Decimal(started["required_usdc"]), balance=balance)
        if started["checkout"] is None:
            self.flow = flow.covered_already(balance)
            self._say(Stage.checkout)
            return
        self.flow = flow.checkout_started(FundingCheckout.model_validate(started["checkout"]))
        self._say(Stage.checkout)
        self._show_checkout()
        self._say(Stage.waiting)

    def _show_checkout(self) -> None:
        from svc_console.core.sanitize import inert_line

        link = self.flow.link
        if link is None:
            shown = inert_line(self.flow.checkout.checkout_url, 200)
            print(f"  {shown}")
            print("  (not a plain http(s) address: open it only if you trust it; no QR code)")
            return
        print(f"  {link}")
        print("  open it in a browser, or scan the code:", flush=True)
        print(_qr(link), flush=True)

    def _wait_for_funds(self, timeout_s: float) -> None:
        from decimal import Decimal

        from svc_console.core.sanitize import inert_line

        deadline = time.monotonic() + timeout_s
        while (remaining := deadline - time.monotonic()) > 0:
            chunk = min(remaining, WAIT_CHUNK_S)
            seen = self.flow.balance
            params = {"timeout_s": chunk, "balance_usdc": None if seen is None else str(seen)}
            waited = self._call("wallet.fund_wait", params, chunk)
            if waited["state"] != "awaiting_funds":
                raise CommandError(
                    f"{self.shown_id} is now {waited['state']}: it no longer waits for funds",
                    EXIT_USAGE,
                )
            if waited.get("note"):
                print(f"  {inert_line(waited['note'], 300)}", flush=True)
            balance = waited["balance_usdc"]
            if balance is not None and waited["covered"]:
                self.flow = self.flow.funded(Decimal(balance))
                return
            if balance is not None and Decimal(balance) != seen:
                from svc_console.core.funding import Stage

                self.flow = self.flow.seen_balance(Decimal(balance))
                self._say(Stage.waiting)
        raise CommandError(
            f"no funds arrived within {timeout_s:g} s: {self.shown_id} still waits for funds"
            " (its one retry kept); run this again once the checkout is paid",
            EXIT_USAGE,
        )

    def _retry(self) -> int:
        from svc_console.core.funding import Stage
        from svc_console.core.models import SpendRequest

        self._say(Stage.retrying)  # "retrying once"
        self.retry_asked = True
        done = self._call("wallet.fund_retry", {"timeout_s": RETRY_WAIT_S}, RETRY_WAIT_S)
        request = SpendRequest.model_validate(done)
        if request.state in ("awaiting_funds", "executing"):
            raise CommandError(
                f"the retry of {self.shown_id} had not ended after {RETRY_WAIT_S:g} s; see"
                " svc-console approvals list --history",
                EXIT_USAGE,
            )
        self.flow = self.flow.retrying().settled(request)
        self._say(Stage.done)
        return EXIT_BY_STATE.get(request.state, EXIT_UNDECIDED)

    def interrupted(self) -> str:
        """What Ctrl-C left behind, in one line."""
        if self.retry_asked:
            return (
                f"stopped watching: the retry of {self.shown_id} goes on in the console;"
                " see svc-console approvals list --history"
            )
        return f"stopped waiting: {self.shown_id} still waits for funds (its one retry kept)"


def _qr(link: str) -> str:
    """The address as a QR code: black on white on a terminal that takes colours, else plain
    (dark modules drawn)."""
    from svc_console.services.qr import qr_lines

    lines = qr_lines(link, border=2)
    if sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        lines = [f"{_QR_ON}{line}{_QR_OFF}" for line in lines]
    return "\n".join(lines)
