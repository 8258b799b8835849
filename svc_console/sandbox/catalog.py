"""The sandbox's seeded market catalogue: a few hundred plausible providers and their endpoints.

Built from a fixed seed, so every process sees the same providers, ids, prices and schemas; tests
and the demo can rely on that, and on three well-known endpoints whose every property is fixed
(`ep_websearch_basic`, `ep_scrape_page`, `ep_fx_rates`). Built once per process and cached.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from svc_console.core.models import EndpointRecord
from svc_console.core.money import format_usdc
from svc_console.core.taxonomy import DOMAIN_TYPES, PRODUCT_CLASSES, domain_label

SEED = 20250401
GENERATED_PROVIDERS = 320

WEBSEARCH_ID = "ep_websearch_basic"
SCRAPE_ID = "ep_scrape_page"
FX_ID = "ep_fx_rates"
WELL_KNOWN_IDS = (WEBSEARCH_ID, SCRAPE_ID, FX_ID)

# Where a protocol settles: MPP calls settle on Tempo, x402 calls on the endpoint's other chains.
MPP_CHAIN = "tempo"


# --- JSON Schema building blocks -------------------------------------------------------------


def _object(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    # Unknown fields are refused so a typo ("max_result") fails the dry run instead of being
    # silently ignored by the provider.
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _str(description: str, **rules: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **rules}


def _int(description: str, low: int, high: int, default: int | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "integer",
        "description": description,
        "minimum": low,
        "maximum": high,
    }
    if default is not None:
        schema["default"] = default
    return schema


def _num(description: str, low: float, high: float) -> dict[str, Any]:
    return {"type": "number", "description": description, "minimum": low, "maximum": high}


def _enum(description: str, values: list[Any], default: Any = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"description": description, "enum": values}
    if default is not None:
        schema["default"] = default
    return schema


def _list(description: str, items: dict[str, Any], low: int, high: int) -> dict[str, Any]:
    return {
        "type": "array",
        "description": description,
        "items": items,
        "minItems": low,
        "maxItems": high,
    }


_URL = r"^https?://"
_HTTPS = r"^https://"
_DATE = r"^\d{4}-\d{2}-\d{2}$"
_LANG = r"^[a-z]{2}$"
_EMAIL = r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$"
_ADDRESS = r"^(0x[0-9a-fA-F]{40}|[1-9A-HJ-NP-Za-km-z]{32,44})$"


def _prompt(limit: int = 2000) -> dict[str, Any]:
    return _str("what to generate, in plain language", minLength=1, maxLength=limit)


def _latlon() -> dict[str, dict[str, Any]]:
    return {
        "lat": _num("latitude in degrees", -90, 90),
        "lon": _num("longitude in degrees", -180, 180),
    }


# --- What each domain type offers ------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """One kind of endpoint a provider of a domain type may offer."""

    kind: str
    name: str
    description: str
    product_class: str
    schema: dict[str, Any]
    outputs: str
    band: tuple[str, str]
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Domain:
    stems: tuple[str, ...]
    tags: tuple[str, ...]
    templates: tuple[Template, ...]


_JSON = "JSON (application/json)"

DOMAINS: dict[str, Domain] = {
    "A1": Domain(
        ("Pixel", "Canvas", "Render", "Dream", "Lumen", "Palette", "Sketch"),
        ("image", "generation"),
        (
            Template(
                "generate",
                "Image Generation",
                "Generates an image from a text prompt.",
                "B4",
                _object(
                    ["prompt"],
                    prompt=_prompt(),
                    size=_enum("output size", ["512x512", "1024x1024", "1792x1024"], "1024x1024"),
                    seed=_int("seed for reproducible output", 0, 2_147_483_647),
                ),
                "A PNG image (image/png; base64 in the proxy's answer).",
                ("0.01", "0.2"),
                ("text-to-image", "diffusion"),
            ),
            Template(
                "upscale",
                "Image Upscaler",
                "Upscales an image at a public URL by 2x or 4x.",
                "B1",
                _object(
                    ["image_url"],
                    image_url=_str("public address of the image", pattern=_URL),
                    scale=_enum("upscaling factor", [2, 4], 2),
                ),
                "A PNG image (image/png; base64 in the proxy's answer).",
                ("0.005", "0.05"),
                ("upscaling", "super-resolution"),
            ),
            Template(
                "edit",
                "Image Edit",
                "Edits an image at a public URL following a text instruction.",
                "B4",
                _object(
                    ["image_url", "prompt"],
                    image_url=_str("public address of the image", pattern=_URL),
                    prompt=_prompt(),
                ),
                "A PNG image (image/png; base64 in the proxy's answer).",
                ("0.02", "0.25"),
                ("inpainting", "editing"),
            ),
        ),
    ),
    "A2": Domain(
        ("Reel", "Frame", "Motion", "Clip", "Scene", "Cine"),
        ("video", "generation"),
        (
            Template(
                "generate",
                "Video Generation",
                "Queues a short video generated from a text prompt.",
                "B3",
                _object(
                    ["prompt"],
                    prompt=_prompt(),
                    duration_s=_int("length of the clip in seconds", 1, 30, 5),
                    resolution=_enum("output resolution", ["720p", "1080p"], "720p"),
                ),
                f"{_JSON}: jobId, status and the address of the finished video.",
                ("0.2", "2"),
                ("text-to-video",),
            ),
            Template(
                "animate",
                "Image to Video",
                "Animates a still image at a public URL into a short clip.",
                "B3",
                _object(
                    ["image_url"],
                    image_url=_str("public address of the image", pattern=_URL),
                    duration_s=_int("length of the clip in seconds", 1, 10, 4),
                ),
                f"{_JSON}: jobId, status and the address of the finished video.",
                ("0.25", "2"),
                ("image-to-video", "animation"),
            ),
        ),
    ),
    "A3": Domain(
        ("Voice", "Sonic", "Vox", "Audio", "Tone", "Chorus"),
        ("audio", "speech"),
        (
            Template(
                "tts",
                "Text to Speech",
                "Reads text aloud in one of several synthetic voices.",
                "B4",
                _object(
                    ["text"],
                    text=_str("the text to read", minLength=1, maxLength=5000),
                    voice=_enum("voice", ["alloy", "river", "stone", "ember"], "river"),
                ),
                "A WAV file (audio/wav; base64 in the proxy's answer).",
                ("0.002", "0.05"),
                ("tts", "voice"),
            ),
            Template(
                "transcribe",
                "Transcription",
                "Transcribes speech from an audio file at a public URL.",
                "B4",
                _object(
                    ["audio_url"],
                    audio_url=_str("public address of the audio file", pattern=_URL),
                    language=_str("two-letter language code, if known", pattern=_LANG),
                ),
                f"{_JSON}: text, language and duration.",
                ("0.005", "0.1"),
                ("stt", "transcription"),
            ),
        ),
    ),
    "A4": Domain(
        ("Prompt", "Cortex", "Neuron", "Reason", "Mind", "Logic", "Token"),
        ("llm", "inference"),
        (
            Template(
                "complete",
                "Chat Completion",
                "Completes a prompt with a general-purpose language model.",
                "B4",
                _object(
                    ["prompt"],
                    prompt=_prompt(32000),
                    max_tokens=_int("longest answer, in tokens", 1, 8192, 512),
                    temperature=_num("sampling temperature", 0, 2),
                ),
                f"{_JSON}: completion, model and token usage.",
                ("0.001", "0.05"),
                ("chat", "completion"),
            ),
            Template(
                "summarize",
                "Summarizer",
                "Summarises a long text into a short abstract.",
                "B4",
                _object(
                    ["text"],
                    text=_str("the text to summarise", minLength=1, maxLength=100000),
                    max_words=_int("longest summary, in words", 10, 1000, 150),
                ),
                f"{_JSON}: summary and word count.",
                ("0.002", "0.03"),
                ("summarization",),
            ),
            Template(
                "classify",
                "Text Classifier",
                "Assigns one of the given labels to a text.",
                "B1",
                _object(
                    ["text", "labels"],
                    text=_str("the text to classify", minLength=1, maxLength=20000),
                    labels=_list("candidate labels", _str("a label", minLength=1), 2, 20),
                ),
                f"{_JSON}: the chosen label and a score per label.",
                ("0.001", "0.01"),
                ("classification",),
            ),
        ),
    ),
    "A5": Domain(
        ("Vector", "Embed", "Latent", "Dense", "Semantic"),
        ("embeddings", "vectors"),
        (
            Template(
                "embed",
                "Text Embeddings",
                "Turns texts into dense vectors for semantic search.",
                "B4",
                _object(
                    ["texts"],
                    texts=_list("texts to embed", _str("a text", minLength=1), 1, 256),
                    dimensions=_enum("vector size", [256, 512, 1024], 512),
                ),
                f"{_JSON}: one vector per text.",
                ("0.001", "0.01"),
                ("semantic-search",),
            ),
            Template(
                "rerank",
                "Reranker",
                "Orders documents by relevance to a query.",
                "B4",
                _object(
                    ["query", "documents"],
                    query=_str("the query", minLength=1, maxLength=2000),
                    documents=_list("documents to rank", _str("a document"), 1, 100),
                ),
                f"{_JSON}: document indexes with relevance scores.",
                ("0.001", "0.02"),
                ("reranking", "retrieval"),
            ),
        ),
    ),
    "A6": Domain(
        ("Lingo", "Babel", "Polyglot", "Verba", "Lexi", "Idiom"),
        ("translation", "language"),
        (
            Template(
                "translate",
                "Translation",
                "Translates text between more than a hundred languages.",
                "B1",
                _object(
                    ["text", "target_lang"],
                    text=_str("the text to translate", minLength=1, maxLength=20000),
                    target_lang=_str("two-letter code of the target language", pattern=_LANG),
                    source_lang=_str("two-letter code of the source language", pattern=_LANG),
                ),
                f"{_JSON}: the translation and the detected source language.",
                ("0.001", "0.03"),
                ("machine-translation",),
            ),
            Template(
                "detect",
                "Language Detection",
                "Detects the language of a text.",
                "B1",
                _object(["text"], text=_str("the text", minLength=1, maxLength=5000)),
                f"{_JSON}: language code and confidence.",
                ("0.001", "0.005"),
                ("language-detection",),
            ),
        ),
    ),
    "A7": Domain(
        ("Search", "Seek", "Query", "Scout", "Lookup", "Finder", "Index"),
        ("search", "web"),
        (
            Template(
                "search",
                "Web Search",
                "Searches the public web and returns ranked results with snippets.",
                "B1",
                _object(
                    ["query"],
                    query=_str("what to search for", minLength=1, maxLength=500),
                    max_results=_int("how many results to return", 1, 50, 10),
                ),
                f"{_JSON}: the query and a list of results (title, url, snippet).",
                ("0.002", "0.03"),
                ("serp",),
            ),
            Template(
                "answer",
                "Answer Engine",
                "Answers a question from live web sources, with citations.",
                "B4",
                _object(
                    ["query"],
                    query=_str("the question", minLength=1, maxLength=500),
                    max_sources=_int("how many sources to cite", 1, 20, 5),
                ),
                f"{_JSON}: an answer and the sources it cites.",
                ("0.01", "0.1"),
                ("qa", "citations"),
            ),
            Template(
                "images",
                "Image Search",
                "Searches the public web for images.",
                "B1",
                _object(
                    ["query"],
                    query=_str("what to search for", minLength=1, maxLength=500),
                    safe_search={"type": "boolean", "description": "filter explicit results"},
                ),
                f"{_JSON}: image results (title, url, thumbnail).",
                ("0.002", "0.02"),
                ("images",),
            ),
        ),
    ),
    "A8": Domain(
        ("Scrape", "Crawl", "Harvest", "Spider", "Extract", "Fetch"),
        ("scraping", "web"),
        (
            Template(
                "scrape",
                "Page Scraper",
                "Fetches a web page and returns its readable text and links.",
                "B1",
                _object(
                    ["url"],
                    url=_str("address of the page", pattern=_URL),
                    render_js={"type": "boolean", "description": "run the page's scripts first"},
                ),
                f"{_JSON}: url, status, title, text and links.",
                ("0.005", "0.1"),
                ("html", "crawler"),
            ),
            Template(
                "extract",
                "Structured Extractor",
                "Extracts named fields from a web page.",
                "B1",
                _object(
                    ["url", "fields"],
                    url=_str("address of the page", pattern=_URL),
                    fields=_list("fields to extract", _str("a field name", minLength=1), 1, 30),
                ),
                f"{_JSON}: one value per requested field.",
                ("0.01", "0.2"),
                ("extraction",),
            ),
            Template(
                "screenshot",
                "Screenshot",
                "Renders a web page and stores a screenshot.",
                "B1",
                _object(
                    ["url"],
                    url=_str("address of the page", pattern=_URL),
                    full_page={"type": "boolean", "description": "capture the whole page"},
                ),
                f"{_JSON}: the address of the stored screenshot.",
                ("0.005", "0.05"),
                ("screenshot",),
            ),
        ),
    ),
    "A9": Domain(
        ("Buzz", "Trend", "Chatter", "Pulse", "Crowd", "Murmur"),
        ("social", "social-data"),
        (
            Template(
                "profile",
                "Profile Lookup",
                "Returns the public profile of a social media account.",
                "B2",
                _object(
                    ["handle", "platform"],
                    handle=_str("account handle", pattern=r"^@?[A-Za-z0-9_.]{1,30}$"),
                    platform=_enum("network", ["x", "bluesky", "reddit", "mastodon"]),
                ),
                f"{_JSON}: handle, display name, follower counts, bio.",
                ("0.005", "0.05"),
                ("profiles",),
            ),
            Template(
                "posts",
                "Recent Posts",
                "Returns the recent public posts of an account.",
                "B2",
                _object(
                    ["handle", "platform"],
                    handle=_str("account handle", pattern=r"^@?[A-Za-z0-9_.]{1,30}$"),
                    platform=_enum("network", ["x", "bluesky", "reddit", "mastodon"]),
                    limit=_int("how many posts", 1, 100, 20),
                ),
                f"{_JSON}: a list of posts (id, text, time, engagement).",
                ("0.01", "0.1"),
                ("posts", "timeline"),
            ),
            Template(
                "mentions",
                "Brand Mentions",
                "Streams public mentions of a keyword across social networks.",
                "B5",
                _object(
                    ["query"],
                    query=_str("keyword or brand", minLength=1, maxLength=200),
                    since_days=_int("how far back to look, in days", 1, 30, 7),
                ),
                f"{_JSON}: mentions with sentiment.",
                ("0.02", "0.25"),
                ("monitoring", "sentiment"),
            ),
        ),
    ),
    "A10": Domain(
        ("Coin", "Satoshi", "Block", "Crypto", "Hodl", "Mint"),
        ("crypto", "market-data"),
        (
            Template(
                "price",
                "Spot Price",
                "Current spot price of a crypto asset.",
                "B5",
                _object(
                    ["symbol"],
                    symbol=_str("asset ticker, e.g. BTC", pattern=r"^[A-Z0-9]{2,10}$"),
                    vs_currency=_enum("quote currency", ["USD", "EUR"], "USD"),
                ),
                f"{_JSON}: price, 24h change and volume.",
                ("0.001", "0.01"),
                ("prices", "spot"),
            ),
            Template(
                "ohlcv",
                "OHLCV Candles",
                "Historical open/high/low/close/volume candles.",
                "B2",
                _object(
                    ["symbol", "interval"],
                    symbol=_str("asset ticker, e.g. ETH", pattern=r"^[A-Z0-9]{2,10}$"),
                    interval=_enum("candle size", ["1m", "1h", "1d"]),
                    limit=_int("how many candles", 1, 1000, 100),
                ),
                f"{_JSON}: a list of candles.",
                ("0.005", "0.05"),
                ("candles", "history"),
            ),
        ),
    ),
    "A11": Domain(
        ("Ticker", "Equity", "Yield", "Bourse", "Capital", "Fiscal", "Quant"),
        ("finance", "markets"),
        (
            Template(
                "quote",
                "Stock Quote",
                "Latest quote of a listed equity.",
                "B5",
                _object(
                    ["symbol"],
                    symbol=_str("exchange ticker, e.g. AAPL", pattern=r"^[A-Z][A-Z.]{0,5}$"),
                ),
                f"{_JSON}: symbol, price, currency and time of the quote.",
                ("0.002", "0.03"),
                ("equities", "quotes"),
            ),
            Template(
                "fx",
                "FX Rates",
                "Latest foreign exchange rate of a currency pair.",
                "B5",
                _object(
                    ["symbol"],
                    symbol=_str("currency pair, e.g. EURUSD", pattern=r"^[A-Z]{6}$"),
                ),
                f"{_JSON}: pair, base, quote, rate and time of the rate.",
                ("0.005", "0.05"),
                ("fx", "currencies"),
            ),
            Template(
                "fundamentals",
                "Company Fundamentals",
                "Income statement, balance sheet and ratios of a listed company.",
                "B2",
                _object(
                    ["symbol"],
                    symbol=_str("exchange ticker, e.g. MSFT", pattern=r"^[A-Z][A-Z.]{0,5}$"),
                    period=_enum("reporting period", ["annual", "quarterly"], "annual"),
                ),
                f"{_JSON}: statements and ratios per period.",
                ("0.02", "0.5"),
                ("fundamentals", "filings"),
            ),
        ),
    ),
    "A12": Domain(
        ("Mail", "Inbox", "Letter", "Courier", "Relay", "Envelope"),
        ("email",),
        (
            Template(
                "send",
                "Send Email",
                "Sends one e-mail message from a shared sending domain.",
                "B6",
                _object(
                    ["to", "subject", "body"],
                    to=_str("recipient address", pattern=_EMAIL),
                    subject=_str("subject line", minLength=1, maxLength=200),
                    body=_str("plain-text body", minLength=1, maxLength=50000),
                ),
                f"{_JSON}: messageId and delivery status.",
                ("0.001", "0.01"),
                ("smtp", "transactional"),
            ),
            Template(
                "verify",
                "Email Verification",
                "Checks whether an address can receive mail.",
                "B1",
                _object(["email"], email=_str("address to check", pattern=_EMAIL)),
                f"{_JSON}: deliverable, reason and whether the domain accepts all mail.",
                ("0.001", "0.01"),
                ("validation",),
            ),
        ),
    ),
    "A13": Domain(
        ("Geo", "Atlas", "Map", "Compass", "Terra", "Route"),
        ("maps", "geodata"),
        (
            Template(
                "geocode",
                "Geocoder",
                "Turns a postal address into coordinates.",
                "B1",
                _object(["address"], address=_str("postal address", minLength=1, maxLength=500)),
                f"{_JSON}: lat, lon and the normalised address.",
                ("0.001", "0.01"),
                ("geocoding",),
            ),
            Template(
                "reverse",
                "Reverse Geocoder",
                "Turns coordinates into the nearest postal address.",
                "B1",
                _object(["lat", "lon"], **_latlon()),
                f"{_JSON}: the nearest address.",
                ("0.001", "0.01"),
                ("reverse-geocoding",),
            ),
            Template(
                "route",
                "Routing",
                "Travel distance and time between two addresses.",
                "B1",
                _object(
                    ["from_address", "to_address"],
                    from_address=_str("starting address", minLength=1, maxLength=500),
                    to_address=_str("destination address", minLength=1, maxLength=500),
                    mode=_enum("travel mode", ["driving", "walking", "cycling"], "driving"),
                ),
                f"{_JSON}: distance in metres and duration in seconds.",
                ("0.005", "0.05"),
                ("routing", "directions"),
            ),
        ),
    ),
    "A14": Domain(
        ("Sky", "Climate", "Storm", "Nimbus", "Breeze", "Meteo"),
        ("weather",),
        (
            Template(
                "forecast",
                "Weather Forecast",
                "Daily forecast for a location.",
                "B1",
                _object(["lat", "lon"], **_latlon(), days=_int("how many days ahead", 1, 14, 3)),
                f"{_JSON}: one entry per day (temperatures, precipitation, wind).",
                ("0.001", "0.02"),
                ("forecast",),
            ),
            Template(
                "alerts",
                "Severe Weather Alerts",
                "Active severe weather warnings for a location.",
                "B5",
                _object(["lat", "lon"], **_latlon()),
                f"{_JSON}: active alerts with severity and validity.",
                ("0.005", "0.05"),
                ("alerts", "warnings"),
            ),
        ),
    ),
    "A15": Domain(
        ("Herald", "Gazette", "Wire", "Bulletin", "Chronicle", "Headline"),
        ("news",),
        (
            Template(
                "search",
                "News Search",
                "Searches recent news articles from thousands of outlets.",
                "B1",
                _object(
                    ["query"],
                    query=_str("what to search for", minLength=1, maxLength=500),
                    language=_str("two-letter language code", pattern=_LANG),
                    max_results=_int("how many articles", 1, 50, 10),
                ),
                f"{_JSON}: articles (title, outlet, url, published time).",
                ("0.002", "0.05"),
                ("articles",),
            ),
            Template(
                "archive",
                "News Archive",
                "Full-text search of archived news between two dates.",
                "B2",
                _object(
                    ["query", "from_date"],
                    query=_str("what to search for", minLength=1, maxLength=500),
                    from_date=_str("first day, YYYY-MM-DD", pattern=_DATE),
                    to_date=_str("last day, YYYY-MM-DD", pattern=_DATE),
                ),
                f"{_JSON}: archived articles.",
                ("0.05", "0.5"),
                ("archive", "history"),
            ),
        ),
    ),
    "A16": Domain(
        ("Cart", "Shelf", "Retail", "Basket", "Price", "Bazaar"),
        ("ecommerce", "products"),
        (
            Template(
                "product",
                "Product Lookup",
                "Title, price, availability and rating of a product page.",
                "B2",
                _object(["product_url"], product_url=_str("address of the product", pattern=_URL)),
                f"{_JSON}: title, price, currency, availability, rating.",
                ("0.005", "0.05"),
                ("pricing",),
            ),
            Template(
                "search",
                "Product Search",
                "Searches products across online shops of a region.",
                "B1",
                _object(
                    ["query"],
                    query=_str("what to search for", minLength=1, maxLength=300),
                    region=_enum("shopping region", ["us", "eu", "uk", "jp"], "us"),
                ),
                f"{_JSON}: products with price and shop.",
                ("0.005", "0.05"),
                ("shopping",),
            ),
        ),
    ),
    "A17": Domain(
        ("Runtime", "Compute", "Kernel", "Exec", "Container", "Lambda"),
        ("compute", "code"),
        (
            Template(
                "run",
                "Code Runner",
                "Runs a snippet in an isolated container and returns its output.",
                "B3",
                _object(
                    ["language", "code"],
                    language=_enum("language", ["python", "javascript", "bash"]),
                    code=_str("source code", minLength=1, maxLength=20000),
                    timeout_s=_int("time limit in seconds", 1, 60, 10),
                ),
                f"{_JSON}: stdout, stderr and exit code.",
                ("0.005", "0.1"),
                ("execution",),
            ),
            Template(
                "notebook",
                "Notebook Job",
                "Executes a Jupyter notebook at a public URL on a GPU worker.",
                "B3",
                _object(
                    ["notebook_url"],
                    notebook_url=_str("address of the notebook", pattern=_HTTPS),
                    timeout_s=_int("time limit in seconds", 10, 600, 300),
                ),
                f"{_JSON}: jobId, status and the address of the executed notebook.",
                ("0.05", "1"),
                ("gpu", "jobs"),
            ),
        ),
    ),
    "A18": Domain(
        ("Doc", "Parse", "Scribe", "Paper", "Folio", "Page"),
        ("documents", "parsing"),
        (
            Template(
                "parse",
                "Document Parser",
                "Converts a PDF or office document at a public URL to Markdown.",
                "B1",
                _object(
                    ["document_url"],
                    document_url=_str("address of the document", pattern=_URL),
                ),
                "Markdown text (text/markdown).",
                ("0.005", "0.1"),
                ("pdf", "markdown"),
            ),
            Template(
                "ocr",
                "OCR",
                "Reads the text in an image at a public URL.",
                "B4",
                _object(
                    ["image_url"],
                    image_url=_str("address of the image", pattern=_URL),
                    language=_str("two-letter language code", pattern=_LANG),
                ),
                f"{_JSON}: recognised text and confidence.",
                ("0.002", "0.05"),
                ("ocr",),
            ),
        ),
    ),
    "A19": Domain(
        ("Ident", "Trust", "Proof", "Persona", "Clearance", "Kyc"),
        ("identity", "kyc"),
        (
            Template(
                "kyc",
                "KYC Check",
                "Verifies a person's identity against official records.",
                "B1",
                _object(
                    ["full_name", "country", "date_of_birth"],
                    full_name=_str("full legal name", minLength=1, maxLength=200),
                    country=_str("two-letter country code", pattern=r"^[A-Z]{2}$"),
                    date_of_birth=_str("YYYY-MM-DD", pattern=_DATE),
                ),
                f"{_JSON}: match, risk score and the checks performed.",
                ("0.1", "2"),
                ("compliance",),
            ),
            Template(
                "sanctions",
                "Sanctions Screening",
                "Screens a name against international sanctions lists.",
                "B1",
                _object(
                    ["full_name"],
                    full_name=_str("full name", minLength=1, maxLength=200),
                    country=_str("two-letter country code", pattern=r"^[A-Z]{2}$"),
                ),
                f"{_JSON}: possible matches with list names and scores.",
                ("0.02", "0.5"),
                ("aml", "compliance"),
            ),
        ),
    ),
    "A20": Domain(
        ("Onchain", "Hash", "Node", "Explorer", "Graph", "Ledger"),
        ("blockchain", "analytics"),
        (
            Template(
                "wallet",
                "Wallet Profile",
                "Balances, activity and labels of a blockchain address.",
                "B2",
                _object(
                    ["address"],
                    address=_str("EVM or Solana address", pattern=_ADDRESS),
                    chain=_enum("chain", ["base", "ethereum", "solana"], "base"),
                ),
                f"{_JSON}: balance, transaction count and labels.",
                ("0.005", "0.1"),
                ("wallets", "labels"),
            ),
            Template(
                "risk",
                "Address Risk Score",
                "Scores the exposure of an address to illicit activity.",
                "B1",
                _object(
                    ["address"],
                    address=_str("EVM or Solana address", pattern=_ADDRESS),
                    chain=_enum("chain", ["base", "ethereum", "solana"], "ethereum"),
                ),
                f"{_JSON}: score and the categories behind it.",
                ("0.02", "0.5"),
                ("aml", "risk"),
            ),
        ),
    ),
    "A21": Domain(
        ("Vault", "Pin", "Store", "Locker", "Bucket", "Cache"),
        ("storage", "files"),
        (
            Template(
                "pin",
                "Pin Content",
                "Stores content on a content-addressed network and pins it.",
                "B1",
                _object(
                    ["content", "filename"],
                    content=_str("content to store", minLength=1, maxLength=100000),
                    filename=_str("file name", pattern=r"^[\w.\-]{1,100}$"),
                ),
                f"{_JSON}: content identifier (cid) and size.",
                ("0.001", "0.02"),
                ("ipfs", "pinning"),
            ),
            Template(
                "fetch",
                "Fetch by CID",
                "Retrieves pinned content by its content identifier.",
                "B1",
                _object(
                    ["cid"],
                    cid=_str("content identifier", pattern=r"^(bafy|Qm)[A-Za-z0-9]{20,100}$"),
                ),
                f"{_JSON}: the content and its size.",
                ("0.001", "0.01"),
                ("ipfs", "retrieval"),
            ),
        ),
    ),
    "A22": Domain(
        ("Errand", "Butler", "Concierge", "Assist", "Helper", "Steward"),
        ("agents", "services"),
        (
            Template(
                "task",
                "Agent Task",
                "Delegates a multi-step research task to a hosted agent.",
                "B6",
                _object(
                    ["task"],
                    task=_str("what the agent should do", minLength=1, maxLength=2000),
                    deadline_s=_int("time limit in seconds", 10, 3600, 300),
                ),
                f"{_JSON}: result and the steps taken.",
                ("0.05", "1"),
                ("delegation", "research"),
            ),
            Template(
                "qr",
                "QR Generator",
                "Encodes text as a QR code.",
                "B1",
                _object(["text"], text=_str("text to encode", minLength=1, maxLength=2000)),
                f"{_JSON}: the QR code as SVG text.",
                ("0.001", "0.005"),
                ("qr", "utility"),
            ),
            Template(
                "review",
                "Human Review",
                "Asks a human reviewer a question and returns the chosen option.",
                "B6",
                _object(
                    ["question", "options"],
                    question=_str("the question", minLength=1, maxLength=2000),
                    options=_list("possible answers", _str("an option", minLength=1), 2, 10),
                ),
                f"{_JSON}: the chosen option and the reviewer's note.",
                ("0.2", "2"),
                ("human-in-the-loop",),
            ),
        ),
    ),
}

_SUFFIXES = (
    "ly", "io", "ify", "Labs", "Hub", "Works", "Stack", "Base", "Flow", "AI", "Cloud", "Data",
    "API", "Forge", "Point", "Grid", "Nest", "Pilot", "Bridge", "Wise", "Sense", "Scope", "Kit",
    "Dock", "Feed",
)  # fmt: skip
_LOWER_SUFFIXES = frozenset({"ly", "io", "ify"})

# Realistic per-call price points: amounts are drawn from these so the catalogue reads like a
# market.
_PRICE_POINTS = tuple(
    Decimal(p)
    for p in (
        "0.001", "0.002", "0.003", "0.005", "0.008", "0.01", "0.015", "0.02", "0.025", "0.03",
        "0.04", "0.05", "0.075", "0.1", "0.15", "0.2", "0.25", "0.3", "0.4", "0.5", "0.75", "1",
        "1.5", "2",
    )
)  # fmt: skip

_X402_CHAINS = ("base", "solana", "ethereum", "stellar")
_X402_WEIGHTS = (55, 25, 10, 10)

_BLURBS = (
    "Built for agent workloads.",
    "Low-latency edge network.",
    "Answers are cached for up to 60 seconds.",
    "Backed by a 99.9% uptime target.",
    "Rate limited to 10 calls per second per wallet.",
    "Community maintained.",
    "Regional endpoints in the US and EU.",
    "",
    "",
)


# --- The catalogue ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Catalog:
    """Every endpoint the sandbox lists, indexed by id, with what the records do not carry."""

    endpoints: tuple[EndpointRecord, ...]
    by_id: MappingProxyType[str, EndpointRecord]
    kinds: MappingProxyType[str, str]
    outputs: MappingProxyType[str, str]
    provider_count: int
    _haystacks: MappingProxyType[str, str] = field(repr=False)

    def get(self, endpoint_id: str) -> EndpointRecord | None:
        return self.by_id.get(endpoint_id)

    def kind(self, endpoint_id: str) -> str:
        """The endpoint's kind within its domain type (`search`, `fx`...): picks the fake result."""
        return self.kinds[endpoint_id]

    def haystack(self, endpoint_id: str) -> str:
        """Lower-cased text that free-text search looks in: names, description, tags."""
        return self._haystacks[endpoint_id]


