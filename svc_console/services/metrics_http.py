"""`/metrics` over HTTP for Prometheus, served on the broker's own loop (aiohttp), so a scrape reads
the broker's state between its steps rather than from another thread. Plain HTTP and no login,
as Prometheus scrapes: `serve` keeps it on loopback unless told otherwise."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from prometheus_client.exposition import choose_encoder

from svc_console.services.metrics import ConsoleMetrics
from svc_console.services.metrics_scrape import ScrapeTime


class MetricsServer:
    def __init__(self, runtime: Any):
        self.runtime = runtime
        self.metrics = ConsoleMetrics(runtime.clock)
        self.metrics.registry.register(ScrapeTime(runtime))
        self._runner: web.AppRunner | None = None
        self.address: tuple[str, int] | None = None  # where it listens, its port resolved

    async def start(self, host: str, port: int) -> None:
        """Count from now on, and serve `http://HOST:PORT/metrics` (port 0: any free one)."""
        self.metrics.attach(self.runtime.broker, self.runtime.policy)
        app = web.Application()
        app.router.add_get("/metrics", self._scrape)
        app.router.add_get("/", self._index)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        try:
            await site.start()
        except OSError as exc:
            await self.stop()
            raise OSError(f"cannot serve metrics on {host}:{port}: {exc.strerror}") from None
        self.address = (host, int(self._runner.addresses[0][1]))

    async def stop(self) -> None:
        self.metrics.detach()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def url(self) -> str:
        assert self.address is not None
        host, port = self.address
        return f"http://{f'[{host}]' if ':' in host else host}:{port}/metrics"

    async def _scrape(self, request: web.Request) -> web.Response:
        """The text format Prometheus asks for (OpenMetrics when it says so), as
        prometheus-client's own server answers."""
        encode, content_type = choose_encoder(request.headers.get("Accept", ""))
        body = encode(self.metrics.registry)
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def _index(self, request: web.Request) -> web.Response:
        return web.Response(text="svc-console: Prometheus metrics at /metrics\n")
