"""Client of the marketplace's REST surface at {base_url} (bearer API key)."""

from decimal import Decimal
from typing import Any
from urllib.parse import quote

import httpx

from svc_console.core.catalogue import (
    CatalogPage,
    ContentIndex,
    Glossary,
    SearchPage,
    ToolCatalogue,
)
from svc_console.core.datasets import (
    Datacard,
    DatasetAccess,
    DatasetListing,
    DatasetPage,
    PublishStatus,
)
from svc_console.core.models import EndpointRecord
from svc_console.core.money import format_usdc
from svc_console.market import http


class MarketClient(http.LazyClient):
    def __init__(
        self, base_url: str, api_key: str, *, transport: httpx.AsyncBaseTransport | None = None
    ):
        self._options = {
            "base_url": base_url,
            "headers": {"Authorization": f"Bearer {api_key}"},
            "timeout": http.timeout(15.0),
            "transport": transport,
        }

    async def endpoint(self, endpoint_id: str) -> EndpointRecord:
        response = await http.send(self._client, "GET", f"/api/endpoints/{_segment(endpoint_id)}")
        return http.parse(response, EndpointRecord.model_validate)

    async def skill(self, endpoint_id: str) -> str:
        path = f"/api/endpoints/{_segment(endpoint_id)}/skill.md"
        response = await http.send(self._client, "GET", path)
        http.raise_for_error(response)
        return response.text

    async def search(
        self,
        *,
        query: str | None = None,
        domain_type: str | None = None,
        product_class: str | None = None,
        chain: str | None = None,
        verified_only: bool | None = None,
        max_price_usdc: Decimal | str | None = None,
        limit: int | None = None,
    ) -> list[EndpointRecord]:
        """`POST /api/search`, best matches first (at most `limit`, default 25, up to 50)."""
        page = await self.search_page(
            query=query,
            domain_type=domain_type,
            product_class=product_class,
            chain=chain,
            verified_only=verified_only,
            max_price_usdc=max_price_usdc,
            limit=limit,
        )
        return page.results

    async def search_page(self, **filters: Any) -> SearchPage:
        """`POST /api/search` with its total: the filters of `search`."""
        body = {key: _wire(value) for key, value in filters.items() if value is not None}
        response = await http.send(
            self._client, "POST", "/api/search", json=body, spends_nothing=True
        )
        return http.parse(response, SearchPage.model_validate)

    async def market_catalog(
        self,
        *,
        offset: int = 0,
        limit: int | None = None,
        query: str | None = None,
        domain_type: str | None = None,
        product_class: str | None = None,
        chain: str | None = None,
        verified_only: bool | None = None,
        origin: str | None = None,
        max_price_usdc: Decimal | str | None = None,
    ) -> CatalogPage:
        """`GET /api/market/catalog`: one page of providers; follow `next_offset`."""
        params = _query(
            offset=offset,
            limit=limit,
            query=query,
            domain_type=domain_type,
            product_class=product_class,
            chain=chain,
            verified_only=verified_only,
            origin=origin,
            max_price_usdc=max_price_usdc,
        )
        response = await http.send(self._client, "GET", "/api/market/catalog", params=params)
        return http.parse(response, CatalogPage.model_validate)

    # --- datasets ----------------------------------------------------------------------------

    async def datasets(
        self,
        *,
        search: str | None = None,
        tier: str | None = None,
        limit: int | None = None,
        category: str | None = None,
        modality: str | None = None,
        format: str | None = None,
        max_price_usdc: Decimal | str | None = None,
        required_fields: list[str] | None = None,
        sort_by: str | None = None,
    ) -> DatasetPage:
        """`GET /api/datasets`: list or search (`search` is a keyword query); limit 1 to 100."""
        params = _query(
            search=search,
            tier=tier,
            limit=limit,
            category=category,
            modality=modality,
            format=format,
            max_price_usdc=max_price_usdc,
            required_fields=required_fields,
            sort_by=sort_by,
        )
        response = await http.send(self._client, "GET", "/api/datasets", params=params)
        return http.parse(response, DatasetPage.model_validate)

    async def job(self, job_id: str) -> dict[str, Any]:
        """`GET /api/jobs/{job_id}`: a compute job's record (untrusted data, returned as is)."""
        response = await http.send(self._client, "GET", f"/api/jobs/{_segment(job_id)}")
        return http.parse(response, dict)

    async def dataset(self, dataset_id: str) -> DatasetListing:
        response = await http.send(self._client, "GET", _dataset_path(dataset_id))
        return http.parse(response, DatasetListing.model_validate)

    async def dataset_card(self, dataset_id: str) -> Datacard:
        path = f"{_dataset_path(dataset_id)}/card.json"
        response = await http.send(self._client, "GET", path)
        return http.parse(response, Datacard.model_validate)

    async def dataset_access(
        self,
        dataset_id: str,
        *,
        payment_signature: str | None = None,
        x_payment: str | None = None,
        payment_proof: str | None = None,
    ) -> DatasetAccess:
        """`POST /api/datasets/{id}/access`. A paid tier without a (valid) payment raises
        `PaymentRequired` (or `PaymentInvalid`) carrying the decoded challenge to sign; a wallet
        too poor for it, `WalletUnfunded`. Signing is the wallet's job, not this client's."""
        headers = {}
        if payment_signature:
            headers["PAYMENT-SIGNATURE"] = payment_signature
        if x_payment:
            headers["X-PAYMENT"] = x_payment
        body = {"payment_proof": payment_proof} if payment_proof else {}
        path = f"{_dataset_path(dataset_id)}/access"
        response = await http.send(self._client, "POST", path, json=body, headers=headers)
        settled = response.headers.get("payment-response") or response.headers.get(
            "x-payment-response"
        )
        return http.parse(
            response,
            lambda data: DatasetAccess.model_validate({**data, "paymentResponse": settled}),
        )

    async def process_dataset(self, dataset_id: str) -> PublishStatus:
        """`POST .../process` (publisher): starts the analysis that builds the datacard."""
        path = f"{_dataset_path(dataset_id)}/process"
        response = await http.send(self._client, "POST", path)
        return http.parse(response, PublishStatus.model_validate)

    async def publish_status(self, dataset_id: str) -> PublishStatus:
        path = f"{_dataset_path(dataset_id)}/publish-status"
        response = await http.send(self._client, "GET", path)
        return http.parse(response, PublishStatus.model_validate)

    # --- content for answer engines ----------------------------------------------------------

    async def llms_txt(self) -> str:
        response = await http.send(self._client, "GET", "/llms.txt")
        http.raise_for_error(response)
        return response.text

    async def content_index(self) -> ContentIndex:
        response = await http.send(self._client, "GET", "/api/content/index")
        return http.parse(response, ContentIndex.model_validate)

    async def glossary(self) -> Glossary:
        response = await http.send(self._client, "GET", "/api/content/glossary")
        return http.parse(response, Glossary.model_validate)

    async def tools(self) -> ToolCatalogue:
        response = await http.send(self._client, "GET", "/api/content/tools")
        return http.parse(response, ToolCatalogue.model_validate)


def _wire(value: Any) -> Any:
    """Amounts travel as USDC strings, never as floats."""
    return format_usdc(value) if isinstance(value, Decimal) else value


def _query(**params: Any) -> dict[str, str]:
    """Query parameters: None left out, booleans as true/false, lists comma-separated."""
    result = {}
    for key, value in params.items():
        if value is None:
            continue
        if isinstance(value, bool):
            result[key] = "true" if value else "false"
        elif isinstance(value, list | tuple):
            result[key] = ",".join(str(item) for item in value)
        else:
            result[key] = str(_wire(value))
    return result


def _dataset_path(dataset_id: str) -> str:
    return f"/api/datasets/{_segment(dataset_id)}"


def _segment(value: str) -> str:
    """An id as one URL path segment: an agent-supplied id can never walk to another route."""
    return quote(value, safe="")
