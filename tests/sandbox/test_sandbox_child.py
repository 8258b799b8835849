"""The embedded sandbox in a process of its own (sandbox.child): it starts, serves over real
HTTP, keeps its folder and secrets owner-only, and never outlives the console that started it,
even one killed with SIGKILL. And the runtime's own sandbox is that child, the demo's set-up
included."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from helpers import eventually, process_gone

from svc_console.sandbox.child import SandboxChild


@pytest.fixture
async def child(tmp_path: Path):
    sandbox = SandboxChild(tmp_path / "sandbox")
    sandbox.start()
    try:
        await sandbox.ready()
        yield sandbox
    finally:
        sandbox.stop()


def admin(child: SandboxChild, key: str | None = None) -> httpx.AsyncClient:
    token = key if key is not None else child.state.api_key
    return httpx.AsyncClient(
        base_url=child.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )


async def test_the_child_serves_the_sandbox_in_another_process(child):
    assert child.pid is not None and child.pid != os.getpid()
    async with admin(child) as http:
        health = await http.get("/api/health")
        assert health.status_code == 200 and health.json()["sandbox"] is True
        endpoint = await http.get("/api/endpoints/ep_websearch_basic")
        assert endpoint.status_code == 200 and endpoint.json()["id"] == "ep_websearch_basic"


async def test_a_client_that_connects_before_the_child_serves_is_answered(tmp_path):
    sandbox = SandboxChild(tmp_path / "sandbox")
    try:
        base_url = sandbox.start()
        # No wait for `ready`: the socket listens from the start and queues the request.
        async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
            assert (await http.get("/api/health")).status_code == 200
    finally:
        sandbox.stop()


async def test_the_balance_is_set_and_read_over_the_admin_route_with_the_api_key(child):
    async with admin(child) as http:
        answer = await http.put("/sandbox/balance", json={"balanceUsdc": "1.20"})
        assert answer.status_code == 200
        assert Decimal(answer.json()["balanceUsdc"]) == Decimal("1.20")
        usage = await http.get("/api/agent/usage", params={"limit": "1"})
        assert Decimal(usage.json()["balanceUsdc"]) == Decimal("1.20")
        refused = await http.put("/sandbox/balance", json={"balanceUsdc": "-1"})
        assert refused.status_code == 400
        # A top-up that is no amount is refused with its name, and the balance stays.
        bad = {"balanceUsdc": "50", "topUpUsdc": "plenty"}
        refused = await http.put("/sandbox/balance", json=bad)
        assert refused.status_code == 400 and "topUpUsdc" in refused.text
    async with admin(child, key="sk_live_not-the-key") as stranger:
        assert (await stranger.get("/sandbox/balance")).status_code == 401
        refused = await stranger.put("/sandbox/balance", json={"balanceUsdc": "99"})
        assert refused.status_code == 401
    async with admin(child) as http:
        assert Decimal((await http.get("/sandbox/balance")).json()["balanceUsdc"]) == Decimal("1.2")


async def test_the_admin_routes_are_never_faulted(child):
    async with admin(child) as http:
        armed = await http.post("/sandbox/faults", json={"kind": "error", "routes": ["all"]})
        assert armed.status_code == 201
        assert (await http.get("/sandbox/balance")).status_code == 200
        assert (await http.get("/api/endpoints/ep_websearch_basic")).status_code >= 500


async def test_its_folder_and_output_are_owner_only_and_its_secrets_stay_off_its_command_line(
    child,
):
    folder = child.folder
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(child.errors_path.stat().st_mode) == 0o600
    command_line = Path(f"/proc/{child.pid}/cmdline").read_bytes()
    environment = Path(f"/proc/{child.pid}/environ").read_bytes()
    for secret in (child.state.api_key, child.state.api_token):
        assert secret.encode() not in command_line
        assert secret.encode() not in environment


async def test_stop_ends_the_child_and_its_port(tmp_path):
    sandbox = SandboxChild(tmp_path / "sandbox")
    base_url = sandbox.start()
    await sandbox.ready()
    pid = sandbox.pid
    assert pid is not None
    sandbox.stop()
    assert process_gone(pid)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{base_url}/api/health", timeout=5)


# A console that starts its sandbox, says the child's pid, and waits: killed with SIGKILL, it
# can close nothing itself.
_PARENT = """
import asyncio, sys
from pathlib import Path
from svc_console.sandbox.child import SandboxChild

child = SandboxChild(Path(sys.argv[1]))
child.start()
asyncio.run(child.ready())
print(child.pid, child.base_url, flush=True)
sys.stdin.read()
"""


async def test_the_child_dies_with_its_parent_even_one_killed_with_sigkill(tmp_path):
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, str(tmp_path / "sandbox")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        pid_text, base_url = parent.stdout.readline().split()
        pid = int(pid_text)
        assert httpx.get(f"{base_url}/api/health", timeout=30).status_code == 200
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        await eventually(lambda: process_gone(pid), timeout=30)
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{base_url}/api/health", timeout=5)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
