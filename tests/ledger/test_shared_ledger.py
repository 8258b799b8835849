"""Several brokers' ledgers on one PostgreSQL database (ledger/shared.py), each a `Ledger` of
its own connection here, as each broker's is: one chain written by both, the other's budget
changes followed, a cap checked again with them, orphans adopted once, changes heard."""

from __future__ import annotations

import asyncio
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from helpers import plain_request

from svc_console.config.audit_key import key_file
from svc_console.core.buckets import OVERALL
from svc_console.core.models import Decision
from svc_console.core.private_files import write_private
from svc_console.core.states import State
from svc_console.ledger import Ledger, LedgerRefused, audit, shared
from svc_console.ledger.store import BudgetSpent


@pytest.fixture
def url(postgres) -> str:
    return postgres.new_database()


@pytest.fixture
def two(tmp_path: Path, url: str):
    """Two brokers' ledgers on one database, with their homes and the key they share."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = Ledger(tmp_path / "a" / "ledger.db", url=url)
    shutil.copy2(key_file(first.path), key_file(tmp_path / "b" / "ledger.db"))
    second = Ledger(tmp_path / "b" / "ledger.db", url=url)
    yield first, second
    first.close()
    second.close()


def _approve(ledger: Ledger, request_id: str, ceiling: str, **kwargs) -> int:
    # A registered agent's: its spend counts in a budget of its own (an unverified one's would
    # count as (unverified)'s).
    ledger.insert_request(plain_request(request_id).model_copy(update={"agent_verified": True}))
    ledger.transition(request_id, State.inspecting, at=1.0)
    ledger.transition(request_id, State.pending, at=1.0, expires_at=10**10)
    decision = Decision(approved=True, by="op", at=2.0, ceiling_usdc=Decimal(ceiling))
    return ledger.decide(request_id, decision, State.approved, **kwargs)


def test_two_writers_make_one_chain_that_verifies(two, url):
    first, second = two
    for n in range(3):
        first.insert_request(plain_request(f"req_a{n}"))
        second.insert_request(plain_request(f"req_b{n}"))
    links = first.db.execute("SELECT prev_hash, hash FROM events ORDER BY seq").fetchall()
    assert len(links) == 6
    assert all(links[n][0] == links[n - 1][1] for n in range(1, len(links)))
    for ledger in two:  # each one's head file anchors a point of the same chain
        report = audit.verify(ledger.path, url=url)
        assert report.broken is None and report.verified == 6


def test_a_broker_with_another_audit_key_is_refused_and_writes_nothing(two, tmp_path, url):
    first, _second = two
    first.insert_request(plain_request("req_1"))
    (tmp_path / "c").mkdir()
    third = tmp_path / "c" / "ledger.db"
    # No key at all: refused before any key is made (one would be another).
    with pytest.raises(LedgerRefused, match="holds 1 audit event but its audit key is missing"):
        Ledger(third, url=url)
    assert not key_file(third).exists()
    # A key of its own: its links would not verify.
    write_private(key_file(third), "ab" * 32 + "\n")
    with pytest.raises(LedgerRefused, match="another audit key"):
        Ledger(third, url=url)
    assert first.db.execute("SELECT count(*) FROM events").fetchone()[0] == 1


def test_each_writer_follows_the_others_budget_changes(two):
    first, second = two
    heard: list = []
    second.budget_listeners.append(heard.extend)
    _approve(first, "req_1", "0.25")
    assert heard == []  # not yet read
    second.follow_others(now=3.0)
    [(buckets, _slot, delta)] = heard
    assert (buckets, delta) == ((("agent", "bot"), OVERALL), 250_000)
    heard.clear()
    # Read again when a transaction of its own begins, before anything it decides.
    _approve(first, "req_2", "0.10")
    second.insert_request(plain_request("req_3"))
    assert [delta for _b, _s, delta in heard] == [100_000]


def test_a_decision_rechecked_with_the_others_reservations_writes_nothing(two):
    first, second = two
    second.insert_request(plain_request("req_2"))
    second.transition("req_2", State.inspecting, at=1.0)
    second.transition("req_2", State.pending, at=1.0, expires_at=10**10)
    spent = []
    second.budget_listeners.append(spent.extend)
    _approve(first, "req_1", "0.25")  # after the second's last transaction began
    decision = Decision(approved=True, by="op", at=2.0, ceiling_usdc=Decimal("0.25"))
    with pytest.raises(BudgetSpent, match="the day is spent"):
        second.decide(
            "req_2",
            decision,
            State.approved,
            # What the policy would say once the first broker's 0.25 is counted.
            recheck=lambda: "the day is spent" if spent else None,
        )
    assert second.get("req_2").state == State.pending
    assert second.db.execute("SELECT count(*) FROM decisions").fetchone()[0] == 1


def test_a_dead_brokers_unfinished_requests_are_adopted_once(two, tmp_path, url):
    first, second = two
    _approve(first, "req_1", "0.25")
    assert second.orphans() == []  # its broker lives
    first.close()  # its connection ends, as when its process dies
    third_home = tmp_path / "c"
    third_home.mkdir()
    shutil.copy2(key_file(second.path), key_file(third_home / "ledger.db"))
    third = Ledger(third_home / "ledger.db", url=url)
    try:
        adopted = second.orphans()
        assert [r.id for r in adopted] == ["req_1"] and adopted[0].state == State.approved
        assert third.orphans() == []  # adopted once
        [(broker,)] = second.db.execute("SELECT broker FROM requests").fetchall()
        assert broker == second.member.key
        assert "adopted" in [e["type"] for e in second.events("req_1")]
    finally:
        third.close()


def test_a_writer_hears_which_requests_the_other_changed(two, url):
    first, second = two
    assert first.member is not None and second.member is not None

    async def hear() -> list[str]:
        heard: list[str] = []
        got = asyncio.Event()

        def changed(ids: list[str]) -> None:
            heard.extend(ids)
            got.set()

        listening = asyncio.create_task(shared.listen(url, second.member.key, changed))
        # LISTEN is in place once its connection answers; until then, notices are missed.
        while not await _listening(url):
            await asyncio.sleep(0.01)
        second.insert_request(plain_request("req_own"))  # its own: not heard
        first.insert_request(plain_request("req_1"))
        await asyncio.wait_for(got.wait(), 30)
        listening.cancel()
        return heard

    assert asyncio.run(hear()) == ["req_1"]


async def _listening(url: str) -> bool:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url) as conn:
        cursor = await conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN%%'"
        )
        return (await cursor.fetchone())[0] > 0
