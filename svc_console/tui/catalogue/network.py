"""What the catalogue screen asks the network for, each as a coroutine for an async worker that
returns or posts the message the screen applies: an endpoint's skill.md (REST), a dataset's free
trial (MCP) and a sync of the whole catalogue into the cache, with its progress."""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from textual.message import Message

from svc_console.core.sanitize import inert_line
from svc_console.market.errors import MarketError
from svc_console.market.mcp import McpClient
from svc_console.runtime import Runtime
from svc_console.services.catalogue_details import skill, try_dataset
from svc_console.services.catalogue_sync import SyncProgress
from svc_console.tui.catalogue.messages import SkillLoaded, SyncEnded, SyncProgressed, TrialLoaded

log = logging.getLogger(__name__)

DETAILS_KEPT = 32  # skill.md texts and trials kept for the session, the latest
PROGRESS_EVERY_S = 0.2

Key = TypeVar("Key")
Value = TypeVar("Value")


def remember(kept: OrderedDict[Key, Value], key: Key, value: Value) -> None:
    """Keep `value`, forgetting the oldest beyond `DETAILS_KEPT`."""
    kept[key] = value
    while len(kept) > DETAILS_KEPT:
        kept.popitem(last=False)


def failure(exc: BaseException) -> tuple[str, str]:
    """What went wrong with the network: a code word and one line (from untrusted text)."""
    if isinstance(exc, MarketError):
        return inert_line(exc.code, 40), inert_line(exc.message, 160)
    return "UNEXPECTED", f"{type(exc).__name__}; see the log"


def said(failed: tuple[str, str]) -> str:
    code, message = failed
    return f"{message} ({code})"


async def fetch_skill(rest: Any, endpoint_id: str) -> SkillLoaded:
    try:
        text = await skill(rest, endpoint_id)
    except Exception as exc:
        if not isinstance(exc, MarketError):
            log.exception("skill.md of %s", endpoint_id)
        return SkillLoaded(endpoint_id, None, said(failure(exc)))
    return SkillLoaded(endpoint_id, text, None)


async def fetch_trial(mcp: McpClient, dataset_id: str, fields: tuple[str, ...]) -> TrialLoaded:
    try:
        trial = await try_dataset(mcp, dataset_id, fields)
    except Exception as exc:
        if not isinstance(exc, MarketError):
            log.exception("try_dataset of %s", dataset_id)
        return TrialLoaded(dataset_id, fields, None, said(failure(exc)))
    return TrialLoaded(dataset_id, fields, trial, None)


def sync(runtime: Runtime, post: Callable[[Message], Any]) -> Coroutine[Any, Any, None]:
    """A sync of the catalogue into the cache: `SyncProgressed` a few times a second (hundreds of
    redraws would slow the sync down), then `SyncEnded`."""
    last = [0.0]

    def progressed(progress: SyncProgress) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY_S or progress.stage == "storing":
            last[0] = now
            post(SyncProgressed(progress))

    async def run() -> None:
        try:
            report = await runtime.sync_catalogue(progress=progressed)
        except Exception as exc:
            if not isinstance(exc, MarketError):
                log.exception("catalogue sync")
            post(SyncEnded(None, failure(exc)))
            return
        post(SyncEnded(report, None))

    return run()
