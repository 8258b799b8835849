"""`svc-console agents` and `svc-console operators passwd` as a person uses them: the token shown
once, bad names refused, and a passphrase typed on a real pseudo-terminal, never piped in."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from svc_console.config.agent_registry import AgentRegistry
from svc_console.config.operator_passphrase import OperatorPassphrase

CLI = [sys.executable, "-m", "svc_console"]
# TRUSTED-BOT in full-width letters, which NFKC makes plain ones.
FULL_WIDTH = "".join(chr(0xFEE0 + ord(c)) if c.isalpha() else c for c in "TRUSTED-BOT")


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    # A session of its own: no controlling terminal, as for a script or an agent.
    return subprocess.run(
        [*CLI, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        start_new_session=True,
    )


class Terminal:
    """The CLI on a pseudo-terminal of its own; answers are typed when a prompt shows."""

    def __init__(self, *args: str):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the pty is its controlling terminal
            os.execv(sys.executable, [*CLI, *args])
        self.seen = ""

    def expect(self, text: str) -> None:
        while text not in self.seen:
            try:
                chunk = os.read(self.fd, 1024)  # blocks until the program writes
            except OSError:  # EIO: the program ended and closed the terminal
                chunk = b""
            if not chunk:
                raise AssertionError(f"no {text!r} in {self.seen!r}")
            self.seen += chunk.decode(errors="replace")

    def type(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

    def finish(self) -> int:
        try:
            while chunk := os.read(self.fd, 1024):
                self.seen += chunk.decode(errors="replace")
        except OSError:  # EIO: the program closed the terminal
            pass
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)


def test_agents_add_prints_the_token_once_and_keeps_only_its_hash(home: Path):
    added = run("agents", "add", "research-bot")
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    assert token.startswith("svcagent_") and "shown this once" in added.stderr
    stored = (home / "agents.json").read_text()
    assert token not in stored and (home / "agents.json").stat().st_mode & 0o077 == 0
    assert AgentRegistry(home / "agents.json").authenticate("research-bot", token) is not None
    listed = run("agents", "list", "--json")
    assert json.loads(listed.stdout)[0]["name"] == "research-bot"
    assert token not in listed.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("agents", "add", "bad name"), "must be 1-64 letters"),
        (("agents", "add", "bot", "--uid", str(os.getuid())), "is your own"),
        (("agents", "rotate", "nobody"), "no registered agent 'nobody'"),
        (("agents", "revoke", "nobody"), "no registered agent 'nobody'"),
    ],
)
def test_bad_agent_commands_say_why_and_change_nothing(home: Path, args, message):
    run("agents", "add", "kept")
    before = (home / "agents.json").read_text()
    result = run(*args)
    assert result.returncode == 2 and message in result.stderr
    assert "Traceback" not in result.stderr
    assert (home / "agents.json").read_text() == before


def test_a_second_add_is_refused_and_revoke_says_what_follows(home: Path):
    run("agents", "add", "bot")
    again = run("agents", "add", "bot")
    assert again.returncode == 2 and "already registered" in again.stderr
    revoked = run("agents", "revoke", "bot")
    assert revoked.returncode == 0
    assert "revoked" in revoked.stdout and "cancels the agent's pending requests at start" in (
        revoked.stdout
    )


def test_a_name_is_kept_in_one_form_and_a_look_alike_is_refused(home: Path):
    """`Trusted-Bot` is registered as trusted-bot; its other spellings are the same agent, and a
    name that looks like it (a zero for an o) is no new agent: refused, nothing changed."""
    added = run("agents", "add", "Trusted-Bot")
    assert added.returncode == 0, added.stderr
    assert "the token of agent trusted-bot" in added.stderr
    registry = AgentRegistry(home / "agents.json")
    assert registry.authenticate("trusted-bot", added.stdout.strip()) is not None
    before = (home / "agents.json").read_text()
    for spelling, message in [
        ("TRUSTED-BOT", "agent trusted-bot is already registered"),
        (FULL_WIDTH, "agent trusted-bot is already registered"),
        ("trusted-b0t", "agent name trusted-b0t looks like trusted-bot"),
        ("trusted-bot\u200b", "must be 1-64 letters"),
    ]:
        refused = run("agents", "add", spelling)
        assert refused.returncode == 2 and message in refused.stderr, (spelling, refused.stderr)
        assert (home / "agents.json").read_text() == before
    assert [a["name"] for a in json.loads(run("agents", "list", "--json").stdout)] == [
        "trusted-bot"
    ]


def test_a_revoked_name_stays_reserved_until_released(home: Path):
    run("agents", "add", "bot")
    revoked = run("agents", "revoke", "BOT")
    assert revoked.returncode == 0 and "stays reserved until svc-console agents release bot" in (
        revoked.stdout
    )
    active = run("agents", "add", "b0t")  # a look-alike of a revoked name: still refused
    assert active.returncode == 2 and "looks like bot" in active.stderr
    released = run("agents", "release", "bot")
    assert released.returncode == 0 and "agent bot released" in released.stdout
    assert json.loads(run("agents", "list", "--json").stdout) == []
    assert run("agents", "add", "b0t").returncode == 0  # the name and its look-alikes are free


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ((), "no registered agent 'nobody'"),
        ((("agents", "add", "nobody"),), "agent nobody is active: revoke it first"),
    ],
)
def test_release_refuses_an_unknown_or_active_agent_and_changes_nothing(home: Path, setup, message):
    run("agents", "add", "kept")
    for step in setup:
        run(*step)
    before = (home / "agents.json").read_text()
    result = run("agents", "release", "nobody")
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert (home / "agents.json").read_text() == before


def test_passwd_on_a_terminal_sets_then_changes_the_passphrase(home: Path):
    terminal = Terminal("operators", "passwd")
    terminal.expect("new passphrase: ")
    terminal.type("first passphrase")
    terminal.expect("the same again: ")
    terminal.type("first passphrase")
    assert terminal.finish() == 0
    assert "operator passphrase set" in terminal.seen and "first passphrase" not in terminal.seen
    stored = OperatorPassphrase(home / "operator.passphrase")
    assert stored.verify("first passphrase")
    assert "first passphrase" not in (home / "operator.passphrase").read_text()

    wrong = Terminal("operators", "passwd")
    wrong.expect("current passphrase: ")
    wrong.type("not it at all")
    assert wrong.finish() == 2 and "wrong passphrase; nothing changed" in wrong.seen
    assert stored.verify("first passphrase")

    mismatch = Terminal("operators", "passwd")
    mismatch.expect("current passphrase: ")
    mismatch.type("first passphrase")
    mismatch.expect("new passphrase: ")
    mismatch.type("second passphrase")
    mismatch.expect("the same again: ")
    mismatch.type("second passphrasE")
    assert mismatch.finish() == 2 and "differ; nothing changed" in mismatch.seen
    assert stored.verify("first passphrase")


def test_without_a_terminal_no_passphrase_is_read_and_nothing_changes(home: Path):
    OperatorPassphrase(home / "operator.passphrase").set("the operator's own")
    before = (home / "operator.passphrase").read_text()
    piped = run("operators", "passwd", stdin="the operator's own\nnew one!!\nnew one!!\n")
    assert piped.returncode == 2
    assert "must be typed on a terminal, and none is attached" in piped.stderr
    assert (home / "operator.passphrase").read_text() == before


def test_a_short_passphrase_is_refused(home: Path):
    terminal = Terminal("operators", "passwd")
    terminal.expect("new passphrase: ")
    terminal.type("short")
    terminal.expect("the same again: ")
    terminal.type("short")
    assert terminal.finish() == 2 and "at least 8 characters" in terminal.seen
    assert not (home / "operator.passphrase").exists()
