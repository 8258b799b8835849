"""The broker process the PostgreSQL benchmarks drive, started fresh by `pg_fleet.py` (their
agents are `hosts.py agents`, given each broker's socket):

    python pg_hosts.py serve --home DIR --sandbox CREDENTIALS --policy FILE [--ledger-url URL]

`serve` is `svc-console serve` itself (the command's code, `cli.main(["serve", ...])`), configured
for the sandbox farm as for any real service (SVC_BASE_URL, SVC_API_KEY, SVC_WALLET_CONFIG), so
that SVC_LEDGER_URL puts its ledger on PostgreSQL as it would a team's. The only addition is the
broker listener `hosts.py broker` has (what the approvals screen is told), subscribed the moment
the runtime has started: it prints `<request id> <state> <CLOCK_MONOTONIC ns>` when a request
becomes visible decided, so the figures are measured as the SQLite ones are. The command's own
lines go to stderr (the broker's log file); stdout carries only `ready`, those lines and `cpu`.
Closing stdin stops it as SIGTERM stops `svc-console serve`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import policy_engine
from hosts import decided_printer

SETTINGS = '[agents]\nenrolment = "open"\n'


def _configure(args: argparse.Namespace) -> None:
    """The environment `svc-console serve` reads: this home, the farm as the service, and the
    ledger's URL when it is on PostgreSQL."""
    home = Path(args.home)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    found = json.loads(Path(args.sandbox).read_text())
    wallet = home / "wallet.json"
    if not wallet.exists():
        fd = os.open(wallet, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(
                {
                    "username": found["username"],
                    "apiToken": found["api_token"],
                    "apiBase": found["wallet_api_base"],
                },
                out,
            )
    # The load agents run as this user, by name: open enrolment, as the sandbox has it.
    settings = home / "settings.toml"
    if not settings.exists():
        settings.write_text(SETTINGS)
    for name in [k for k in os.environ if k.startswith("SVC_")]:
        del os.environ[name]
    os.environ.update(
        SVC_CONSOLE_HOME=str(home),
        SVC_BASE_URL=found["base_url"],
        SVC_API_KEY=found["api_key"],
        SVC_WALLET_CONFIG=str(wallet),
    )
    if args.ledger_url:
        os.environ["SVC_LEDGER_URL"] = args.ledger_url


def _watch(broker: Any, runtime: Any, out: Any, engine: str) -> None:
    """Print each request as it becomes visible decided; answer `cpu`; stop when stdin closes."""
    loop = asyncio.get_running_loop()
    visible = decided_printer(out, loop)

    def report_cpu() -> None:
        times = os.times()
        out.write(f"cpu {times.user + times.system}\n")
        out.flush()

    def read_stdin() -> None:
        for line in sys.stdin:
            if line.strip() == "cpu":
                loop.call_soon_threadsafe(report_cpu)
        # As an operator stops `svc-console serve`: the command's own handler shuts it down.
        # Sent from the loop, so never before the command has put that handler in place.
        loop.call_soon_threadsafe(os.kill, os.getpid(), signal.SIGTERM)

    broker.subscribe(visible)
    out.write(f"ready {runtime.paths.socket} {json.dumps(engine)}\n")
    out.flush()
    threading.Thread(target=read_stdin, daemon=True, name="stdin-watch").start()


def _serve(args: argparse.Namespace) -> int:
    _configure(args)
    from svc_console.cli.entry import main as command
    from svc_console.runtime import Runtime

    where = "PostgreSQL" if args.ledger_url else "SQLite"
    engine = f"{policy_engine.describe(Path(args.policy))}; ledger on {where}"
    out = sys.stdout
    sys.stdout = sys.stderr
    start = Runtime.start

    async def start_and_watch(self: Runtime) -> Any:
        broker = await start(self)
        _watch(broker, self, out, engine)
        return broker

    Runtime.start = start_and_watch  # type: ignore[method-assign]
    return command(["serve", "--policy", args.policy])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    modes = parser.add_subparsers(dest="mode", required=True)
    serve = modes.add_parser("serve")
    serve.add_argument("--home", required=True)
    serve.add_argument("--sandbox", required=True, help="the farm's credentials.json")
    serve.add_argument("--policy", required=True, help="a SKILLS.md policy file")
    serve.add_argument("--ledger-url", help="a PostgreSQL URL (default: the SQLite file)")
    args = parser.parse_args()
    sys.exit(_serve(args))


if __name__ == "__main__":
    main()