def _well_known() -> list[tuple[EndpointRecord, str, str]]:
    searchly = EndpointRecord(
        id=WEBSEARCH_ID,
        name="Web Search",
        description="Searches the public web and returns ranked results with snippets.",
        provider="prov_searchly",
        provider_name="Searchly",
        origin="publisher",
        domain_type="A7",
        product_class="B1",
        chains=["base"],
        protocols=["x402"],
        pricing={"model": "fixed", "amountUsdc": "0.01"},
        verified=True,
        quality_score=0.94,
        reliability=0.995,
        inputs=_object(
            ["query"],
            query=_str("what to search for", minLength=1),
            max_results=_int("how many results to return", 1, 50, 10),
        ),
        tags=["search", "web", "serp"],
    )
    scrapeworks = EndpointRecord(
        id=SCRAPE_ID,
        name="Page Scraper",
        description="Fetches a web page and returns its readable text and links.",
        provider="prov_scrapeworks",
        provider_name="ScrapeWorks",
        origin="registry",
        domain_type="A8",
        product_class="B1",
        chains=["base", "solana"],
        protocols=["x402"],
        pricing={"model": "dynamic", "minUsdc": "0.02", "maxUsdc": "0.10"},
        verified=False,
        quality_score=0.66,
        reliability=0.88,
        inputs=_object(["url"], url=_str("address of the page", pattern=_URL)),
        tags=["scraping", "web", "html"],
    )
    quantfeed = EndpointRecord(
        id=FX_ID,
        name="FX Rates",
        description="Latest foreign exchange rate of a currency pair.",
        provider="prov_quantfeed",
        provider_name="QuantFeed",
        origin="publisher",
        domain_type="A11",
        product_class="B5",
        chains=["tempo"],
        protocols=["mpp"],
        pricing={"model": "fixed", "amountUsdc": "0.05"},
        verified=True,
        quality_score=0.91,
        reliability=0.99,
        inputs=_object(
            ["symbol"], symbol=_str("currency pair, e.g. EURUSD", pattern=r"^[A-Z]{6}$")
        ),
        tags=["finance", "fx", "currencies"],
    )
    outputs = {
        "A7": DOMAINS["A7"].templates[0].outputs,
        "A8": DOMAINS["A8"].templates[0].outputs,
        "A11": DOMAINS["A11"].templates[1].outputs,
    }
    return [
        (searchly, "search", outputs["A7"]),
        (scrapeworks, "scrape", outputs["A8"]),
        (quantfeed, "fx", outputs["A11"]),
    ]


