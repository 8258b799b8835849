"""What the sandbox tells answer engines about itself: `/llms.txt`, the content index, the glossary
and the tool catalogue. Every text says it is the sandbox and that no real money moves.
"""

from __future__ import annotations

from typing import Any

from svc_console.core.catalogue import (
    ContentEntry,
    ContentIndex,
    Glossary,
    GlossaryTerm,
    ToolCatalogue,
)
from svc_console.core.taxonomy import DOMAIN_TYPES, PRODUCT_CLASSES
from svc_console.sandbox.catalog import Catalog
from svc_console.sandbox.datasets import DatasetCatalog
from svc_console.sandbox.queries import TOOLS_SUMMARY

TITLE = "svc-console sandbox marketplace"
DESCRIPTION = (
    "SANDBOX: a local stand-in for the agent data and API marketplace. Datasets and pay-per-call "
    "APIs are made up, balances are make-believe USDC, and no real money ever moves."
)

# (path, title, summary) of each REST route worth indexing; `{id}` stays a placeholder.
_ROUTES = (
    ("/api/mcp", "MCP endpoint", "JSON-RPC 2.0 over HTTP POST; the nine tools; batches accepted."),
    ("/api/datasets", "Datasets", "List and search datasets: search, tier, limit and filters."),
    ("/api/datasets/{id}", "Dataset listing", "Public metadata of one dataset."),
    ("/api/datasets/{id}/access", "Dataset access", "Free tier: content. Paid: x402 402."),
    ("/api/datasets/{id}/card.json", "Datacard", "The machine-readable quality datacard."),
    ("/api/datasets/{id}/process", "Process a listing", "Publisher: analyse, build the card."),
    ("/api/datasets/{id}/publish-status", "Publish status", "draft, processing, published."),
    ("/api/market/catalog", "Market catalogue", "Browse providers a page at a time."),
    ("/api/search", "Market search", "Search endpoints by domain, class, chain, price."),
    ("/api/endpoints/{id}", "Endpoint record", "Full record of one market endpoint."),
    ("/api/endpoints/{id}/skill.md", "Endpoint skill", "Generated usage instructions."),
    ("/api/content/glossary", "Glossary", "Terms of the marketplace as structured data."),
    ("/api/content/tools", "Tools", "The nine MCP tools as structured data."),
)

_GLOSSARY = (
    ("x402", "An HTTP payment protocol: a paid resource answers 402 with a PAYMENT-REQUIRED "
     "challenge; the client signs it and retries with PAYMENT-SIGNATURE.", ["USDC", "EIP-3009"]),
    ("MPP", "Machine Payments Protocol: WWW-Authenticate: Payment challenges answered with an "
     "Authorization: Payment credential; settles on Tempo.", ["x402"]),
    ("SIWX", "Sign-In With X: identity-gated free access to a registered API.", []),
    ("USDC", "The dollar stablecoin every price is settled in (6 decimals).", []),
    ("EIP-3009", "TransferWithAuthorization: the signed USDC transfer an x402 payment carries.",
     ["x402"]),
    ("CAIP-2", "Chain identifiers such as eip155:8453 (Base) used in payment challenges.", []),
    ("dry run", "A proxy call with dryRun: true: validates inputs and estimates the price; "
     "spends nothing.", ["approval"]),
    ("approval", "The operator's explicit yes before any spend; execution needs approved: true.",
     ["dry run"]),
    ("datacard", "A dataset's quality card: schema, statistics, provenance, quality signals, "
     "limitations and pricing.", ["quality signals"]),
    ("quality signals", "Measured figures of a dataset: completeness, schema accuracy, "
     "duplicate rate, freshness, and an overall score.", ["datacard"]),
    ("coverage report", "How a dataset's columns cover the fields a caller requires.", []),
    ("tier", "free, standard, premium or enterprise; paid tiers need an x402 payment.", []),
    ("domain type", "What a market provider does, A1 to A22 (A7 web search, A8 scraping).",
     ["product class"]),
    ("product class", "How a provider sells, B1 to B6 (B1 pay-per-call API, B2 data product).",
     ["domain type"]),
    ("qualityScore", "A provider's score from ongoing evaluation of responses and schema "
     "accuracy.", ["reliability"]),
    ("reliability", "Uptime and response consistency over time.", ["qualityScore"]),
    ("skill", "The instruction file generated per endpoint: when to use, inputs, outputs, cost, "
     "protocols, networks.", []),
    ("WALLET_UNFUNDED", "The error of a paid call the wallet cannot cover; fund it at the "
     "fundingUrl and retry.", []),
    ("sandbox", "This local marketplace: made-up data, make-believe balances, no real money.", []),
)  # fmt: skip


