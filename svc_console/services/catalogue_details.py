"""What the catalogue screen fetches for the one item the operator selected: an endpoint's
skill.md (`GET /api/endpoints/{id}/skill.md`) and a dataset's free trial (the MCP tool
`try_dataset`: preview rows, the coverage of the fields the operator needs, the full datacard;
the service has no REST route for it).

Both are free and spend nothing. What comes back is untrusted text: the screen shows it through
`core.sanitize`. A skill.md longer than `MAX_SKILL_CHARS` is cut (and says so), so a hostile
listing cannot make the console render megabytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import ValidationError

from svc_console.core.datasets import TrialResult
from svc_console.market import errors
from svc_console.market.mcp import McpClient

if TYPE_CHECKING:
    from svc_console.market.rest import MarketClient

MAX_SKILL_CHARS = 64_000


async def skill(rest: MarketClient, endpoint_id: str) -> str:
    """The endpoint's skill.md, cut at `MAX_SKILL_CHARS`."""
    text = await rest.skill(endpoint_id)
    if len(text) > MAX_SKILL_CHARS:
        cut = len(text) - MAX_SKILL_CHARS
        text = f"{text[:MAX_SKILL_CHARS]}\n\n… [{cut} more characters not shown]\n"
    return text


async def try_dataset(
    mcp: McpClient, dataset_id: str, required_fields: Sequence[str] = ()
) -> TrialResult:
    """`try_dataset` for one dataset, with the coverage of `required_fields`."""
    arguments: dict[str, object] = {"dataset_id": dataset_id}
    if required_fields:
        arguments["required_fields"] = list(required_fields)
    result = await mcp.call_tool("try_dataset", arguments)
    try:
        return TrialResult.model_validate(result.data())
    except ValidationError:
        raise errors.MalformedResponse("try_dataset answered an unexpected result") from None