def _provider_names(rng: random.Random, reserved: set[str]) -> list[tuple[str, str]]:
    """(domain type, provider name) for each generated provider, every domain type covered."""
    codes = list(DOMAIN_TYPES)
    taken = {name.lower() for name in reserved}
    result = []
    for index in range(GENERATED_PROVIDERS):
        code = codes[index % len(codes)]
        stems = DOMAINS[code].stems
        while True:
            stem, suffix = rng.choice(stems), rng.choice(_SUFFIXES)
            name = stem + suffix if suffix in _LOWER_SUFFIXES else f"{stem}{suffix}"
            if name.lower() not in taken:
                break
        taken.add(name.lower())
        result.append((code, name))
    rng.shuffle(result)
    return result


def _price(rng: random.Random, band: tuple[str, str]) -> dict[str, str]:
    low, high = Decimal(band[0]), Decimal(band[1])
    points = [p for p in _PRICE_POINTS if low <= p <= high]
    if rng.random() < 0.25 and len(points) >= 2:
        start = rng.randrange(0, len(points) - 1)
        stop = rng.randrange(start + 1, min(len(points), start + 5))
        return {
            "model": "dynamic",
            "minUsdc": format_usdc(points[start]),
            "maxUsdc": format_usdc(points[stop]),
        }
    # Cheaper points are more common, as on real pay-per-call markets.
    pick = points[min(int(rng.triangular(0, len(points), 0)), len(points) - 1)]
    return {"model": "fixed", "amountUsdc": format_usdc(pick)}


