"""The sandbox's catalogue over REST: datasets (list, listing, access, datacard, publishing), the
market browse, and the content routes for answer engines.

Dataset and market routes need the API key (`Authorization: Bearer sk_live_...`), as the rest of
the authenticated REST surface; the content routes are public, as answer engines crawl them. Query
parameters are checked by the same argument models as the MCP tools (`sandbox.queries`): unknown
or out-of-range values are refused with 400 `INVALID_PARAMS`, never ignored or clamped. Paid
access is x402 v2 through `sandbox.x402.X402Gate`, with the same resource URL and description as
the `get_dataset` tool, so a payment made on one is recognised on the other.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from svc_console.core.money import format_usdc
from svc_console.sandbox import content
from svc_console.sandbox.datasets import Dataset, dataset_catalog
from svc_console.sandbox.publishing import PublishConflict, board_for
from svc_console.sandbox.queries import (
    Arguments,
    BrowseQuery,
    DatasetQuery,
    GetDatasetArgs,
    InvalidArguments,
    browse_catalog,
    parse_arguments,
)
from svc_console.sandbox.web import Refusal, bearer, json_object, same_secret

if TYPE_CHECKING:
    from svc_console.sandbox.catalog import Catalog
    from svc_console.sandbox.state import SandboxState

_INTEGER = re.compile(r"^-?\d{1,12}$")
_BOOLEANS = {"true": True, "false": False}
# Query parameters of the GET routes -> argument names; `search` is SPEC.md's name for `query`.
_DATASET_PARAMS = {
    "search": "query",
    "category": "category",
    "tier": "tier",
    "modality": "modality",
    "format": "format",
    "max_price_usdc": "max_price_usdc",
    "required_fields": "required_fields",
    "sort_by": "sort_by",
    "limit": "limit",
}
_BROWSE_PARAMS = {name: name for name in BrowseQuery.model_fields} | {"search": "query"}
_LISTS = frozenset({"required_fields"})


def _query_arguments(request: Request, params: dict[str, str]) -> dict[str, Any]:
    """Query parameters as tool arguments: integers and booleans typed, lists comma-separated or
    repeated; anything unknown or repeated is refused, naming it."""
    arguments: dict[str, Any] = {}
    unknown = sorted({key[:40] for key in request.query_params if key not in params})
    if unknown:
        raise Refusal(400, "INVALID_PARAMS", f"unknown parameter(s): {', '.join(unknown)}")
    for key in request.query_params:
        values = request.query_params.getlist(key)
        name = params[key]
        if name in arguments:
            raise Refusal(400, "INVALID_PARAMS", f"{key} is given twice (as {name})")
        if name in _LISTS:
            arguments[name] = [part.strip() for v in values for part in v.split(",")]
            continue
        if len(values) > 1:
            raise Refusal(400, "INVALID_PARAMS", f"{key} is given more than once")
        value: Any = values[0]
        if _INTEGER.match(value) and name in {"limit", "offset"}:
            value = int(value)
        elif name == "verified_only":
            value = _BOOLEANS.get(value.lower(), value)
        arguments[name] = value
    return arguments


def _checked(model: type[Arguments], arguments: dict[str, Any]) -> Any:
    try:
        return parse_arguments(model, arguments)
    except InvalidArguments as exc:
        raise Refusal(400, "INVALID_PARAMS", exc.message, fields=exc.as_json()) from None


def _not_found(dataset_id: str) -> Refusal:
    return Refusal(
        404, "NOT_FOUND", "no published dataset with that id", datasetId=dataset_id[:200]
    )


class _CatalogueRoutes:
    def __init__(self, state: SandboxState, listing: Catalog):
        self.state, self.listing = state, listing
        self.datasets = dataset_catalog()
        self.board = board_for(state, self.datasets)

    def _require_key(self, request: Request) -> None:
        key = bearer(request)
        accounts = getattr(self.state, "accounts", None)
        if accounts is not None:
            known = accounts.api_key_agent(key) is not None
        else:
            known = same_secret(key, self.state.api_key)
        if not known:
            raise Refusal(
                401,
                "UNAUTHORIZED",
                "missing or invalid API key",
                headers={"WWW-Authenticate": 'Bearer realm="svc-console sandbox"'},
            )

    def _base(self, request: Request) -> str:
        return (self.state.base_url or str(request.base_url)).rstrip("/")

    def _published(self, request: Request) -> Dataset:
        """The dataset the path names, if this sandbox lists it (drafts only once published)."""
        dataset_id = request.path_params["dataset_id"]
        dataset = self.datasets.find(dataset_id)
        if dataset is None or (dataset.draft and not self.board.is_published(dataset.id)):
            raise _not_found(dataset_id)
        return dataset

    # --- datasets ----------------------------------------------------------------------------

    async def list_datasets(self, request: Request) -> Response:
        self._require_key(request)
        q: DatasetQuery = _checked(DatasetQuery, _query_arguments(request, _DATASET_PARAMS))
        listings, total = self.datasets.query(q, also=self.board.published_drafts())
        return JSONResponse(
            {"datasets": listings, "total": total, "limit": q.limit, "sandbox": True}
        )

    async def dataset(self, request: Request) -> Response:
        self._require_key(request)
        dataset = self._published(request)
        return JSONResponse({**self.datasets.listing(dataset.id), "sandbox": True})

    async def card(self, request: Request) -> Response:
        self._require_key(request)
        dataset = self._published(request)
        return JSONResponse(self.datasets.card(dataset.id))

    async def access(self, request: Request) -> Response:
        self._require_key(request)
        dataset = self._published(request)
        body = await json_object(request, "INVALID_PARAMS", empty_ok=True)
        if "dataset_id" in body:
            raise Refusal(400, "INVALID_PARAMS", "dataset_id is given by the path, not the body")
        args: GetDatasetArgs = _checked(GetDatasetArgs, {**body, "dataset_id": dataset.id})
        delivered = {
            "datasetId": dataset.id,
            "tier": dataset.tier,
            "content": self.datasets.content(dataset.id),
            "sandbox": True,
        }
        if not dataset.paid:
            return JSONResponse({**delivered, "chargedUsdc": format_usdc(dataset.price_usdc)})
        return self._paid_access(request, dataset, args, delivered)

    def _paid_access(
        self, request: Request, dataset: Dataset, args: GetDatasetArgs, delivered: dict
    ) -> Response:
        # Imported here: the x402 SDK takes most of a second to import, and only paid access
        # needs it.
        from svc_console.sandbox.x402 import PaymentInvalid, X402Gate

        gate = X402Gate(self.state)
        resource = f"{self._base(request)}/api/datasets/{quote(dataset.id, safe='')}/access"
        required = gate.required(
            resource,
            gate.runtime_amount(dataset.price_usdc),
            f"Dataset {dataset.id} ({dataset.tier} tier)",
        )
        challenge = {"PAYMENT-REQUIRED": gate.encode(required)}
        signature = args.payment_signature or request.headers.get("payment-signature")
        x_payment = args.x_payment or request.headers.get("x-payment")
        if not (signature or x_payment or args.payment_proof):
            raise Refusal(
                402,
                "PAYMENT_REQUIRED",
                f"{dataset.id} costs {format_usdc(dataset.price_usdc)} USDC: sign the"
                " PAYMENT-REQUIRED challenge and retry with a PAYMENT-SIGNATURE header",
                headers=challenge,
                paymentRequired=required,
            )
        try:
            settlement = gate.settle(
                required,
                payment_signature=signature,
                payment_proof=args.payment_proof,
                x_payment=x_payment,
                charge_for=f"dataset:{dataset.id}",
            )
        except PaymentInvalid as exc:
            if exc.reason == "insufficient_funds":
                raise Refusal(
                    402,
                    "WALLET_UNFUNDED",
                    exc.message,
                    headers=challenge,
                    fundingUrl=self.state.funding_url(self._base(request)),
                    balanceUsdc=format_usdc(exc.balance_usdc),
                    requiredUsdc=format_usdc(exc.required_usdc or dataset.price_usdc),
                    paymentRequired=required,
                ) from None
            raise Refusal(
                402,
                "PAYMENT_INVALID",
                exc.message,
                headers=challenge,
                reason=exc.reason,
                paymentRequired=required,
            ) from None
        header = "PAYMENT-RESPONSE" if settlement.x402_version >= 2 else "X-PAYMENT-RESPONSE"
        answer = {
            **delivered,
            "chargedUsdc": format_usdc(settlement.amount_usdc),
            "payment": settlement.as_json(),
        }
        return JSONResponse(answer, headers={header: settlement.response_header()})

    # --- publishing --------------------------------------------------------------------------

    async def process(self, request: Request) -> Response:
        self._require_key(request)
        dataset_id = request.path_params["dataset_id"]
        try:
            status = self.board.process(dataset_id)
        except PublishConflict:
            raise Refusal(
                409,
                "PUBLISH_IN_PROGRESS",
                "this listing is already being processed; poll publish-status",
                datasetId=dataset_id[:200],
            ) from None
        if status is None:
            raise Refusal(404, "NOT_FOUND", "no dataset with that id", datasetId=dataset_id[:200])
        return JSONResponse({**status.model_dump(mode="json"), "sandbox": True}, status_code=202)

    async def publish_status(self, request: Request) -> Response:
        self._require_key(request)
        dataset_id = request.path_params["dataset_id"]
        status = self.board.status(dataset_id)
        if status is None:
            raise Refusal(404, "NOT_FOUND", "no dataset with that id", datasetId=dataset_id[:200])
        return JSONResponse({**status.model_dump(mode="json"), "sandbox": True})

    # --- market ------------------------------------------------------------------------------

    async def market_catalog(self, request: Request) -> Response:
        self._require_key(request)
        q: BrowseQuery = _checked(BrowseQuery, _query_arguments(request, _BROWSE_PARAMS))
        providers, total = browse_catalog(self.listing, q)
        following = q.offset + len(providers)
        page = {
            "providers": [p.model_dump(mode="json") for p in providers],
            "total": total,
            "offset": q.offset,
            "limit": q.limit,
            "nextOffset": following if following < total else None,
            "sandbox": True,
        }
        return JSONResponse(page)

    # --- content for answer engines ----------------------------------------------------------

    async def llms_txt(self, request: Request) -> Response:
        text = content.llms_txt(self.listing, self.datasets)
        return PlainTextResponse(text, media_type="text/plain; charset=utf-8")

    async def content_index(self, request: Request) -> Response:
        index = content.content_index(self.listing, self.datasets)
        return JSONResponse({**index, "sandbox": True})

    async def glossary(self, request: Request) -> Response:
        return JSONResponse({**content.glossary(), "sandbox": True})

    async def tools(self, request: Request) -> Response:
        return JSONResponse({**content.tools(), "sandbox": True})


def routes(state: SandboxState, listing: Catalog) -> list[Route]:
    r = _CatalogueRoutes(state, listing)
    one = "/api/datasets/{dataset_id}"
    return [
        Route("/api/datasets", r.list_datasets, methods=["GET"]),
        Route(one, r.dataset, methods=["GET"]),
        Route(f"{one}/access", r.access, methods=["POST"]),
        Route(f"{one}/card.json", r.card, methods=["GET"]),
        Route(f"{one}/process", r.process, methods=["POST"]),
        Route(f"{one}/publish-status", r.publish_status, methods=["GET"]),
        Route("/api/market/catalog", r.market_catalog, methods=["GET"]),
        Route("/llms.txt", r.llms_txt, methods=["GET"]),
        Route("/api/content/index", r.content_index, methods=["GET"]),
        Route("/api/content/glossary", r.glossary, methods=["GET"]),
        Route("/api/content/tools", r.tools, methods=["GET"]),
    ]
