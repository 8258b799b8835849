"""What the ledger's tests share: a ledger of the engine under test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from svc_console.ledger import Ledger


@pytest.fixture
def ledger(tmp_path, ledger_url) -> Iterator[Ledger]:
    store = Ledger(tmp_path / "ledger.db", url=ledger_url)
    yield store
    store.close()
