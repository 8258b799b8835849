"""An agent running as another user (uid 65534), as DESIGN.md means agents to run: it speaks the
agents' socket, opened to it by `[agents] uids`, and gets its result once the operator approves;
it cannot reach the operator socket, read the console's files, or call an operator method."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from helpers import eventually

from svc_console.broker.params import ApproveParams
from svc_console.config.agent_registry import AgentRegistry
from svc_console.config.agents import AgentSettings
from svc_console.config.operator_passphrase import OperatorPassphrase
from svc_console.config.paths import Paths
from svc_console.core.states import State
from svc_console.runtime import Runtime

NOBODY = 65534
REPO = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = "/usr/bin/python3"

AGENT = """
import json, socket, sys
from svc_console.agent import Agent, AgentError

agents_socket, operator_socket, home = sys.argv[1:4]
report = {}
try:
    socket.socket(socket.AF_UNIX).connect(operator_socket)
    report["operator_socket"] = "reached"
except OSError as exc:
    report["operator_socket"] = exc.__class__.__name__
for name in ("operator.passphrase", "agents.json"):
    try:
        open(f"{home}/{name}").read()
        report[name] = "read"
    except OSError as exc:
        report[name] = exc.__class__.__name__
with Agent(None, agents_socket, token="") as agent:
    report["agent"] = agent.hello_info["agent"]
    try:
        agent.call("approvals.approve", {"request_id": "req_any"})
    except AgentError as exc:
        report["approvals"] = exc.reason
    ticket = agent.submit(
        endpoint_id="ep_websearch_basic", inputs={"query": "q"}, purpose="as another user"
    )
    print(json.dumps(ticket), flush=True)
    done = agent.wait_for_outcome(ticket["request_id"], 60)
    report["state"] = done["state"]
    report["charged"] = (done.get("outcome") or {}).get("charged_usdc")
print(json.dumps(report), flush=True)
"""


def _can_run_as_nobody() -> str | None:
    """Why this test cannot run here, or None."""
    if os.getuid() != 0:
        return "starting a process as another user needs root"
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return f"no {SYSTEM_PYTHON} for the other user to run"
    probe = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import svc_console.agent"],
        user=NOBODY,
        env={"PYTHONPATH": str(REPO)},
        capture_output=True,
        check=False,
    )
    if probe.returncode != 0:
        return f"uid {NOBODY} cannot import the agent client from {REPO}"
    return None


@pytest.fixture
def shared_root():
    """A folder under /tmp that other users may enter: the console's home inside it stays
    owner-only, the agents' socket goes in `run/`."""
    why = _can_run_as_nobody()
    if why is not None:
        pytest.skip(why)
    root = Path(tempfile.mkdtemp(prefix="svc-apart-", dir="/tmp"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


async def test_an_agent_of_another_user_is_served_and_kept_out_of_the_operators_side(
    shared_root, sandbox
):
    home = shared_root / "home"
    paths = Paths(home=home, socket=shared_root / "run" / "agents.sock", explicit_home=True)
    AgentRegistry(paths.agent_registry).add("nobody-bot", uid=NOBODY)
    OperatorPassphrase(paths.operator_passphrase).set("a passphrase of the operator")
    runtime = Runtime(
        paths=paths,
        sandbox=sandbox,
        agent_settings=AgentSettings(enrolment="strict", uids=frozenset({NOBODY})),
    )
    await runtime.start()
    try:
        assert runtime.agent_warning is None  # strict, and no same-user agents
        assert oct(paths.socket.stat().st_mode & 0o777) == "0o666"
        agent = subprocess.Popen(
            [SYSTEM_PYTHON, "-c", AGENT, str(paths.socket), str(paths.operator_socket), str(home)],
            user=NOBODY,
            env={"PYTHONPATH": str(REPO)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = await asyncio.to_thread(agent.stdout.readline)
        assert line, agent.stderr.read()
        request_id = json.loads(line)["request_id"]
        await eventually(lambda: runtime.broker.get(request_id).state == State.pending, 30)
        request = runtime.broker.get(request_id)
        # Recognised by its uid alone, as the agent registered for it.
        assert request.agent == "nobody-bot" and request.agent_verified is True
        assert request.submitter.uid == NOBODY and request.submitter.pid == agent.pid
        await runtime.broker.approve(ApproveParams(request_id=request_id))
        out, err = await asyncio.to_thread(agent.communicate, timeout=60)
        assert agent.returncode == 0, err
        report = json.loads(out)
    finally:
        await runtime.stop()
    assert report["agent"] == {"name": "nobody-bot", "verified": True}
    assert report["state"] == "succeeded" and report["charged"] == "0.01"
    assert report["approvals"] == "not_authorised"
    assert report["operator_socket"] == "PermissionError"
    assert report["operator.passphrase"] == report["agents.json"] == "PermissionError"


async def test_a_uid_the_settings_do_not_name_is_refused(shared_root, sandbox):
    home = shared_root / "home"
    paths = Paths(home=home, socket=shared_root / "run" / "agents.sock", explicit_home=True)
    runtime = Runtime(
        paths=paths,
        sandbox=sandbox,
        agent_settings=AgentSettings(enrolment="open", uids=frozenset({NOBODY + 1})),
    )
    await runtime.start()
    try:
        script = (
            "import sys\nfrom svc_console.agent import Agent, AgentError\n"
            "try:\n    Agent('stranger', sys.argv[1]).connect()\n"
            "except AgentError as exc:\n    print(exc.reason, exc.message)\n"
        )
        refused = await asyncio.to_thread(
            subprocess.run,
            [SYSTEM_PYTHON, "-c", script, str(paths.socket)],
            user=NOBODY,
            env={"PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        await runtime.stop()
    assert refused.stdout.startswith("not_authorised"), refused.stderr
    assert f"uid {NOBODY} may not use this socket" in refused.stdout