def llms_txt(listing: Catalog, datasets: DatasetCatalog) -> str:
    """A compact site map in the llms.txt convention (Markdown)."""
    lines = [
        f"# {TITLE}",
        "",
        f"> {DESCRIPTION}",
        "",
        f"{listing.provider_count} API providers ({len(listing.endpoints)} endpoints) and"
        f" {len(datasets.datasets)} datasets. Agents use the MCP endpoint; REST is for"
        " read-only catalogue access. Authenticated routes need `Authorization: Bearer <API_KEY>`.",
        "",
        "## Routes",
        "",
        *(f"- [{title}]({path}): {summary}" for path, title, summary in _ROUTES),
        "",
        "## Tools",
        "",
        *(f"- {tool.name} ({tool.category}, {tool.cost})" for tool in TOOLS_SUMMARY),
        "",
        "## Optional",
        "",
        "- [Content index](/api/content/index): everything above as structured data",
        "",
    ]
    return "\n".join(lines)


def content_index(listing: Catalog, datasets: DatasetCatalog) -> dict[str, Any]:
    entries = [
        ContentEntry(id=f"route:{path}", title=title, url=path, summary=summary, kind="route")
        for path, title, summary in _ROUTES
    ]
    entries += [
        ContentEntry(
            id=f"tool:{tool.name}",
            title=tool.name,
            url="/api/content/tools",
            summary=f"{tool.category}; {tool.cost}. {tool.description}",
            kind="tool",
        )
        for tool in TOOLS_SUMMARY
    ]
    entries += [
        ContentEntry(
            id=f"domain:{code}",
            title=f"{code}: {label}",
            url=f"/api/market/catalog?domain_type={code}",
            summary=f"Market providers of domain type {code} ({label}).",
            kind="taxonomy",
        )
        for code, label in DOMAIN_TYPES.items()
    ]
    entries += [
        ContentEntry(
            id=f"class:{code}",
            title=f"{code}: {label}",
            url=f"/api/market/catalog?product_class={code}",
            summary=f"Market providers selling as {label}.",
            kind="taxonomy",
        )
        for code, label in PRODUCT_CLASSES.items()
    ]
    entries += [
        ContentEntry(
            id=f"category:{slug}",
            title=f"Datasets: {slug}",
            url=f"/api/datasets?category={slug}",
            summary=f"Datasets of category {slug}.",
            kind="taxonomy",
        )
        for slug in datasets.categories
    ]
    entries.append(
        ContentEntry(
            id="document:llms.txt",
            title="llms.txt",
            url="/llms.txt",
            summary="A compact site map.",
            kind="document",
        )
    )
    index = ContentIndex(
        title=TITLE,
        description=DESCRIPTION,
        entries=entries,
        counts={
            "providers": listing.provider_count,
            "endpoints": len(listing.endpoints),
            "datasets": len(datasets.datasets),
            "tools": len(TOOLS_SUMMARY),
        },
    )
    return index.model_dump(mode="json")


def glossary() -> dict[str, Any]:
    terms = [
        GlossaryTerm(term=term, definition=definition, see_also=see_also)
        for term, definition, see_also in _GLOSSARY
    ]
    return Glossary(terms=terms).model_dump(mode="json")


def tools() -> dict[str, Any]:
    return ToolCatalogue(tools=list(TOOLS_SUMMARY)).model_dump(mode="json")
