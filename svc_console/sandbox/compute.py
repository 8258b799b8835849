"""Compute jobs of the paid MCP tools (`svc_breed_agent`, `merge_models`): made-up GPU work that
moves through `queued` -> `running` -> `succeeded`; `sandbox.compute_routes` serves
`GET /api/jobs/{id}` to follow one.

A job advances one step per look (each `GET /api/jobs/{id}`) or every `STEP_S` seconds of its
`clock`, whichever comes first, so a test can watch it finish without sleeping and an idle job
still finishes. No GPU runs and the result is a made-up artifact address.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from svc_console.sandbox import upstream

STATES = ("queued", "running", "succeeded")
STEP_S = 5.0
MAX_JOBS = 10_000
_KINDS = {"svc_breed_agent": "fine_tune", "merge_models": "model_merge"}


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


@dataclass
class Job:
    id: str
    tool: str
    agent_id: str
    created_at: float
    params: dict[str, Any]
    charged_usdc: str
    payment: dict[str, Any]
    looks: int = 0
    stage_times: list[float] = field(default_factory=list)


class JobBoard:
    """The sandbox's compute jobs, in memory; `clock` may be replaced by a test."""

    def __init__(self, clock: Callable[[], float] = time.time):
        self.clock = clock
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}

    def create(
        self,
        tool: str,
        *,
        agent_id: str,
        params: dict[str, Any],
        charged_usdc: str,
        payment: dict[str, Any],
    ) -> dict[str, Any]:
        if tool not in _KINDS:
            raise ValueError(f"no compute tool named {tool}")
        now = self.clock()
        job = Job(
            id="job_" + secrets.token_hex(8),
            tool=tool,
            agent_id=agent_id,
            created_at=now,
            params=params,
            charged_usdc=charged_usdc,
            payment=payment,
            stage_times=[now],
        )
        with self._lock:
            if len(self._jobs) >= MAX_JOBS:
                # The oldest job goes: a sandbox that ran this many is a long-lived demo.
                del self._jobs[next(iter(self._jobs))]
            self._jobs[job.id] = job
            return self._record(job)

    def look(self, job_id: str, agent_id: str | None = None) -> dict[str, Any] | None:
        """The job's record after one more look (None when unknown or another agent's)."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or (agent_id is not None and job.agent_id != agent_id):
                return None
            job.looks += 1
            self._advance(job, looks=job.looks)
            return self._record(job)

    def peek(self, job_id: str) -> dict[str, Any] | None:
        """The job's record without counting a look."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return None
            self._advance(job, looks=job.looks)
            return self._record(job)

    def _advance(self, job: Job, *, looks: int) -> None:
        now = self.clock()
        by_time = int((now - job.created_at) // STEP_S)
        target = min(max(looks, by_time), len(STATES) - 1)
        while len(job.stage_times) <= target:
            job.stage_times.append(now)

    def _record(self, job: Job) -> dict[str, Any]:
        stage = len(job.stage_times) - 1
        status = STATES[stage]
        record: dict[str, Any] = {
            "id": job.id,
            "jobId": job.id,
            "tool": job.tool,
            "kind": _KINDS[job.tool],
            "status": status,
            "progress": round(stage / (len(STATES) - 1), 2),
            "createdAt": _iso(job.created_at),
            "updatedAt": _iso(job.stage_times[-1]),
            "startedAt": _iso(job.stage_times[1]) if stage >= 1 else None,
            "finishedAt": _iso(job.stage_times[2]) if stage >= 2 else None,
            "params": job.params,
            "chargedUsdc": job.charged_usdc,
            "payment": job.payment,
            "result": self._result(job) if status == "succeeded" else None,
            "sandbox": True,
        }
        return record

    @staticmethod
    def _result(job: Job) -> dict[str, Any]:
        seed = upstream.digest("job", job.id)
        name = f"sandbox/{_KINDS[job.tool].replace('_', '-')}-{job.id[4:]}"
        result: dict[str, Any] = {
            "model": name,
            "artifactUrl": f"{upstream.FILES}/models/{job.id}.safetensors",
            "note": "SANDBOX: no GPU ran; this artifact does not exist",
        }
        if job.tool == "svc_breed_agent":
            score = 0.6 + (int.from_bytes(seed[:4], "big") % 3500) / 10_000
            result["metrics"] = {"task": job.params.get("target_task"), "score": round(score, 4)}
        else:
            result["mergeMethod"] = job.params.get("merge_method")
            result["sources"] = job.params.get("models", [])
        return result
