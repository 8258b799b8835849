"""Agents running as the operator's own user cannot decide: in the sandbox's default set-up (agents
of the operator's user accepted, open enrolment, no passphrase, no accounts), an agent that
submits and then runs `svc-console approvals approve` on its own request is refused however it
arranges its processes: command substitution in one shell, `sh -c`, a child that submits and
exits before its parent approves, a double-forked daemon. Each refusal names the command that
sets a credential, each request stays pending, and the refusals are in the audit chain. With a
passphrase set before the console starts, the operator who types it decides; an agent that does
not know it still cannot."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from operator_support import pending_ids, run_typing, serving, set_passphrase

CLI = [sys.executable, "-m", "svc_console"]
SVC = " ".join(CLI)  # as a shell spells it
SUBMIT = "agent submit --endpoint ep_websearch_basic --inputs '{\"query\": \"q\"}' --purpose 'mine'"
SET_ONE = "svc-console operators passwd"

# One shell: the id by command substitution, then the approval.
SUBSTITUTION = f"""ID=$({SVC} {SUBMIT} | cut -d' ' -f1)
{SVC} approvals approve "$ID" 2>"$OUT/stderr"; echo $? >"$OUT/rc"; echo "$ID" >"$OUT/id"
"""
# `sh -c '…submit…; …approve…'`: the submission's output kept in a file, the approval after it.
SH_C = f"""{SVC} {SUBMIT} >"$OUT/id"
{SVC} approvals approve "$(cut -d' ' -f1 "$OUT/id")" 2>"$OUT/stderr"; echo $? >"$OUT/rc"
"""
# A child submits and exits; its parent, the process left, approves.
CHILD_THEN_PARENT = """
import os, subprocess, sys
out, cli = os.environ["OUT"], sys.argv[1:]
child = [sys.executable, "-c", "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"]
submit = [*cli, "agent", "submit", "--endpoint", "ep_websearch_basic", "--inputs",
          '{"query": "q"}', "--purpose", "mine"]
ticket = subprocess.run([*child, *submit], capture_output=True, text=True, check=True)
request_id = ticket.stdout.split()[0]
approve = subprocess.run([*cli, "approvals", "approve", request_id], capture_output=True, text=True)
open(f"{out}/id", "w").write(request_id)
open(f"{out}/stderr", "w").write(approve.stderr)
open(f"{out}/rc", "w").write(str(approve.returncode))
"""
# The agent submits, then leaves a daemon (forked twice, its own session) that approves.
DAEMON = """
import os, subprocess, sys
out, cli = os.environ["OUT"], sys.argv[1:]
ticket = subprocess.run([*cli, "agent", "submit", "--endpoint", "ep_websearch_basic", "--inputs",
                         '{"query": "q"}', "--purpose", "mine"], capture_output=True, text=True,
                        check=True)
request_id = ticket.stdout.split()[0]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        approve = subprocess.run([*cli, "approvals", "approve", request_id],
                                 capture_output=True, text=True)
        open(f"{out}/stderr", "w").write(approve.stderr)
        open(f"{out}/id", "w").write(request_id)
        open(f"{out}/rc.part", "w").write(str(approve.returncode))
        os.rename(f"{out}/rc.part", f"{out}/rc")  # the last file written: the daemon is done
    os._exit(0)
"""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60)


@pytest.fixture
def served(home: Path) -> Iterator[Path]:
    with serving():
        yield home


def wait_for_file(path: Path) -> str:
    """The file the daemon writes last, once it is there (the daemon is no child to wait on)."""
    import time

    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never written"
        time.sleep(0.05)
    return path.read_text()


def as_agent(how: str, out: Path) -> tuple[str, int, str]:
    """Run the agent `how` arranges its processes, in a shell of its own; its request's id, the
    approval's exit code and what it said."""
    env = {**os.environ, "OUT": str(out)}
    if how in ("substitution", "sh -c"):
        script = SUBSTITUTION if how == "substitution" else SH_C
        subprocess.run(["sh", "-c", script], env=env, check=True, timeout=120)
    else:
        code = CHILD_THEN_PARENT if how == "child exits" else DAEMON
        subprocess.run([sys.executable, "-c", code, *CLI], env=env, check=True, timeout=120)
    rc = wait_for_file(out / "rc")
    return (out / "id").read_text().split()[0], int(rc), (out / "stderr").read_text()


def refusals(home: Path) -> list[dict[str, object]]:
    ledger = sqlite3.connect(f"file:{home / 'ledger-sandbox.db'}?mode=ro", uri=True)
    with ledger:
        rows = ledger.execute(
            "SELECT request_id, type, data FROM events"
            " WHERE type IN ('decision_refused', 'decisions_refused') ORDER BY seq"
        ).fetchall()
    ledger.close()
    return [{"request_id": r, "type": t, **json.loads(d)} for r, t, d in rows]


HOW = ["substitution", "sh -c", "child exits", "daemon"]


@pytest.mark.parametrize("how", HOW)
def test_an_agent_of_the_operators_user_cannot_approve_its_own_request(served, tmp_path, how):
    request_id, rc, said = as_agent(how, tmp_path)
    assert rc == 2, said
    assert SET_ONE in said and "none is set" in said and "Traceback" not in said
    assert said.count("\n") == 1  # one line
    assert request_id in pending_ids()
    # Kept in the audit chain: refused for want of a credential, by a process on the socket.
    refused = refusals(served)
    assert refused[0]["request_id"] == request_id
    assert refused[0]["reason"] == "no operator credential is set"
    assert refused[0]["evidence"]["channel"] == "cli"


def test_every_way_at_once_leaves_every_request_pending(served, tmp_path):
    ids = []
    for how in HOW:
        out = tmp_path / how.replace(" ", "-")
        out.mkdir()
        request_id, rc, said = as_agent(how, out)
        assert rc == 2 and SET_ONE in said
        ids.append(request_id)
    assert sorted(pending_ids()) == sorted(ids)
    # Nor does anything else that acts: a deny, or all of them at once.
    denied = run("approvals", "deny", ids[0], "--reason", "mine")
    assert denied.returncode == 2 and SET_ONE in denied.stderr
    bulk = run("approvals", "approve", *ids)
    assert bulk.returncode == 2 and SET_ONE in bulk.stderr
    assert sorted(pending_ids()) == sorted(ids)


def test_with_a_passphrase_the_operator_decides_and_the_agent_still_cannot(home, tmp_path):
    set_passphrase(home)
    with serving():
        request_id, rc, said = as_agent("substitution", tmp_path)
        # No terminal, no passphrase: the agent's command cannot even ask for it.
        assert rc == 2 and "must be typed on a terminal" in said
        assert request_id in pending_ids()
        # The operator, at a terminal, types it.
        approved = run_typing(["approvals", "approve", request_id])
        assert approved.returncode == 0, approved.stderr
        assert request_id not in pending_ids()