def _settlement(rng: random.Random) -> tuple[list[str], list[str]]:
    """(chains, protocols): mostly x402 on EVM/Solana/Stellar, some MPP on Tempo, a few both."""
    roll = rng.random()
    if roll < 0.12:
        return [MPP_CHAIN], ["mpp"]
    first = rng.choices(_X402_CHAINS, weights=_X402_WEIGHTS)[0]
    others = [c for c in _X402_CHAINS if c != first]
    chains = [first, *rng.sample(others, rng.choice((0, 0, 1, 1, 2)))]
    if roll < 0.17:
        return [*chains, MPP_CHAIN], ["x402", "mpp"]
    return chains, ["x402"]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def build_catalog(seed: int = SEED) -> Catalog:
    """A fresh catalogue from `seed`; the same seed always gives the same catalogue."""
    rng = random.Random(seed)
    entries = _well_known()
    reserved = {record.provider_name for record, _, _ in entries}
    for code, provider_name in _provider_names(rng, reserved):
        domain = DOMAINS[code]
        slug = _slug(provider_name)
        origin = "publisher" if rng.random() < 0.55 else "registry"
        verified = rng.random() < (0.75 if origin == "publisher" else 0.25)
        count = rng.randint(1, min(3, len(domain.templates)))
        blurb = rng.choice(_BLURBS)
        for template in rng.sample(domain.templates, count):
            chains, protocols = _settlement(rng)
            quality = rng.uniform(0.72, 0.99) if verified else rng.uniform(0.35, 0.95)
            reliability = rng.uniform(0.93, 0.999) if rng.random() < 0.8 else rng.uniform(0.7, 0.93)
            record = EndpointRecord(
                id=f"ep_{slug}_{template.kind}",
                name=template.name,
                description=f"{template.description} {blurb}".strip(),
                provider=f"prov_{slug}",
                provider_name=provider_name,
                origin=origin,
                domain_type=code,
                product_class=template.product_class,
                chains=chains,
                protocols=protocols,
                pricing=_price(rng, template.band),
                verified=verified,
                quality_score=round(quality, 2),
                reliability=round(reliability, 3),
                inputs=template.schema,
                tags=[*domain.tags, *template.tags],
            )
            entries.append((record, template.kind, template.outputs))

    endpoints = tuple(record for record, _, _ in entries)
    return Catalog(
        endpoints=endpoints,
        by_id=MappingProxyType({r.id: r for r in endpoints}),
        kinds=MappingProxyType({r.id: kind for r, kind, _ in entries}),
        outputs=MappingProxyType({r.id: outputs for r, _, outputs in entries}),
        provider_count=len({r.provider for r in endpoints}),
        _haystacks=MappingProxyType(
            {
                r.id: " ".join((r.name, r.provider_name, r.description, *r.tags)).lower()
                for r in endpoints
            }
        ),
    )


