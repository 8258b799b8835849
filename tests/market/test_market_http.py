"""A connection the server closed while it sat idle in the pool: a request that spends nothing is
sent again on a fresh one; a request that may spend is never sent twice. A connection that could
not be made at all (nothing was sent) is tried once more, for any request."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import pytest
from helpers import proxy_execute

from svc_console.market import errors
from svc_console.market.rest import MarketClient
from svc_console.market.wallet import WalletClient
from svc_console.sandbox.catalog import WEBSEARCH_ID, catalog

RECORD = catalog().get(WEBSEARCH_ID).model_dump_json().encode()  # type: ignore[union-attr]
DRY_RUN = (
    b'{"endpointId":"ep_websearch_basic","protocol":"x402","chain":"base",'
    b'"estimatedUsdc":"0.01","requiredFields":["query"],"balanceUsdc":"5"}'
)


class OneAnswerPerConnection:
    """An HTTP/1.1 server that answers the first request of each connection with keep-alive,
    then closes the connection when a second request arrives on it, answering nothing: what a
    server's keep-alive timeout does to a pooled connection, made certain instead of a race."""

    def __init__(self) -> None:
        self.requests: list[bytes] = []
        self.server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        answered = False
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":", 1)[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                await reader.readexactly(length)
                request_line = head.split(b"\r\n", 1)[0]
                self.requests.append(request_line)
                if answered:
                    break
                body = DRY_RUN if request_line.startswith(b"POST") else RECORD
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    + f"content-length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
                answered = True
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @property
    def base_url(self) -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"


@pytest.fixture
async def server() -> AsyncIterator[OneAnswerPerConnection]:
    stale = OneAnswerPerConnection()
    stale.server = await asyncio.start_server(stale._serve, "127.0.0.1", 0)
    yield stale
    stale.server.close()
    await stale.server.wait_closed()


async def test_a_read_is_sent_again_on_a_fresh_connection(server: OneAnswerPerConnection):
    client = MarketClient(server.base_url, "sk_live_test")
    try:
        first = await client.endpoint(WEBSEARCH_ID)
        second = await client.endpoint(WEBSEARCH_ID)  # its pooled connection is closed under it
    finally:
        await client.aclose()
    assert first.id == second.id == WEBSEARCH_ID
    assert len(server.requests) == 3  # the second one reached the server twice


async def test_a_dry_run_is_sent_again_but_a_payment_is_not(server: OneAnswerPerConnection):
    wallet = WalletClient(server.base_url, "alice", "token")
    try:
        await wallet.dry_run("x402", WEBSEARCH_ID, {"query": "q"})
        again = await wallet.dry_run("x402", WEBSEARCH_ID, {"query": "q"})
        assert again.estimated_usdc == Decimal("0.01")
        assert len(server.requests) == 3
        with pytest.raises(errors.OutcomeUnknown, match="did not answer"):
            await proxy_execute(
                wallet,
                "x402",
                WEBSEARCH_ID,
                {"query": "q"},
                ceiling_usdc=Decimal("0.01"),
                chain="base",
                idempotency_key="k1",
            )
    finally:
        await wallet.aclose()
    # The payment reached the server once, on the stale connection, and was not sent again:
    # whether it was charged is for reconciliation, not for a second try.
    assert len(server.requests) == 4
    assert server.requests[-1].startswith(b"POST")


async def test_a_connection_refused_once_is_tried_again(monkeypatch: pytest.MonkeyPatch):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))  # bound, not listening: a connection is refused
    late = OneAnswerPerConnection()
    loop = asyncio.get_running_loop()
    connect = loop.create_connection

    async def refused_then_listening(*args: Any, **kwargs: Any) -> Any:
        """The service comes up as soon as it has refused the client once."""
        try:
            return await connect(*args, **kwargs)
        except ConnectionRefusedError:
            if late.server is None:
                late.server = await asyncio.start_server(late._serve, sock=probe)
            raise

    monkeypatch.setattr(loop, "create_connection", refused_then_listening)
    client = MarketClient(f"http://127.0.0.1:{probe.getsockname()[1]}", "sk_live_test")
    try:
        record = await client.endpoint(WEBSEARCH_ID)
    finally:
        await client.aclose()
        if late.server is not None:
            late.server.close()
            await late.server.wait_closed()
        probe.close()
    assert late.server is not None  # the first connection was refused, the second answered
    assert record.id == WEBSEARCH_ID
    assert len(late.requests) == 1


async def test_a_service_that_never_listens_is_unreachable(refused_url: str):
    client = MarketClient(refused_url, "sk_live_test")
    try:
        with pytest.raises(errors.ServiceUnreachable, match=r"cannot reach 127\.0\.0\.1"):
            await client.endpoint(WEBSEARCH_ID)
    finally:
        await client.aclose()
