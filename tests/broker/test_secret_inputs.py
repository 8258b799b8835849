"""A spend.submit holding a secret is refused at the socket, and nothing of it is kept.

Over the real socket, against a broker logging to its file under SVC_CONSOLE_HOME at DEBUG: an
sk_live_ key and a bearer token, in the inputs (top level, nested, in a key) and in the purpose,
and the console's own wallet key in any spelling, are refused with an invalid-params error naming
the field and the kind, never the value; afterwards the secret is in no file under
SVC_CONSOLE_HOME (the SQLite ledger, its WAL, the logs), no request or event was added, and the
same agent's next clean request goes through. What may be a key but is as often a transaction
hash or signature passes, flagged high; an e-mail address passes, flagged as personal data.
`svc-console agent submit` says the same.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import eventually, logged_runtime

from svc_console.agent import AgentError, AsyncAgent
from svc_console.config.paths import Paths
from svc_console.core import secrets_scan
from svc_console.core.states import State
from svc_console.runtime import Runtime

ENDPOINT = "ep_websearch_basic"
# The console's own wallet key in these tests: the signer alone holds it once started.
WALLET_KEY = "0x" + "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
REFUSAL_TAIL = ": the console does not send secrets to providers"


@dataclass(frozen=True)
class Secret:
    kind: str  # a secrets_scan kind
    named: str  # how the refusal names the kind
    core: str  # the secret itself
    prefix: str = ""  # what comes before it and is no secret ("Bearer ", "sk_live_")

    @property
    def value(self) -> str:  # what an agent might paste
        return self.prefix + self.core


SECRETS = [
    Secret("api_key", "an sk_live_ API key", "Q7vT2mX9kL4pR8sW1nB6", prefix="sk_live_"),
    Secret(
        "bearer_token",
        "a bearer token",
        "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu.Zm9vYmFyYmF6",
        prefix="Bearer ",
    ),
]
# What may be a private key but is as often a transaction hash or signature: passes, flagged high.
AMBIGUOUS = [
    ("evm_private_key", "0x9f2c4e1ab37d58c06e1f4a2b9d3c7e5f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d"),
    (
        "solana_private_key",
        "5LYakw6eWzdpDgd4sBiZrTC5ZwCNcdjeQR9jPMDXaZPRQou5sP42xrxLBUJpswr5BgJ8E4doTW1HMkQxEptwcEfx",
    ),
]


def placements(secret: str) -> list[tuple[dict[str, object], str]]:
    """(submission fields, the field path the refusal must name) for one secret."""
    return [
        ({"inputs": {"query": f"solar prices {secret}"}}, "inputs.query"),
        (
            {"inputs": {"query": "solar", "items": ["a", 2, {"token": secret}]}},
            "inputs.items[2].token",
        ),
        ({"inputs": {"query": "solar"}, "purpose": f"weekly note; auth {secret}"}, "purpose"),
        ({"inputs": {"query": "solar", "headers": {secret: "x"}}}, "a key in inputs.headers"),
    ]


@pytest.fixture
async def runtime(make_runtime: Callable[..., Runtime], paths: Paths) -> AsyncIterator[Runtime]:
    """The broker with svc-console's own log file, at DEBUG so that nothing is filtered out."""
    async with logged_runtime(make_runtime, paths, payer_key=WALLET_KEY) as rt:
        yield rt


def submission(agent: str, **fields: object) -> dict[str, object]:
    return {
        "agent": agent,
        "kind": "market_call",
        "endpoint_id": ENDPOINT,
        "purpose": "background for the weekly energy note",
        **fields,
    }


async def exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, params) -> bytes:
    """One spend.submit on an open connection: the reply line as sent."""
    line = {"jsonrpc": "2.0", "id": 1, "method": "spend.submit", "params": params}
    writer.write(json.dumps(line).encode() + b"\n")
    await writer.drain()
    return await asyncio.wait_for(reader.readline(), 10)


def counts(runtime: Runtime) -> tuple[int, int]:
    db = runtime.ledger.db
    requests = db.execute("SELECT count(*) FROM requests").fetchone()[0]
    events = db.execute("SELECT count(*) FROM events").fetchone()[0]
    return requests, events


