"""`GET /api/jobs/{job_id}`: how a caller follows one of its compute jobs (`sandbox.compute`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from svc_console.sandbox.web import Refusal, bearer

if TYPE_CHECKING:
    from svc_console.sandbox.state import SandboxState


def routes(state: SandboxState, listing: object) -> list[Route]:
    """`GET /api/jobs/{job_id}`: the record of one of the caller's jobs (key or mcp:tools token).
    Each call counts as a look and may advance the job."""

    async def job(request: Request) -> Response:
        caller = state.accounts.caller(bearer(request))
        if caller is None or "mcp:tools" not in caller.scopes:
            raise Refusal(
                401,
                "UNAUTHORIZED",
                "missing or invalid API key or mcp:tools token",
                headers={"WWW-Authenticate": 'Bearer realm="svc-console sandbox"'},
            )
        record = state.jobs.look(request.path_params["job_id"], caller.agent_id)
        if record is None:
            raise Refusal(404, "NOT_FOUND", "no job with that id for this agent")
        return JSONResponse(record)

    return [Route("/api/jobs/{job_id}", job, methods=["GET"])]