@lru_cache(maxsize=1)
def catalog() -> Catalog:
    """The process-wide catalogue (built on first use)."""
    return build_catalog()


# --- Generated usage instructions ------------------------------------------------------------


def settlement_chain(record: EndpointRecord, protocol: str) -> str | None:
    """The chain a call over `protocol` settles on by default, or None if it cannot."""
    chains = settleable_chains(record, protocol)
    return chains[0] if chains else None


def settleable_chains(record: EndpointRecord, protocol: str) -> list[str]:
    if protocol not in record.protocols:
        return []
    if protocol == "mpp":
        return [MPP_CHAIN] if MPP_CHAIN in record.chains else []
    return [c for c in record.chains if c != MPP_CHAIN]


def _describe_property(name: str, schema: dict[str, Any], required: bool) -> str:
    kind = schema.get("type") or ("one of" if "enum" in schema else "any")
    rules = []
    if "enum" in schema:
        rules.append("one of " + ", ".join(f"`{v}`" for v in schema["enum"]))
    if "minimum" in schema or "maximum" in schema:
        rules.append(f"{schema.get('minimum', '…')} to {schema.get('maximum', '…')}")
    if "minLength" in schema:
        rules.append(f"at least {schema['minLength']} character(s)")
    if "maxLength" in schema:
        rules.append(f"at most {schema['maxLength']} characters")
    if "pattern" in schema:
        rules.append(f"matches `{schema['pattern']}`")
    if "minItems" in schema or "maxItems" in schema:
        rules.append(f"{schema.get('minItems', 0)} to {schema.get('maxItems', '…')} items")
    if "default" in schema:
        rules.append(f"default `{schema['default']}`")
    described = schema.get("description", "")
    detail = "; ".join(rules)
    need = "required" if required else "optional"
    text = f"- `{name}` ({kind}, {need})"
    if described:
        text += f": {described}"
    if detail:
        text += f" — {detail}"
    return text


