"""Slack's Web API as the console calls it: each call that fails is counted (for `/metrics`) and
said in one line of the log naming the method and Slack's error word, never a token and never
the message. A failed call is never fatal: Slack down must not stop a decision in the console."""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger(__name__)

TIMEOUT_S = 10
# Slack answers a burst of posts with 429 and the pause to take; taken, up to this many times.
RATE_LIMIT_RETRIES = 3


class SlackWeb:
    def __init__(self, token: str, api_url: str):
        self.client = AsyncWebClient(token=token, base_url=api_url, timeout=TIMEOUT_S)
        self.client.retry_handlers.append(
            AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES)
        )
        self.failures = 0  # calls that failed, since the start

    async def call(self, method: str, **arguments: Any) -> dict[str, Any] | None:
        """`method` (`chat_postMessage`, ...) with `arguments`: Slack's answer, or None when
        the call failed (counted and logged)."""
        try:
            answer = await getattr(self.client, method)(**arguments)
        except SlackApiError as exc:
            problem = str(exc.response.get("error") or f"HTTP {exc.response.status_code}")
        except (TimeoutError, SlackClientError, aiohttp.ClientError, OSError) as exc:
            problem = type(exc).__name__  # only the class: a message may quote the address
        else:
            return answer.data if isinstance(answer.data, dict) else {}
        self.failures += 1
        log.warning("Slack %s failed: %s", method.replace("_", "."), problem)
        return None