def files_holding(home: Path, text: str) -> list[Path]:
    """Every file under SVC_CONSOLE_HOME whose bytes hold `text` (ledger, WAL, logs...)."""
    return [
        path for path in home.rglob("*") if path.is_file() and text.encode() in path.read_bytes()
    ]


def stored_holding(runtime: Runtime, text: str) -> list[str]:
    """Every place the console keeps that holds `text`: the files under SVC_CONSOLE_HOME and,
    with the ledger on PostgreSQL, each of its tables with a row that does."""
    places = [str(path) for path in files_holding(runtime.paths.home, text)]
    ledger = runtime.ledger
    if ledger is not None and ledger.url is not None:
        for table in ledger.db.table_names():
            found = ledger.db.execute(
                f'SELECT 1 FROM "{table}" t WHERE strpos(t::text, ?) > 0 LIMIT 1', [text]
            ).fetchone()
            if found is not None:
                places.append(f"{table} (PostgreSQL)")
    return places


async def pending(runtime: Runtime, request_id: str) -> None:
    await eventually(lambda: runtime.broker.get(request_id).state == State.pending, timeout=15)


@pytest.mark.parametrize("secret", SECRETS, ids=[s.kind for s in SECRETS])
async def test_a_secret_is_refused_at_the_socket_and_kept_nowhere(
    runtime: Runtime, paths: Paths, secret: Secret
):
    assert secrets_scan.secret_kind(secret.value) == secret.kind  # the sample is what it claims
    agent = f"leaky-{secret.kind.replace('_', '-')}"
    before = counts(runtime)
    reader, writer = await asyncio.open_unix_connection(str(runtime.paths.socket))
    try:
        for fields, where in placements(secret.value):
            raw = await exchange(reader, writer, submission(agent, **fields))
            assert secret.core.encode() not in raw and secret.core[:8].encode() not in raw
            error = json.loads(raw)["error"]
            assert error["code"] == -32602
            expected = {"reason": "invalid_params", "field": where, "kind": secret.kind}
            assert error["data"] == expected
            assert error["message"] == f"{where} looks like {secret.named}{REFUSAL_TAIL}"
        assert counts(runtime) == before  # no request, no event

        # The same agent, on the same connection, with nothing secret: accepted as ever.
        marker = f"clean-after-{secret.kind}"
        clean = submission(agent, inputs={"query": marker})
        reply = json.loads(await exchange(reader, writer, clean))
    finally:
        writer.close()
    ticket = reply["result"]
    assert ticket["state"] == "received"
    await pending(runtime, ticket["request_id"])
    assert counts(runtime)[0] == before[0] + 1

    # Where the clean request went (the ledger), the secret did not; the log names the attempt.
    assert stored_holding(runtime, marker), "the scan must read where requests are stored"
    log_text = (paths.logs / "svc-console.log").read_text()
    assert f"refused a submission from {agent}: inputs.query looks like" in log_text
    for text in (secret.core, secret.core[:8]):
        assert stored_holding(runtime, text) == []


async def test_a_refused_path_is_quoted_never_raw(runtime: Runtime):
    """A key on the way to the secret may hold controls or bidi overrides: it is quoted."""
    secret = SECRETS[0].value
    odd = "tricky\n\u202ekey"
    async with AsyncAgent("quoting-bot", runtime.paths.socket) as agent:
        with pytest.raises(AgentError) as refused:
            await agent.submit(endpoint_id=ENDPOINT, inputs={odd: {"k": secret}}, purpose="p")
    message = refused.value.message
    assert message.startswith("inputs['tricky\\n\\u202ekey'].k looks like an sk_live_ API key")
    assert "\n" not in message and "\u202e" not in message and secret not in message
    assert refused.value.data["field"] == "inputs['tricky\\n\\u202ekey'].k"


async def test_an_email_is_personal_data_not_a_secret_it_passes_flagged(
    runtime: Runtime, paths: Paths
):
    email = "jane.doe@example.org"
    async with AsyncAgent("mail-bot", runtime.paths.socket) as agent:
        ticket = await agent.submit(
            endpoint_id=ENDPOINT,
            inputs={"query": f"solar installers; reply to {email}"},
            purpose=f"send the shortlist to {email}",
        )
    await pending(runtime, ticket["request_id"])
    request = runtime.broker.get(ticket["request_id"])
    assert email in request.inputs["query"] and email in request.purpose
    flags = {flag.code: flag for flag in request.risk}
    assert flags["input_email"].severity == "warn"
    assert flags["input_email"].reason == "input query contains an e-mail address (personal data)"
    assert stored_holding(runtime, email)  # recorded, as before: the operator must see it


