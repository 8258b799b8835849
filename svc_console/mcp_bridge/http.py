"""The bridge over Streamable HTTP, on loopback only, for hosts that prefer it to stdio. Every
request must show the agent's token as a bearer token: another local user's process reaches the
port, not the agent's identity."""

from __future__ import annotations

import hmac
from typing import Any

from svc_console.mcp_bridge.server import Bridge


class BearerOnly:
    """An ASGI wrapper answering 401 to any HTTP request without `Authorization: Bearer TOKEN`."""

    def __init__(self, app: Any, token: str):
        self.app, self._token = app, token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._allowed(scope):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"text/plain"),
                        (b"www-authenticate", b'Bearer realm="svc-console mcp"'),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b"the agent's token is required\n"})
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Any) -> bool:
        for name, value in scope.get("headers", []):
            if name == b"authorization" and value[:7].lower() == b"bearer ":
                return hmac.compare_digest(value[7:].strip(), self._token)
        return False


async def serve_http(bridge: Bridge, host: str, port: int, *, token: str) -> None:
    import uvicorn

    app = bridge.server().streamable_http_app(host=host)
    config = uvicorn.Config(
        BearerOnly(app, token), host=host, port=port, log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    await server.serve()
