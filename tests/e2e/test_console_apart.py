"""The console as a user of its own, as `service install` sets it up: the broker served as a
dedicated uid, its home owner-only, its sockets in a folder of its own; the operator and an agent
of theirs both running as a second uid. The agent reads no file of the console's, gets nothing
from the wallet proxy without the token, cannot decide without the operator's credential, and its
paid call through `svc-console mcp` succeeds once the operator approves with that credential."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest
from helpers import eventually
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from svc_console.config.agent_registry import AgentRegistry
from svc_console.config.operator_accounts import OperatorAccounts
from svc_console.services.service_unit import with_access

CONSOLE_UID = 64999  # a uid with no name: the console's own user
OPERATOR_UID = 65534  # the operator, and an agent the operator runs
REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"  # an interpreter other users may run
PYTHONPATH = f"{REPO}:{sysconfig.get_paths()['purelib']}"
HOST = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"
SUBMIT = ("agent", "submit", "--agent", "bot", "--endpoint", "ep_websearch_basic")
SUBMIT += ("--inputs", '{"query": "q"}', "--purpose", "p")
SEARCH = {"endpoint_id": "ep_websearch_basic", "inputs": {"query": "q"}, "purpose": "laptop"}
# The MCP host, as the operator: it drops to the operator's uid and runs the bridge as a child
# (the console traces a request to the host that ran the bridge, which the operator is not).
AS_OPERATOR = (
    f"import os, subprocess, sys; os.setgroups([]); os.setgid({OPERATOR_UID});"
    f" os.setuid({OPERATOR_UID}); sys.exit(subprocess.call(sys.argv[1:]))"
)

PROBE = """
import json, sys, urllib.error, urllib.request
from svc_console.agent import Agent

files, agents_socket = json.loads(sys.argv[1]), sys.argv[2]
report = {"read": []}
for name in files:
    try:
        open(name, "rb").read(1)
        report["read"].append(name)
    except OSError:
        pass
with Agent("laptop-bot", agents_socket) as agent:
    wallet = agent.hello_info["service"]["wallet_api_base"]
body = json.dumps({"approved": True, "url": "http://x", "method": "GET"}).encode()
request = urllib.request.Request(
    f"{wallet}/api/wallets/laptop-bot/actions/x402/fetch", body,
    {"content-type": "application/json"}, method="POST")
try:
    urllib.request.urlopen(request, timeout=30)
    report["wallet"] = "paid"
except urllib.error.HTTPError as exc:
    report["wallet"] = exc.code
print(json.dumps(report))
"""

# The console's TUI as the operator runs it (`svc-console` with no command attaches to the service
# it finds), driven headless: signs in, reads the queue over the socket, approves the request.
TUI = """
import asyncio, json, os, sys
sys.path.insert(0, sys.argv[1])
from tui_support import rows, screen_text, secret_asked, type_text
from svc_console.cli.attach import attached_console
from svc_console.tui.app import ConsoleApp
from svc_console.tui.attached.sign_in import SignInScreen

async def main():
    console = attached_console()
    app = ConsoleApp(console, cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await secret_asked(pilot, SignInScreen)
        await type_text(pilot, "alice")
        await pilot.press("enter")
        await type_text(pilot, os.environ["SVC_OPERATOR_TOKEN"])
        await pilot.press("enter")
        await rows(pilot, 1)
        said = {"apart": console.apart, "shown": screen_text(app)}
        await pilot.press("a")
        await rows(pilot, 0)
    print(json.dumps(said))

asyncio.run(main())
"""


def _why_not_here() -> str | None:
    if os.getuid() != 0:
        return "running processes as other uids needs root"
    if not os.access(PYTHON, os.X_OK):
        return f"no {PYTHON} for the other uids to run"
    probe = subprocess.run(
        [PYTHON, "-c", "import sys, svc_console.cli.entry, mcp; print(sys.version_info[:2])"],
        user=OPERATOR_UID,
        env={"PYTHONPATH": PYTHONPATH},
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0 or probe.stdout.strip() != str(sys.version_info[:2]):
        return f"uid {OPERATOR_UID} cannot run svc-console with {PYTHON}: {probe.stderr[-200:]}"
    return None


@pytest.fixture
def machine() -> Iterator[Path]:
    """A folder others may enter, holding the console's home (owner-only, the console's uid)
    and its sockets' folder (0711, the console's uid), as the unit's RuntimeDirectory is."""
    why = _why_not_here()
    if why is not None:
        pytest.skip(why)
    root = Path(tempfile.mkdtemp(prefix="svc-service-", dir="/tmp"))
    root.chmod(0o755)
    (root / "home").mkdir(mode=0o700)
    (root / "run").mkdir(mode=0o711)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _give(folder: Path, uid: int) -> None:
    for item in [folder, *folder.rglob("*")]:
        os.chown(item, uid, uid, follow_symlinks=False)