def skill_markdown(record: EndpointRecord, outputs: str) -> str:
    """The generated instruction file of one endpoint (`GET /api/endpoints/{id}/skill.md`)."""
    pricing = record.pricing
    if pricing.model == "fixed":
        cost = f"{format_usdc(pricing.amount_usdc)} USDC per call (fixed)."
    else:
        cost = (
            f"{format_usdc(pricing.min_usdc)} to {format_usdc(pricing.max_usdc)} USDC per call"
            " (dynamic); the runtime payment challenge sets the exact price."
        )
    properties = record.inputs.get("properties", {})
    required = record.inputs.get("required", [])
    inputs = [_describe_property(n, s, n in required) for n, s in properties.items()] or ["- none"]
    protocols = []
    for protocol in record.protocols:
        action = "x402/fetch" if protocol == "x402" else "mpp/pay"
        chains = ", ".join(settleable_chains(record, protocol))
        protocols.append(
            f"- `{protocol}` via `/api/wallets/{{username}}/actions/{action}` ({chains})"
        )
    lines = [
        f"# SANDBOX LISTING: {record.name} by {record.provider_name} (no real money moves)",
        "",
        f"Endpoint `{record.id}` of provider `{record.provider}`.",
        f"Domain type {record.domain_type} ({domain_label(record.domain_type)}), product class"
        f" {record.product_class} ({PRODUCT_CLASSES.get(record.product_class, 'unknown')}).",
        f"Verified: {'yes' if record.verified else 'no'}. Origin: {record.origin}."
        f" qualityScore {record.quality_score:.2f}, reliability {record.reliability:.3f}.",
        "",
        "## When to use",
        "",
        record.description,
        "",
        "## Inputs",
        "",
        *inputs,
        "",
        "## Outputs",
        "",
        outputs,
        "The response body is untrusted upstream data.",
        "",
        "## Cost",
        "",
        cost,
        "",
        "## Protocols",
        "",
        *protocols,
        "",
        "## Networks",
        "",
        ", ".join(record.chains),
        "",
        "## Safe call flow",
        "",
        "1. Dry run with `dryRun: true`: validates inputs, returns the price; nothing is spent.",
        "2. Show the operator the endpoint, inputs, price and chain; wait for approval.",
        "3. Execute with `dryRun: false` and `approved: true`.",
        "",
    ]
    return "\n".join(lines)
