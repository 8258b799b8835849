"""When intake fails and recording the failure fails too (the ledger refusing every write), the
broker says so in its log instead of swallowing it: the request's id and the ledger's reason."""

from __future__ import annotations

import logging

import pytest
from helpers import eventually

from svc_console.broker.params import SubmitParams
from svc_console.core.states import State

REFUSAL = "the disk refuses every change of state"


async def test_a_failure_to_record_a_failed_intake_is_logged(runtime, caplog):
    ledger = runtime.ledger
    if ledger.url is not None:
        pytest.skip("the refusing trigger is SQLite's")
    caplog.set_level(logging.ERROR, logger="svc_console.broker.service")
    # A real SQLite trigger on the broker's own connection: past `inspecting`, every change of
    # a request's state is refused, the verdict's and then the rejection's that records why.
    ledger.db.execute(
        "CREATE TEMP TRIGGER refuse_states BEFORE UPDATE OF state ON main.requests"
        f" WHEN NEW.state != 'inspecting' BEGIN SELECT RAISE(ABORT, '{REFUSAL}'); END"
    )
    request = await runtime.broker.submit(
        SubmitParams(
            agent="bot",
            kind="market_call",
            endpoint_id="ep_websearch_basic",
            inputs={"query": "heat pumps"},
            purpose="research",
        )
    )
    said = f"the failed intake of {request.id} could not be recorded as rejected"
    await eventually(lambda: any(said in record.getMessage() for record in caplog.records))
    [record] = [r for r in caplog.records if said in r.getMessage()]
    assert record.exc_info is not None and REFUSAL in str(record.exc_info[1])
    ledger.db.execute("DROP TRIGGER temp.refuse_states")
    assert runtime.broker.get(request.id).state == State.inspecting  # recovery inspects it again
