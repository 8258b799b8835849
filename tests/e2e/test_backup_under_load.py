"""A backup made while 200 agents submit is one moment of the ledger: restored into a new home
(with the audit key alone carried over), its chain verifies and every request the broker had
acknowledged before the backup began is in it, none the broker never made."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from load_agents import Connection

from svc_console.cli import main
from svc_console.config.audit_key import key_file
from svc_console.runtime import Runtime

AGENTS = 200
CLI = [sys.executable, "-m", "svc_console"]
ROUNDS = 3  # requests per agent: the backup is made once the first round is acknowledged


def request_ids(path: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {row[0] for row in conn.execute("SELECT id FROM requests")}
    finally:
        conn.close()


@pytest.fixture
def new_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="svc-new-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


async def submit(connection: Connection, acknowledged: list[str], first_round: asyncio.Event):
    for n in range(ROUNDS):
        ticket = await connection.call(
            "spend.submit",
            {
                "agent": connection.name,
                "kind": "market_call",
                "endpoint_id": "ep_websearch_basic",
                "inputs": {"query": f"{connection.name} asks {n}"},
                "purpose": "backup under load",
                "idempotency_key": f"{connection.name}-{n}",
            },
        )
        acknowledged.append(ticket["request_id"])
        if len(acknowledged) >= AGENTS:
            first_round.set()


async def test_a_backup_made_while_agents_submit_restores_whole_and_verifies(
    runtime: Runtime,
    runtime_ledger_url: str | None,
    tmp_path: Path,
    new_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    if runtime_ledger_url is not None:
        pytest.skip("a ledger on PostgreSQL is backed up with pg_dump (docs/operations.md)")
    ledger = runtime.paths.ledger(sandbox=True)
    connections = [Connection(f"backup-{n:03d}") for n in range(AGENTS)]
    await asyncio.gather(*(c.open(str(runtime.paths.socket)) for c in connections))
    acknowledged: list[str] = []
    first_round = asyncio.Event()
    submitting = asyncio.gather(*(submit(c, acknowledged, first_round) for c in connections))
    try:
        await first_round.wait()
        before = set(acknowledged)
        copy = tmp_path / "under-load.db"
        backup = await asyncio.create_subprocess_exec(
            *CLI, "ledger", "backup", str(copy), stdout=asyncio.subprocess.PIPE
        )
        said, _ = await backup.communicate()
        assert backup.returncode == 0
        assert b"verified with the ledger's audit key" in said
        await submitting
    finally:
        for connection in connections:
            connection.close()
    assert len(acknowledged) == AGENTS * ROUNDS

    shutil.copy2(key_file(ledger), key_file(new_home / ledger.name))
    monkeypatch.setenv("SVC_CONSOLE_HOME", str(new_home))
    assert main(["ledger", "restore", str(copy)]) == 0
    restored = request_ids(new_home / ledger.name)
    assert before <= restored, "every request acknowledged before the backup is in it"
    assert restored <= set(acknowledged)
    capsys.readouterr()
    assert main(["audit", "verify"]) == 0
    assert "chain intact, tables agree" in capsys.readouterr().out
