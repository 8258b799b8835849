"""The sandbox marketplace in a process of its own, for tests that want the console's process to
themselves: the broker and the sandbox then run on two cores instead of sharing one interpreter,
and what the console's process holds (its memory, its CPU) is the console's alone.

    python tests/sandbox_process.py HOME

serves the sandbox (`SandboxServer`, the code `svc-console sandbox` serves) on a free loopback
port, writes its credentials owner-only to HOME/sandbox/credentials.json, prints `ready`, and reads
commands on stdin, one a line: `balance X` sets the fake wallet's balance and answers `ok` (the
marketplace has no route for that; a test empties or fills a wallet this way). It stops when stdin
closes.

`SandboxProcess` starts it and speaks to it: the fault switch (`POST /sandbox/faults`) and the
usage history (`GET /api/agent/usage`) over HTTP with the API key, the balance over stdin, and
`stand_in` is what `Runtime(sandbox=...)` needs to use it as the console's marketplace.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx

_WIRE = {"delay_ms": "delayMs", "endpoint_id": "endpointId"}


@dataclass(frozen=True)
class Charge:
    """One charge of the usage history: what the wallet paid, for which idempotency key."""

    id: str
    idempotency_key: str
    price_usdc: Decimal
    chain: str


class SandboxProcess:
    def __init__(self, home: Path):
        self.home = home
        self._charges: list[Charge] = []
        self._cursor: str | None = None

    def start(self) -> SandboxProcess:
        self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._stderr = open(self.home / "sandbox.err", "w")  # noqa: SIM115 (lives with the process)
        self.process = subprocess.Popen(
            [sys.executable, __file__, str(self.home)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != "ready":
            self.stop()
            raise RuntimeError(f"the sandbox did not start: {self.errors()[-2000:]}")
        found = json.loads((self.home / "sandbox" / "credentials.json").read_text())
        self.base_url, self.username = found["base_url"], found["username"]
        self.api_key, self.api_token = found["api_key"], found["api_token"]
        self.http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {self.api_key}"},
            timeout=30,
        )
        return self

    def stop(self, *, graceful: bool = True) -> None:
        """Stdin closed, for a graceful stop (the calls it is serving end first, or five seconds
        pass); `graceful=False` once the test has what it needs from the calls still held (by a
        latency fault, say): killed."""
        if getattr(self, "http", None) is not None:
            self.http.close()
        if not graceful:
            self.process.kill()
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._stderr.close()

    def errors(self) -> str:
        return (self.home / "sandbox.err").read_text(errors="replace")

    @property
    def stand_in(self) -> Any:
        """What a `Runtime` reads of an embedded sandbox it did not start."""
        state = SimpleNamespace(
            api_key=self.api_key, username=self.username, api_token=self.api_token
        )
        return SimpleNamespace(base_url=self.base_url, state=state)

    # -- the wallet ---------------------------------------------------------------------------

    def set_balance(self, amount: Decimal | int | str) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"balance {amount}\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        if answer != "ok":
            raise RuntimeError(f"the sandbox refused the balance: {answer}")

    def balance(self) -> Decimal:
        return Decimal(
            self.http.get("/api/agent/usage", params={"limit": "1"}).json()["balanceUsdc"]
        )

    # -- the fault switch ---------------------------------------------------------------------

    def add_fault(self, kind: str, **options: Any) -> str:
        body = {
            _WIRE.get(k, k): (str(v) if isinstance(v, Decimal) else v) for k, v in options.items()
        }
        answer = self.http.post("/sandbox/faults", json={"kind": kind, **body})
        if answer.status_code != 201:
            raise RuntimeError(f"the fault switch refused {kind}: {answer.text[:300]}")
        return answer.json()["fault"]["id"]

    def set_fault(self, kind: str, **options: Any) -> str:
        self.clear_faults()
        return self.add_fault(kind, **options)

    def clear_faults(self) -> None:
        self.http.delete("/sandbox/faults").raise_for_status()

    def faults(self) -> list[dict[str, Any]]:
        return self.http.get("/sandbox/faults").json()["faults"]

    # -- what was charged ---------------------------------------------------------------------

    def charges(self) -> list[Charge]:
        """Every charge so far, oldest first (read from where the last call stopped)."""
        while True:
            params = {"limit": "200", **({"cursor": self._cursor} if self._cursor else {})}
            page = self.http.get("/api/agent/usage", params=params).json()
            for entry in page["charges"]:
                self._charges.append(
                    Charge(
                        id=entry["id"],
                        idempotency_key=entry["idempotencyKey"],
                        price_usdc=Decimal(entry["amountUsdc"]),
                        chain=entry["chain"],
                    )
                )
                self._cursor = entry["id"]
            if not page["nextCursor"]:
                return list(self._charges)


def _serve(home: Path) -> None:
    from svc_console.sandbox.server import SandboxServer, write_credentials
    from svc_console.sandbox.state import SandboxState

    state = SandboxState(outbox=home / "sandbox" / "outbox")
    server = SandboxServer(state)
    server.start()
    try:
        write_credentials(home / "sandbox" / "credentials.json", state.credentials())
        print("ready", flush=True)
        for line in sys.stdin:
            command, _, argument = line.strip().partition(" ")
            if command == "balance":
                state.set_balance(argument)
                print("ok", flush=True)
            else:
                print(f"unknown command {command[:40]!r}", flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    _serve(Path(sys.argv[1]))