async def test_the_command_line_says_which_field_and_never_echoes_the_secret(
    runtime: Runtime, paths: Paths
):
    secret = SECRETS[0]
    before = counts(runtime)
    command = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "svc_console", "agent", "submit", "--agent", "cli-bot"),
        *("--endpoint", ENDPOINT, "--purpose", "market sizing"),
        *("--inputs", json.dumps({"query": f"heat pumps {secret.value}"})),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "SVC_CONSOLE_HOME": str(paths.home)},
    )
    out, err = await asyncio.wait_for(command.communicate(), 60)
    assert command.returncode == 2
    assert out == b""
    assert err.decode() == (
        f"svc-console: inputs.query looks like an sk_live_ API key{REFUSAL_TAIL}\n"
    )
    assert counts(runtime) == before
    assert stored_holding(runtime, secret.core) == []


async def test_the_consoles_own_wallet_key_is_refused_in_any_spelling(
    runtime: Runtime, paths: Paths
):
    assert runtime.payer_key is None  # handed over
    core = WALLET_KEY.removeprefix("0x")
    before = counts(runtime)
    async with AsyncAgent("key-bot", runtime.paths.socket) as agent:
        for spelling in (core, "0x" + core.upper(), f"sign with {core} please"):
            with pytest.raises(AgentError) as refused:
                await agent.submit(endpoint_id=ENDPOINT, inputs={"query": spelling}, purpose="p")
            assert refused.value.message == (
                f"inputs.query holds one of this console's own secrets{REFUSAL_TAIL}"
            )
            assert refused.value.data == {
                "reason": "invalid_params",
                "field": "inputs.query",
                "kind": secrets_scan.OWN_KEY,
            }
    assert counts(runtime) == before
    assert stored_holding(runtime, core) == [] and stored_holding(runtime, core[:16]) == []


@pytest.mark.parametrize(("kind", "value"), AMBIGUOUS, ids=[kind for kind, _ in AMBIGUOUS])
async def test_a_value_that_may_be_a_hash_passes_flagged_high_for_the_operator(
    runtime: Runtime, kind: str, value: str
):
    assert secrets_scan.secret_kind(value) == kind  # the sample is what it claims
    async with AsyncAgent("chain-bot", runtime.paths.socket) as agent:
        ticket = await agent.submit(
            endpoint_id=ENDPOINT, inputs={"query": f"transaction {value}"}, purpose="audit"
        )
    await pending(runtime, ticket["request_id"])
    request = runtime.broker.get(ticket["request_id"])
    [flag] = [flag for flag in request.risk if flag.code == f"input_{kind}"]
    assert flag.severity == "high"


async def test_every_secret_the_console_holds_is_refused_in_every_field(
    runtime: Runtime, paths: Paths
):
    """The API key, the wallet token and an agent's token, in inputs, purpose, the idempotency
    key: refused before anything is recorded."""
    assert runtime.sandbox is not None
    state = runtime.sandbox.state
    secrets = {
        "API key": state.api_key,
        "wallet token": state.api_token,
        "agent token": "svcagent_" + "Q" * 43,
    }
    before = counts(runtime)
    async with AsyncAgent("key-bot", runtime.paths.socket) as agent:
        for name, secret in secrets.items():
            for field, submission in (
                ("inputs.query", {"inputs": {"query": secret}, "purpose": "p"}),
                ("purpose", {"inputs": {"query": "q"}, "purpose": f"use {secret}"}),
                (
                    "idempotency_key",
                    {"inputs": {"query": "q"}, "purpose": "p", "idempotency_key": secret},
                ),
            ):
                with pytest.raises(AgentError) as refused:
                    await agent.submit(endpoint_id=ENDPOINT, **submission)
                assert refused.value.data["field"] == field, name
                # Known as the console's own, or by its shape (the API key is an sk_ key).
                assert refused.value.data["kind"] in (secrets_scan.OWN_KEY, "api_key"), name
    assert counts(runtime) == before
    for secret in secrets.values():
        assert stored_holding(runtime, secret) == []
