"""The console's HTTP client for the calls on every request's path, over aiohttp.

Why aiohttp there: the dry run is one HTTP call per decision, and measured against the sandbox in
processes of its own (tests/bench/http_clients.py) an httpx call cost the caller 2.3 to 3 ms of
CPU, most of it httpcore's pool matching waiting requests to connections, while aiohttp's cost
0.15 to 0.3 ms. The clients of calls made once in a while (catalogue, account, MCP) stay on httpx.

`HttpClient.send` keeps `http.send`'s rules: tried once more when no connection could be made
(nothing was sent); a request that spends nothing also when its pooled connection turns out closed
under it; anything else that fails on the way is `OutcomeUnknown`, never sent twice. Answers are
read whole into an `Answer`, which `http.parse` and `http.raise_for_error` read as they read an
httpx response.

aiohttp is imported when the first session opens: a fifth of the console's import time, which
the operator would otherwise wait for before a request read from the ledger can be decided.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from svc_console.market import errors, http

if TYPE_CHECKING:
    import aiohttp
    from multidict import CIMultiDictProxy
    from yarl import URL

# Requests of one client open at once; more wait their turn in aiohttp's queue (first come,
# first served, without httpcore's rescan of every waiting request).
MAX_CONNECTIONS = 100


@dataclass(frozen=True)
class Answer:
    """An HTTP answer read whole: what `http.parse` reads of a response."""

    status_code: int
    reason_phrase: str
    headers: CIMultiDictProxy[str]
    content: bytes
    url: URL

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    def json(self) -> Any:
        return json.loads(self.content)

    @property
    def text(self) -> str:
        return self.content.decode(errors="replace")


def import_now() -> None:
    """Import aiohttp now. A broker with no screen to paint (`serve`) pays for it as it starts,
    not on its first agent's dry run."""
    import aiohttp  # noqa: F401


class HttpClient:
    """One pooled aiohttp session for one base URL, opened on first use (inside the event loop
    that uses it, as aiohttp wants)."""

    def __init__(self, base_url: str, *, headers: dict[str, str], timeout_s: float = 30.0) -> None:
        self._base = base_url.rstrip("/")
        self._url: URL | None = None
        self._headers = headers
        self._timeout_s = timeout_s
        self._session: aiohttp.ClientSession | None = None

    @property
    def base_url(self) -> URL:
        if self._url is None:
            from yarl import URL

            self._url = URL(self._base)
        return self._url

    def _open(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=MAX_CONNECTIONS,
                # Idle connections let go before the server closes them (see http.KEEPALIVE_S).
                keepalive_timeout=http.KEEPALIVE_S,
                ssl=http.tls(),
            )
            self._session = aiohttp.ClientSession(
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=self._timeout_s, connect=5.0),
                connector=connector,
            )
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def send(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        headers: dict[str, str] | None = None,
        spends_nothing: bool | None = None,
    ) -> Answer:
        import aiohttp

        if spends_nothing is None:
            spends_nothing = method in ("GET", "HEAD")
        session = self._open()
        base = self.base_url
        url = base.with_path(base.path.rstrip("/") + path, encoded=True)
        data = None if json_body is None else json.dumps(json_body).encode()
        sent_headers = dict(headers or {})
        if data is not None:
            sent_headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            try:
                async with session.request(
                    method, url, data=data, headers=sent_headers
                ) as response:
                    content = await response.read()
                    return Answer(
                        response.status, response.reason or "", response.headers, content, url
                    )
            except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as exc:
                if attempt == 1:  # nothing was sent
                    await asyncio.sleep(http.RECONNECT_PAUSE_S)
                    continue
                raise errors.ServiceUnreachable(f"cannot reach {url.host}: {exc}") from None
            except aiohttp.InvalidURL as exc:
                raise errors.ServiceUnreachable(f"cannot reach {url.host}: {exc}") from None
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
                # A pooled connection the server closed while it sat idle.
                if spends_nothing and attempt == 1:
                    continue
                failure: BaseException = exc
            except (aiohttp.ClientError, TimeoutError) as exc:
                failure = exc
            raise errors.OutcomeUnknown(
                f"{url.host} did not answer ({type(failure).__name__})"
            ) from None
        raise AssertionError("unreachable")
