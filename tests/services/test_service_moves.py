"""The operator's files moved into the service's home and back: every key, the ledger, its audit
key and the policies go, nothing of them stays behind, the service's user owns them alone, the
ledger's chain verifies where it lands, and a move that cannot be completed puts everything back."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import stat
import tempfile
from pathlib import Path

import pytest

from svc_console.cli.errors import CommandError
from svc_console.cli.service_steps import carry_out
from svc_console.ledger import Ledger
from svc_console.services import service_moves as moves_of
from svc_console.services.service_moves import Move, Where
from svc_console.services.service_plan import Operator, install_plan
from svc_console.services.service_unit import ServiceLayout

SERVICE_UID = 64998  # a uid with no name, as the service's user
SECRETS = ("credentials.json", "operator.passphrase", "operators.json", "agents.json", "SKILLS.md")


def _ledger(path: Path) -> None:
    """A ledger with events, its audit key beside it (no keyring here)."""
    from svc_console.core.models import SpendRequest
    from svc_console.core.states import State

    ledger = Ledger(path)
    try:
        at = 1_795_000_000.0
        request = SpendRequest(
            id="req_1",
            agent="bot",
            kind="market_call",
            endpoint_id="ep_websearch_basic",
            inputs={"query": "q"},
            purpose="p",
            state=State.received,
            created_at=at,
            updated_at=at,
        )
        ledger.insert_request(request)
        ledger.transition("req_1", State.inspecting, at=at + 1)
    finally:
        ledger.close()


def _bind_in(bound: socket.socket, folder: Path, name: str) -> None:
    """Bind `bound` at `folder/name` by a path relative to the folder: the folder's own path
    may pass the 107 bytes a socket's path may hold."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        bound.bind(name)
    finally:
        os.chdir(before)


@pytest.fixture
def operator_side(tmp_path: Path) -> Where:
    """An operator's `~` with the console's home in it (no SVC_CONSOLE_HOME), and the spec's
    wallet files in `~`."""
    user_home = tmp_path / "alice"
    home = user_home / ".local" / "share" / "svc-console"
    home.mkdir(parents=True, mode=0o700)
    _ledger(home / "ledger.db")
    for name in SECRETS:
        (home / name).write_text("{}")
    (home / "logs").mkdir()
    (home / "logs" / "console.log").write_text("the operator's")
    (user_home / ".svc-agentwallet").mkdir(mode=0o700)
    (user_home / ".svc-agentwallet" / "config.json").write_text('{"apiToken": "t"}')
    (user_home / ".svc-wallet.json").write_text('{"privateKey": "k"}')
    return Where(home, user_home)


def _moves_in(where: Where, service_home: Path) -> list[Move]:
    present = {path for path in where.wallet_files if path.exists()}
    return moves_of.moves_in(where, service_home, moves_of.listing(where.home), present)


@pytest.fixture
def as_root() -> None:
    if os.getuid() != 0:
        pytest.skip("giving files to another uid needs root")


def test_everything_moves_owned_by_the_service_alone_and_moves_back(
    operator_side, tmp_path, as_root
):
    where, service_home = operator_side, tmp_path / "service"
    with socket.socket(socket.AF_UNIX) as bound:  # a console's socket is not moved
        # Bound from its folder: the home's full path may pass a socket path's 107 bytes.
        _bind_in(bound, where.home, "svc.sock")
        moves = _moves_in(where, service_home)
        assert moves_of.problems(moves) == []
        moves_of.move_all(moves, (SERVICE_UID, SERVICE_UID))
        assert moves_of.verify_ledgers(moves_of.ledgers(moves)) is None
        # Nothing but the operator's logs and the socket stays behind.
        assert sorted(p.name for p in where.home.iterdir()) == ["logs", "svc.sock"]
        assert not (where.user_home / ".svc-wallet.json").exists()
        assert not (where.user_home / ".svc-agentwallet" / "config.json").exists()
    landed = [service_home, *service_home.rglob("*")]
    assert {p.name for p in landed} >= {*SECRETS, "ledger.db", "ledger.db.key", "config.json"}
    for path in landed:
        info = path.lstat()
        assert info.st_uid == SERVICE_UID and not stat.S_IMODE(info.st_mode) & 0o077, path

    back = moves_of.moves_back(where, service_home, moves_of.listing(service_home))
    assert moves_of.problems(back) == []
    moves_of.move_all(back, (os.getuid(), os.getgid()))
    assert moves_of.verify_ledgers(moves_of.ledgers(back)) is None
    assert list(service_home.iterdir()) == []
    assert json.loads((where.user_home / ".svc-wallet.json").read_text()) == {"privateKey": "k"}
    assert (where.user_home / ".svc-agentwallet" / "config.json").exists()
    assert {*SECRETS, "ledger.db", "ledger.db.key"} <= {p.name for p in where.home.iterdir()}


def test_a_ledger_that_does_not_verify_where_it_lands_is_put_back(operator_side, as_root):
    where = operator_side
    conn = sqlite3.connect(where.home / "ledger.db")
    with conn:  # an edit the chain does not cover
        conn.execute("UPDATE events SET at = at + 1 WHERE seq = 1")
    conn.close()
    before = sorted(p.name for p in where.home.iterdir())
    service_home = Path(tempfile.mkdtemp(prefix="svc-moves-"))
    layout = ServiceLayout(program=("/usr/bin/true",), user="root", home=service_home)
    moves = _moves_in(where, service_home)
    steps = install_plan(layout, Operator("alice", 0, 0), moves, user_exists=True)
    steps = [step for step in steps if step.kind in ("move", "verify")]
    with pytest.raises(CommandError, match="does not verify after the move"):
        carry_out(steps, layout, Operator("alice", 0, 0), None)
    assert sorted(p.name for p in where.home.iterdir()) == before
    assert (where.user_home / ".svc-wallet.json").exists()
    assert list(service_home.iterdir()) == []
    service_home.rmdir()


def test_what_stops_a_move_is_said_and_nothing_moves(operator_side, tmp_path):
    where, service_home = operator_side, tmp_path / "service"
    (where.home / "ledger.db.key").unlink()  # the key in a keyring: no file to move with it
    (where.home / "credentials.json").write_text('{"secretsIn": "keyring"}')
    service_home.mkdir()
    (service_home / "SKILLS.md").write_text("the service's own")
    said = moves_of.problems(_moves_in(where, service_home))
    assert any("audit key" in line and "ledger.db" in line for line in said)
    assert any("credentials.json" in line and "keyring" in line for line in said)
    assert any(f"{service_home / 'SKILLS.md'} is already there" in line for line in said)
    assert (service_home / "SKILLS.md").read_text() == "the service's own"
