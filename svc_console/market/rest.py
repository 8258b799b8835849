"""Client of the marketplace's REST surface at {base_url} (bearer API key)."""

from decimal import Decimal
from typing import Any
from urllib.parse import quote

import httpx

from svc_console.core.models import EndpointRecord
from svc_console.core.money import format_usdc
from svc_console.market import http


class MarketClient:
    def __init__(
        self, base_url: str, api_key: str, *, transport: httpx.AsyncBaseTransport | None = None
    ):
        self._client = httpx.AsyncClient(
            base_url=base_url,
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=http.timeout(15.0),
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def endpoint(self, endpoint_id: str) -> EndpointRecord:
        response = await http.send(self._client, "GET", f"/api/endpoints/{_segment(endpoint_id)}")
        return http.parse(response, EndpointRecord.model_validate)

    async def skill(self, endpoint_id: str) -> str:
        path = f"/api/endpoints/{_segment(endpoint_id)}/skill.md"
        response = await http.send(self._client, "GET", path)
        http.raise_for_error(response)
        return response.text

    async def search(self, **filters: Any) -> list[EndpointRecord]:
        """`POST /api/search`: query, domain_type, product_class, chain, verified_only,
        max_price_usdc, limit."""
        body = {
            key: format_usdc(value) if isinstance(value, Decimal) else value
            for key, value in filters.items()
            if value is not None
        }
        response = await http.send(self._client, "POST", "/api/search", json=body)
        return http.parse(
            response, lambda data: [EndpointRecord.model_validate(r) for r in data["results"]]
        )


def _segment(value: str) -> str:
    """An id as one URL path segment: an agent-supplied id can never walk to another route."""
    return quote(value, safe="")