def installed(machine: Path, agent: str, *, account: bool) -> str | None:
    """The console's home as `service install` leaves it: strict enrolment, `agent` registered
    for the operator's uid, both sockets opened to that uid, everything the console's uid's;
    with `account`, an operator account for alice, whose token is returned."""
    home = machine / "home"
    (home / "settings.toml").write_text(
        with_access('[agents]\nenrolment = "strict"\n', OPERATOR_UID)
    )
    AgentRegistry(home / "agents.json").add(agent, uid=OPERATOR_UID)
    token = OperatorAccounts(home / "operators.json").add("alice") if account else None
    _give(home, CONSOLE_UID)
    os.chown(machine / "run", CONSOLE_UID, CONSOLE_UID)
    return token


def _env(root: Path) -> dict[str, str]:
    return {
        "PYTHONPATH": PYTHONPATH,
        "SVC_CONSOLE_HOME": str(root / "home"),
        "SVC_CONSOLE_SOCKET": str(root / "run" / "agents.sock"),
        "SVC_CONSOLE_OPERATOR_SOCKET": str(root / "run" / "operator.sock"),
        "HOME": str(root / "home"),
    }


@contextlib.contextmanager
def served(root: Path) -> Iterator[subprocess.Popen[str]]:
    """`svc-console serve` as the console's uid, as the unit runs it."""
    server = subprocess.Popen(
        [PYTHON, "-m", "svc_console", "serve"],
        user=CONSOLE_UID,
        group=CONSOLE_UID,
        extra_groups=[],
        env=_env(root),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "broker on" in server.stdout.readline(), server.stderr.read()
        yield server
    finally:
        server.terminate()
        server.communicate(timeout=60)


def as_operator(
    root: Path, *args: str, timeout: float = 60, **env: str
) -> subprocess.CompletedProcess[str]:
    """A command the operator (or an agent of theirs) runs: their uid, the service's sockets."""
    everything = {**_env(root), "HOME": "/nonexistent", **env}
    everything["SVC_CONSOLE_HOME"] = str(root / "operator-home")
    return subprocess.run(
        [PYTHON, *args],
        user=OPERATOR_UID,
        group=OPERATOR_UID,
        extra_groups=[],
        env=everything,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@contextlib.asynccontextmanager
async def bridge(root: Path) -> AsyncIterator[ClientSession]:
    """`svc-console mcp` as an MCP host launches it, as the operator's uid."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", AS_OPERATOR, PYTHON, "-m", "svc_console", "mcp", "--agent", "laptop-bot"],
        env={"PYTHONPATH": PYTHONPATH, "SVC_CONSOLE_SOCKET": str(root / "run" / "agents.sock")},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


def pending_ids(root: Path) -> list[str]:
    listed = as_operator(root, "-m", "svc_console", "approvals", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return [r["id"] for r in json.loads(listed.stdout) if r["state"] == "pending"]


async def test_an_agent_of_the_operators_user_can_ask_but_not_read_spend_or_decide(machine):
    home = machine / "home"
    token = installed(machine, "laptop-bot", account=True)
    with served(machine):
        files = sorted(str(p) for p in home.rglob("*") if p.is_file())
        assert any(f.endswith(".db") for f in files) and any(f.endswith(".key") for f in files)
        probe = as_operator(
            machine, "-c", PROBE, json.dumps(files), str(machine / "run/agents.sock")
        )
        assert probe.returncode == 0, probe.stderr
        report = json.loads(probe.stdout)
        assert report["read"] == []  # no credential, ledger, key or registry
        assert report["wallet"] in (401, 403)  # the proxy pays no one without the token

        results = []
        async with bridge(machine) as client, anyio.create_task_group() as group:

            async def call() -> None:
                results.append(await client.call_tool("call_market_api", SEARCH))

            group.start_soon(call)
            found = await eventually(lambda: pending_ids(machine), timeout=60)
            request_id = found[0]
            # The agent, on the operator's uid, reaches the operator socket, but decides nothing.
            refused = as_operator(machine, "-m", "svc_console", "approvals", "approve", request_id)
            assert refused.returncode == 2 and "operator account" in refused.stderr
            assert pending_ids(machine) == [request_id]
            approved = as_operator(
                machine,
                "-m",
                "svc_console",
                "approvals",
                "approve",
                request_id,
                "--operator",
                "alice",
                SVC_OPERATOR_TOKEN=token,
            )
            assert approved.returncode == 0, approved.stderr
        facts = results[0].structured_content
        assert facts["request_id"] == request_id and facts["state"] == "succeeded"


async def test_the_operator_socket_opened_to_a_uid_asks_a_credential_of_every_act(machine):
    """Without `[operator] uids` and under strict enrolment a decision needs no credential;
    with them, the operator's own agents reach the socket, so every act needs one."""
    installed(machine, "bot", account=False)
    with served(machine):
        operator_socket = machine / "run" / "operator.sock"
        assert oct(operator_socket.stat().st_mode & 0o777) == "0o666"
        # An agent's own process, not the operator's.
        submitted = as_operator(machine, "-c", HOST, PYTHON, "-m", "svc_console", *SUBMIT)
        assert submitted.returncode == 0, submitted.stderr
        request_id = submitted.stdout.split()[0]
        await eventually(lambda: pending_ids(machine) == [request_id], timeout=60)
        refused = as_operator(machine, "-m", "svc_console", "approvals", "approve", request_id)
        assert refused.returncode == 2 and "operators passwd" in refused.stderr
        stranger = subprocess.run(
            [PYTHON, "-m", "svc_console", "approvals", "list"],
            user=OPERATOR_UID - 1,
            env={**_env(machine), "SVC_CONSOLE_HOME": str(machine / "x")},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert stranger.returncode == 2
        assert f"uid {OPERATOR_UID - 1} may not use the operator socket" in stranger.stderr
        assert pending_ids(machine) == [request_id]


async def test_the_operators_tui_attached_to_the_service_reads_the_queue_and_decides(machine):
    """The operator's home holds no ledger (the service's is out of their reach): the TUI reads
    the queue over the operator socket, signs in with the token, and approves."""
    token = installed(machine, "bot", account=True)
    (machine / "operator-home").mkdir(mode=0o700)
    os.chown(machine / "operator-home", OPERATOR_UID, OPERATOR_UID)
    with served(machine):
        submitted = as_operator(machine, "-c", HOST, PYTHON, "-m", "svc_console", *SUBMIT)
        assert submitted.returncode == 0, submitted.stderr
        request_id = submitted.stdout.split()[0]
        await eventually(lambda: pending_ids(machine) == [request_id], timeout=60)
        tui = as_operator(
            machine, "-c", TUI, str(REPO / "tests"), SVC_OPERATOR_TOKEN=token, timeout=120
        )
        assert tui.returncode == 0, tui.stderr[-2000:]
        said = json.loads(tui.stdout.splitlines()[-1])
        assert said["apart"] is True and "bot" in said["shown"]
        assert pending_ids(machine) == []
        history = as_operator(
            machine, "-m", "svc_console", "approvals", "list", "--history", "--json"
        )
        decided = [r for r in json.loads(history.stdout) if r["id"] == request_id]
        assert decided[0]["decision"]["by"] == "alice"
    assert not list((machine / "operator-home").glob("ledger*"))
