"""Words the seeded dataset catalogue is drawn from: categories with their subjects, table schemas
and document kinds, title scopes, publishers, licences and prices per tier.

A column is written `name:type:description`. Types: `id`, `string`, `text`, `integer`, `number`,
`money`, `percent`, `boolean`, `date`, `datetime`, `url`, `country`, `currency`, `latitude`,
`longitude`, `ticker`, and `enum[a|b|c]` for a closed set of values.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any


@dataclass(frozen=True)
class Category:
    slug: str
    label: str
    tags: tuple[str, ...]
    subjects: tuple[str, ...]
    tables: tuple[tuple[str, ...], ...]
    documents: tuple[str, ...]
    document_columns: tuple[str, ...]
    sources: tuple[str, ...]


# Every document dataset has these columns, then its category's own.
DOCUMENT_COLUMNS = (
    "doc_id:id:stable identifier of the document",
    "title:string:title as published",
    "published_at:date:publication date",
    "source_url:url:where the document was collected",
    "language:enum[en|de|fr|es|ja]:ISO 639-1 language code",
    "body:text:full text, extracted and normalised",
)

# fmt: off
CATEGORIES: tuple[Category, ...] = (
    Category(
        "finance", "Finance", ("finance", "markets"),
        ("Equity Prices", "FX Rates", "Bond Yields", "Corporate Earnings", "Fund Holdings",
         "Options Volume", "Dividend History"),
        (
            ("date:date:trading day", "ticker:ticker:exchange symbol", "open:money:opening price",
             "high:money:day high", "low:money:day low", "close:money:closing price",
             "volume:integer:shares traded", "currency:currency:quote currency"),
            ("company_id:id:issuer identifier", "fiscal_quarter:string:for example 2024Q3",
             "revenue_usd:money:revenue in US dollars", "eps:number:earnings per share",
             "sector:enum[tech|health|energy|finance|retail]:GICS-like sector",
             "country:country:country of listing"),
        ),
        ("Annual Reports", "Earnings Call Transcripts", "Analyst Notes"),
        ("company:string:issuer name", "ticker:ticker:exchange symbol"),
        ("exchange feeds", "issuer filings", "central bank releases"),
    ),
    Category(
        "crypto", "Crypto", ("crypto", "blockchain"),
        ("Token Prices", "DEX Trades", "Stablecoin Flows", "Wallet Balances", "Gas Fees",
         "Validator Rewards"),
        (
            ("timestamp:datetime:block time", "chain:enum[base|ethereum|solana|stellar]:network",
             "token:ticker:token symbol", "price_usd:money:price in US dollars",
             "volume_usd:money:traded volume", "tx_count:integer:transactions in the interval"),
            ("tx_hash:id:transaction hash", "block_number:integer:block height",
             "from_address:string:sender", "to_address:string:recipient",
             "amount:number:amount in token units", "fee_usd:money:fee paid"),
        ),
        ("Protocol Whitepapers", "Governance Proposals", "Audit Reports"),
        ("protocol:string:protocol name", "chain:enum[base|ethereum|solana|stellar]:network"),
        ("public RPC nodes", "block explorers", "governance forums"),
    ),
    Category(
        "ecommerce", "E-commerce", ("ecommerce", "retail"),
        ("Product Listings", "Price Tracking", "Customer Reviews", "Marketplace Sellers",
         "Cart Abandonment", "Shipping Times"),
        (
            ("product_id:id:listing identifier", "title:string:product title",
             "brand:string:brand name", "price:money:listed price", "currency:currency:currency",
             "rating:number:average rating 1-5", "in_stock:boolean:available now",
             "url:url:product page"),
            ("review_id:id:review identifier", "product_id:id:reviewed product",
             "rating:integer:stars 1-5", "review_text:text:the review",
             "verified_purchase:boolean:bought on the platform", "created_at:date:review date"),
        ),
        ("Return Policies", "Product Manuals", "Seller Agreements"),
        ("marketplace:string:where it was published",),
        ("public marketplace pages", "seller feeds"),
    ),
    Category(
        "social", "Social media", ("social", "social-data"),
        ("Public Posts", "Hashtag Trends", "Creator Profiles", "Engagement Metrics",
         "Community Threads"),
        (
            ("post_id:id:post identifier", "author_handle:string:public handle",
             "platform:enum[x|reddit|mastodon|bluesky]:network", "text:text:post text",
             "likes:integer:likes", "reposts:integer:reposts", "posted_at:datetime:time posted"),
            ("handle:string:public handle", "followers:integer:follower count",
             "following:integer:accounts followed", "posts:integer:posts published",
             "verified:boolean:platform verification", "country:country:stated country"),
        ),
        ("Forum Archives", "Moderation Guidelines"),
        ("platform:enum[x|reddit|mastodon|bluesky]:network",),
        ("public APIs", "public archives"),
    ),
    Category(
        "news", "News and media", ("news", "media"),
        ("Headlines", "Article Metadata", "Press Releases Index", "Media Mentions"),
        (
            ("article_id:id:article identifier", "headline:string:headline",
             "outlet:string:publisher", "published_at:datetime:publication time",
             "section:enum[world|business|tech|science|sport]:section",
             "url:url:article address", "sentiment:number:-1 to 1"),
        ),
        ("News Articles", "Press Releases", "Editorial Transcripts"),
        ("outlet:string:publisher", "section:enum[world|business|tech|science|sport]:section"),
        ("RSS feeds", "publisher sitemaps", "wire services"),
    ),
    Category(
        "geospatial", "Geospatial", ("geo", "maps"),
        ("Points of Interest", "Address Registry", "Building Footprints", "Postal Codes",
         "Road Segments"),
        (
            ("place_id:id:place identifier", "name:string:place name",
             "category:enum[restaurant|shop|school|hospital|park]:kind of place",
             "lat:latitude:latitude", "lon:longitude:longitude", "country:country:country",
             "opening_hours:string:OSM-style hours"),
            ("postal_code:string:postal code", "city:string:city", "region:string:region",
             "country:country:country", "lat:latitude:centroid latitude",
             "lon:longitude:centroid longitude", "population:integer:residents"),
        ),
        ("Zoning Documents", "Survey Reports"),
        ("region:string:area covered",),
        ("open map projects", "national mapping agencies"),
    ),
    Category(
        "climate", "Weather and climate", ("weather", "climate"),
        ("Weather Observations", "Air Quality Readings", "Precipitation Records",
         "Temperature Anomalies", "Storm Tracks"),
        (
            ("station_id:id:station identifier", "observed_at:datetime:observation time",
             "lat:latitude:latitude", "lon:longitude:longitude",
             "temperature_c:number:air temperature", "humidity_pct:percent:relative humidity",
             "wind_kph:number:wind speed", "precip_mm:number:precipitation"),
            ("city:string:city", "country:country:country", "date:date:day",
             "pm25:number:PM2.5 in µg/m³", "no2:number:NO2 in µg/m³",
             "aqi:integer:air quality index"),
        ),
        ("Climate Assessments", "Station Metadata Reports"),
        ("region:string:area covered",),
        ("weather stations", "satellite products", "national met offices"),
    ),
    Category(
        "health", "Health", ("health", "medical"),
        ("Clinical Trials Registry", "Drug Approvals", "Hospital Capacity", "Vaccination Rates",
         "Disease Surveillance"),
        (
            ("trial_id:id:registry identifier", "condition:string:condition studied",
             "phase:enum[1|2|3|4]:trial phase", "enrollment:integer:participants",
             "status:enum[recruiting|active|completed|terminated]:status",
             "start_date:date:start date", "country:country:lead country"),
            ("region:string:region", "week:date:week starting", "cases:integer:reported cases",
             "hospitalised:integer:hospital admissions", "rate_per_100k:number:incidence"),
        ),
        ("Clinical Guidelines", "Drug Labels", "Public Health Bulletins"),
        ("authority:string:issuing authority",),
        ("trial registries", "public health agencies"),
    ),
    Category(
        "legal", "Legal", ("legal", "law"),
        ("Court Dockets", "Patent Grants", "Trademark Filings", "Regulatory Actions"),
        (
            ("case_id:id:docket number", "court:string:court", "filed_at:date:filing date",
             "case_type:enum[civil|criminal|administrative]:kind of case",
             "parties:string:parties", "status:enum[open|closed|appealed]:status"),
            ("patent_id:id:patent number", "title:string:title", "assignee:string:assignee",
             "granted_at:date:grant date", "cpc_class:string:classification",
             "claims:integer:number of claims"),
        ),
        ("Court Opinions", "Contracts Corpus", "Regulations Text"),
        ("jurisdiction:string:jurisdiction", "court:string:court"),
        ("court records", "patent offices", "official gazettes"),
    ),
    Category(
        "government", "Government and public sector", ("government", "open-data"),
        ("Public Spending", "Procurement Notices", "Census Indicators", "Election Results"),
        (
            ("record_id:id:record identifier", "agency:string:agency",
             "amount:money:amount", "currency:currency:currency", "date:date:date",
             "category:enum[health|education|defence|transport|other]:spending area"),
            ("region:string:region", "year:integer:year", "population:integer:population",
             "median_income:money:median household income", "unemployment_pct:percent:rate"),
        ),
        ("Parliamentary Records", "Policy Papers", "Procurement Tenders"),
        ("body:string:issuing body",),
        ("open data portals", "official statistics offices"),
    ),
    Category(
        "energy", "Energy", ("energy", "utilities"),
        ("Power Prices", "Grid Load", "Renewable Generation", "Fuel Prices",
         "EV Charging Sessions"),
        (
            ("timestamp:datetime:interval start", "zone:string:bidding zone",
             "price_eur_mwh:money:day-ahead price", "load_mw:number:demand",
             "solar_mw:number:solar output", "wind_mw:number:wind output"),
            ("station_id:id:charger identifier", "started_at:datetime:session start",
             "energy_kwh:number:energy delivered", "duration_min:integer:duration",
             "country:country:country"),
        ),
        ("Grid Operator Reports", "Energy Outlooks"),
        ("operator:string:grid operator",),
        ("grid operators", "power exchanges"),
    ),
    Category(
        "transport", "Transport and logistics", ("transport", "logistics"),
        ("Flight Schedules", "Vessel Positions", "Transit Ridership", "Freight Rates",
         "Traffic Counts"),
        (
            ("flight_id:id:flight identifier", "carrier:string:airline code",
             "origin:string:IATA origin", "destination:string:IATA destination",
             "scheduled_at:datetime:scheduled departure", "delay_min:integer:delay",
             "status:enum[scheduled|departed|landed|cancelled]:status"),
            ("mmsi:id:vessel identifier", "timestamp:datetime:position time",
             "lat:latitude:latitude", "lon:longitude:longitude", "speed_kn:number:speed",
             "vessel_type:enum[cargo|tanker|passenger|fishing]:vessel type"),
        ),
        ("Safety Investigation Reports", "Timetable Notices"),
        ("operator:string:operator",),
        ("AIS receivers", "airline schedules", "transit agencies"),
    ),
    Category(
        "science", "Science and research", ("science", "research"),
        ("Paper Citations", "Genome Annotations", "Chemical Compounds", "Telescope Observations"),
        (
            ("paper_id:id:paper identifier", "title:string:title", "year:integer:year",
             "venue:string:journal or conference", "citations:integer:citation count",
             "doi:string:DOI", "open_access:boolean:free to read"),
            ("compound_id:id:compound identifier", "name:string:common name",
             "formula:string:molecular formula", "molecular_weight:number:g/mol",
             "smiles:string:SMILES notation"),
        ),
        ("Research Abstracts", "Preprints", "Lab Protocols"),
        ("field:string:field of study", "doi:string:DOI"),
        ("preprint servers", "open bibliographic databases"),
    ),
    Category(
        "web", "Web and technology", ("web", "internet"),
        ("Domain Rankings", "Website Technologies", "Common Crawl Extracts", "App Store Listings",
         "Open Source Repositories"),
        (
            ("domain:string:registered domain", "rank:integer:popularity rank",
             "country:country:top visitor country", "category:string:site category",
             "https:boolean:serves HTTPS", "first_seen:date:first crawled"),
            ("repo_id:id:repository identifier", "name:string:owner/name",
             "language:string:main language", "stars:integer:stars", "forks:integer:forks",
             "license:string:SPDX licence", "updated_at:date:last push"),
        ),
        ("Web Pages Corpus", "Technical Documentation", "RFC Texts"),
        ("site:string:site the page belongs to",),
        ("web crawls", "public code hosts"),
    ),
)
# fmt: on

SCOPES = (
    "Global", "US", "EU", "UK", "APAC", "LatAm", "Daily", "Hourly", "Historical", "Weekly",
    "Monthly", "Curated", "Open", "Enriched",
)  # fmt: skip
SPANS = ("", "", "", " 2015-2024", " 2020-2025", " 2023", " 2024", " (since 2010)")

PUBLISHERS = (
    "Northwind Data", "Open Ledger Labs", "Meridian Analytics", "Civic Data Trust",
    "Atlas Research", "Quantive", "Kestrel Datasets", "Harbor Insights", "Blue Heron Data",
    "Lattice Open Data", "Sable Intelligence", "Everfield Labs",
)  # fmt: skip
LICENSES = ("CC-BY-4.0", "CC0-1.0", "ODbL-1.0", "CC-BY-NC-4.0", "commercial")
UPDATE_FREQUENCIES = ("daily", "weekly", "monthly", "quarterly", "static")
COLLECTION = (
    "Collected from {source}, normalised to one schema and deduplicated.",
    "Aggregated from {source}; values cross-checked against a second source.",
    "Harvested from {source}, cleaned and validated by the publisher.",
)

# Per-access prices by tier, in USDC. Free is always 0.
TIER_PRICES: dict[str, tuple[Decimal, ...]] = {
    "free": (Decimal(0),),
    "standard": tuple(Decimal(p) for p in ("0.05", "0.1", "0.25", "0.5", "1", "2")),
    "premium": tuple(Decimal(p) for p in ("2.5", "5", "7.5", "10", "15", "25")),
    "enterprise": tuple(Decimal(p) for p in ("50", "100", "250", "500")),
}
TIER_WEIGHTS = {"free": 30, "standard": 35, "premium": 25, "enterprise": 10}
STRUCTURED_FORMATS = ("csv", "tsv", "json", "jsonl", "parquet")
DOCUMENT_FORMATS = ("txt", "md", "pdf", "jsonl")

WORDS = (
    "market", "report", "quarter", "growth", "region", "signal", "policy", "network", "supply",
    "demand", "index", "record", "review", "update", "service", "standard", "analysis", "model",
    "trend", "volume", "price", "survey", "release", "summary", "risk", "capacity", "average",
    "public", "annual", "measure", "source", "rate", "change", "level", "period", "data",
)  # fmt: skip


# --- datasets whose every property is fixed: one per tier, and two publisher drafts ----------

FREE_ID = "ds_fx_daily_rates"
STANDARD_ID = "ds_news_headlines_2024"
PREMIUM_ID = "ds_court_opinions"
ENTERPRISE_ID = "ds_global_vessel_positions"
DRAFT_ID = "ds_draft_city_budgets"
FAILING_DRAFT_ID = "ds_draft_unlabelled_upload"
_CATEGORY = {c.slug: c for c in CATEGORIES}

PINNED: tuple[dict[str, Any], ...] = (
    {
        "dataset_id": FREE_ID, "title": "Daily FX Rates", "category": "finance",
        "subject": "FX Rates", "scope": "Global", "tier": "free", "modality": "structured",
        "fmt": "csv", "frequency": "daily", "columns": (
            "date:date:trading day", "base_currency:currency:base currency",
            "quote_currency:currency:quote currency", "rate:number:units of quote per base",
            "source:string:publishing central bank",
        ),
    },
    {
        "dataset_id": STANDARD_ID, "title": "News Headlines 2024", "category": "news",
        "subject": "Headlines", "scope": "Global", "tier": "standard", "modality": "structured",
        "fmt": "jsonl", "price": Decimal("0.25"), "frequency": "daily",
        "columns": _CATEGORY["news"].tables[0],
    },
    {
        "dataset_id": PREMIUM_ID, "title": "Court Opinions", "category": "legal",
        "subject": "Court Opinions", "scope": "US", "tier": "premium", "modality": "document",
        "fmt": "pdf", "price": Decimal(10),
    },
    {
        "dataset_id": ENTERPRISE_ID, "title": "Global Vessel Positions", "category": "transport",
        "subject": "Vessel Positions", "scope": "Global", "tier": "enterprise",
        "modality": "structured", "fmt": "parquet", "price": Decimal(250),
        "columns": _CATEGORY["transport"].tables[1],
    },
)  # fmt: skip

DRAFTS: tuple[dict[str, Any], ...] = (
    {
        "dataset_id": DRAFT_ID, "title": "City Budgets", "category": "government",
        "subject": "Public Spending", "scope": "EU", "tier": "standard",
        "modality": "structured", "fmt": "csv", "price": Decimal("0.5"),
        "columns": _CATEGORY["government"].tables[0],
    },
    {
        "dataset_id": FAILING_DRAFT_ID, "title": "Unlabelled Upload", "category": "web",
        "subject": "Web Pages Corpus", "scope": "Open", "tier": "standard",
        "modality": "document", "fmt": "txt", "price": Decimal("0.1"), "columns": (),
    },
)  # fmt: skip
ANALYSIS_FAILURE = "the upload has no header row or front matter: no schema could be inferred"
