"""`svc-console web` in a real browser, as an operator on a phone uses it: `serve` runs with a
request waiting, `svc-console web` serves the console, and a headless Chromium with a phone's
screen opens the address, types the login token in the form, waits for the console to show the
request and presses `a`; the broker, asked over its socket, says the request was approved, and
the agent that was waiting for it is told it succeeded.

It needs Chromium and its chromedriver (Debian: `apt-get install chromium chromium-driver`);
without them it skips, saying so. It installs nothing itself."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser_support import Phone, find_chromium, wait_until
from helpers import process_gone

CLI = [sys.executable, "-m", "svc_console"]
# The agent: a process of its own that runs the CLI, as an agent's program would. The console
# traces the request to it, so the web console (started by this test, not by it) may decide it.
AS_AGENT = [sys.executable, "-c", "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"]


@pytest.fixture
def phone() -> Iterator[Phone]:
    found = find_chromium()
    if isinstance(found, str):
        pytest.skip(found)
    browser = Phone(*found)
    yield browser
    browser.close()


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture
def served(home: Path, tmp_path: Path) -> Iterator[Path]:
    """`svc-console serve` for this home: the broker, with its sandbox, on real sockets."""
    with open(tmp_path / "serve.err", "w") as errors:
        server = subprocess.Popen([*CLI, "serve"], stdout=subprocess.PIPE, stderr=errors, text=True)
    try:
        banner = server.stdout.readline()
        assert "broker on" in banner, (tmp_path / "serve.err").read_text()
        yield home
    finally:
        _stop(server)


@dataclass
class Web:
    process: subprocess.Popen[str]
    address: str  # as it prints it
    token: str  # as it shows it, the once


@pytest.fixture
def web(served: Path, tmp_path: Path) -> Iterator[Web]:
    """`svc-console web` on a free loopback port."""
    with open(tmp_path / "web.err", "w") as errors:
        server = subprocess.Popen(
            [*CLI, "web", "--port", "0"], stdout=subprocess.PIPE, stderr=errors, text=True
        )
    try:
        said = "".join(server.stdout.readline() for _ in range(2))
        where = re.search(r"web console on (http://127\.0\.0\.1:\d+/)", said)
        token = re.search(r"login token, shown once: (svcweb_\S+)", said)
        assert where and token, said + (tmp_path / "web.err").read_text()
        yield Web(server, where[1], token[1])
    finally:
        _stop(server)


def approvals(*view: str) -> list[dict]:
    """The broker's own answer, over its operator socket (`approvals list --json`)."""
    listing = subprocess.run(
        [*CLI, "approvals", "list", "--json", *view], capture_output=True, text=True, timeout=60
    )
    assert listing.returncode == 0, listing.stderr
    return json.loads(listing.stdout)


def log_in(phone: Phone, web: Web) -> None:
    phone.open(web.address)
    assert "needs its login token" in phone.page_text()  # the door, before the token
    phone.log_in(web.token)


def descendants(pid: int) -> list[int]:
    """The processes under `pid` that still run: under the web console, one shell and console
    per tab (textual-serve starts each through the shell)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, under = [], {pid}
    while grown := [child for child, parent in parents.items() if parent in under]:
        found += grown
        under = set(grown)
    return found


def test_an_operator_approves_from_a_phone_browser(phone, web):
    agent = subprocess.Popen(
        [
            *AS_AGENT, *CLI, "agent", "submit", "--endpoint", "ep_websearch_basic",
            "--inputs", '{"query": "heat pumps"}', "--purpose", "market sizing", "--wait",
            "--json",
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        pending = wait_until(approvals, "a pending request", 60, lambda: "none pending")
        request_id = pending[0]["id"]

        log_in(phone, web)
        # The console is up, with the broker's request selected.
        phone.wait_for_screen("Pending 1", request_id)
        terminal, screen = phone.widths()
        assert 0 < terminal <= screen, "the console is laid out for the phone's screen"
        phone.tap_terminal()
        phone.wait_for_screen("a Approve")  # the key hints, once the terminal has the focus
        phone.type("a")

        decided = wait_until(
            lambda: [r for r in approvals("--history") if r["id"] == request_id],
            f"the broker to have decided {request_id}",
            60,
            lambda: f"still pending: {approvals()}\nthe page shows:\n{phone.screen()}",
        )
        assert decided[0]["decision"]["approved"] is True
        out, err = agent.communicate(timeout=60)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    assert agent.returncode == 0, err
    assert json.loads(out)["state"] == "succeeded"
    assert approvals() == []


def test_ctrl_c_stops_the_web_console_with_a_tab_open(phone, web):
    log_in(phone, web)
    phone.wait_for_screen("Pending 0")
    tabs = descendants(web.process.pid)
    commands = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in tabs]
    assert any(b"--session" in command for command in commands), "the tab's console runs"
    web.process.send_signal(signal.SIGINT)
    # Promptly, not after a timeout of the web server's: the tab's console quits with it.
    assert web.process.wait(timeout=10) == 0
    wait_until(
        lambda: all(map(process_gone, tabs)),
        "the tab's console to end",
        10,
        lambda: f"still running: {[pid for pid in tabs if not process_gone(pid)]}",
    )
    wait_until(
        lambda: "Session ended" in phone.page_text(),
        "the page to say the session ended",
        10,
        phone.page_text,
    )
