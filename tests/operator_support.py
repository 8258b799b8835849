"""The operator's side in tests: `svc-console serve` and the queue as `approvals list` gives it,
the passphrase typed on a terminal, as a person types it, and what the console kept of refused
tries.

The CLI reads the passphrase from its controlling terminal only, never from stdin, an argument or
the environment. `run_typing` gives the command a pseudo-terminal of its own as that terminal
(its output still goes to pipes, read apart) and types the passphrase at each prompt.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from svc_console.config.operator_passphrase import OperatorPassphrase

CLI = [sys.executable, "-m", "svc_console"]
PASSPHRASE = "the operator's own words"
PROMPT = "passphrase: "


@contextlib.contextmanager
def serving() -> Iterator[subprocess.Popen[str]]:
    """`svc-console serve` on the test's home, from its banner on; stopped after."""
    server = subprocess.Popen(
        [*CLI, "serve"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        assert "broker on" in server.stdout.readline(), server.stderr and server.stderr.read()
        yield server
    finally:
        server.terminate()
        server.wait(timeout=10)


def pending_ids() -> list[str]:
    """The waiting requests' ids, as `svc-console approvals list --json` gives them."""
    listing = subprocess.run(
        [*CLI, "approvals", "list", "--json"], capture_output=True, text=True, timeout=60
    )
    assert listing.returncode == 0, listing.stderr
    return [request["id"] for request in json.loads(listing.stdout)]


def set_passphrase(home: Path, passphrase: str = PASSPHRASE) -> str:
    """Set the home's operator passphrase (before the console starts, which reads it then)."""
    OperatorPassphrase(home / "operator.passphrase").set(passphrase)
    return passphrase


class PassphraseTerminal:
    """A pseudo-terminal a command takes as its controlling terminal (`preexec`), on which the
    passphrase is typed at each prompt; `close` once the command has ended."""

    def __init__(self, passphrase: str = PASSPHRASE):
        self.controller, self._terminal = pty.openpty()
        self._name = os.ttyname(self._terminal)
        self.seen: list[str] = []
        self._typer = threading.Thread(
            target=_type_at_prompts, args=(self.controller, passphrase, self.seen), daemon=True
        )
        self._typer.start()

    def preexec(self) -> None:  # in the child: a session whose terminal is the pty
        os.setsid()
        os.close(os.open(self._name, os.O_RDWR))

    def close(self) -> None:
        # Held open until now, so that the terminal lives as long as the command; closed, its
        # reader sees the end.
        os.close(self._terminal)
        self._typer.join(timeout=10)
        os.close(self.controller)


def run_typing(
    args: Sequence[str],
    passphrase: str = PASSPHRASE,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
    program: Sequence[str] = CLI,
) -> subprocess.CompletedProcess[str]:
    """`svc-console *args` (or `program *args`) on a terminal of its own, the passphrase typed at
    each prompt; the terminal's output is in `.terminal`, stdout and stderr as usual."""
    terminal = PassphraseTerminal(passphrase)
    try:
        process = subprocess.Popen(
            [*program, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(env) if env is not None else None,
            preexec_fn=terminal.preexec,
        )
        out, err = process.communicate(timeout=timeout)
    finally:
        terminal.close()
    result = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    result.terminal = "".join(terminal.seen)  # type: ignore[attr-defined]
    return result


def _type_at_prompts(controller: int, passphrase: str, seen: list[str]) -> None:
    """Read the terminal until the command closes it; type the passphrase at every prompt."""
    answered = 0
    while True:
        try:
            chunk = os.read(controller, 1024)
        except OSError:  # EIO: the command ended and its terminal closed
            return
        if not chunk:
            return
        seen.append(chunk.decode(errors="replace"))
        prompts = "".join(seen).count(PROMPT)
        while answered < prompts:
            os.write(controller, passphrase.encode() + b"\r")
            answered += 1


async def operator_cli(
    home: Path, *args: str, passphrase: str = PASSPHRASE
) -> subprocess.CompletedProcess[str]:
    """`run_typing` in a thread, for a test whose console runs on the test's own loop."""
    import asyncio

    env = {**os.environ, "SVC_CONSOLE_HOME": str(home)}
    return await asyncio.to_thread(run_typing, args, passphrase, env=env)


def refused_reasons(runtime: Any) -> Counter[str]:
    """Every refused decision the console kept, by reason: each burst's first, whole, and the
    count of the rest (`refusal_log.RefusalAudit`), the bursts under way written first."""
    runtime.broker.decisions.refusals.flush(everything=True)
    rows = runtime.ledger.db.execute(
        "SELECT type, data FROM events WHERE type IN ('decision_refused', 'decisions_refused')"
    ).fetchall()
    reasons: Counter[str] = Counter()
    for kind, data in rows:
        said = json.loads(data)
        if kind == "decision_refused":
            reasons[said["reason"]] += 1
        else:
            reasons.update(said["reasons"])
    return reasons


def past_the_wait(runtime: Any, clock: Any) -> None:
    """Step the console's clock past the wait wrong credentials earned this test's uid (only
    that far: a longer quiet would end the burst its refusals are counted in)."""
    clock.advance(runtime.operator_socket.methods.proof.backoff.retry_in(os.getuid()))


# The operator socket's methods that act (and so take the passphrase); the others only read.
ACTS = frozenset(
    {
        "approvals.approve", "approvals.deny", "approvals.approve_many", "approvals.deny_many",
        "wallet.fund_start", "wallet.fund_wait", "wallet.fund_retry", "agents.resume",
        "grants.revoke",
    }
)  # fmt: skip


class KnowingThePassphrase:
    """An operator's connection that sends the passphrase with every act, as the CLI does."""

    def __init__(self, line: Any, passphrase: str = PASSPHRASE):
        self._line, self._passphrase = line, passphrase

    def __getattr__(self, name: str) -> Any:
        return getattr(self._line, name)

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        if method in ACTS:
            params = {**params, "passphrase": self._passphrase}
        return await self._line.call(method, params)


@contextlib.asynccontextmanager
async def operator_knowing(runtime: Any) -> AsyncIterator[KnowingThePassphrase]:
    """`helpers.operator(runtime)`, by an operator who knows the passphrase: where none was set
    before the console started, one is set in its own process, as its TUI sets one."""
    from helpers import operator

    if not runtime.passphrase.is_set():
        runtime.passphrase.set(PASSPHRASE)
    async with operator(runtime) as line:
        yield KnowingThePassphrase(line)


def once_past_the_wait(
    command: Callable[[], subprocess.CompletedProcess[str]], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """`command` (an operator's, right after a wrong credential against a console in another
    process, whose clock the test cannot move) run until the console checks it: a try refused
    for the wait is not checked, so trying again changes nothing but the answer once it ends."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        done = command()
        if "try again in" not in done.stderr or time.monotonic() > deadline:
            return done
        time.sleep(0.1)
