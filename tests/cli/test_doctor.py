"""`svc-console doctor`: a healthy set-up prints nothing serious and exits 0; each problem made
on purpose is named, with its fix, and exits 1; `--json` says the same for scripts; the mode the
console runs in (your own user, or a system user of its own) is named with what it leaves an agent
of your user."""

from __future__ import annotations

import email.utils
import json
import os
import pwd
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers import plain_request

from svc_console.cli import main
from svc_console.config.audit_key import key_file
from svc_console.core.models import Decision
from svc_console.core.states import State
from svc_console.ledger import Ledger
from svc_console.services.doctor.local_checks import mode

GOOD_POLICY = """# SKILLS.md

```policy
per_call_max_usdc: 1
```
"""
NOBODY = 65534


def write_ledger(path: Path, approved_usdc: Decimal | None = None) -> None:
    """A ledger with events (and its key), and one approval of `approved_usdc` an hour ago."""
    ledger = Ledger(path)
    try:
        ledger.insert_request(plain_request("req_1"))
        ledger.transition("req_1", State.inspecting)
        ledger.transition("req_1", State.pending)
        if approved_usdc is not None:
            decision = Decision(
                approved=True, by="op", at=time.time() - 3600, ceiling_usdc=approved_usdc
            )
            ledger.decide("req_1", decision, State.approved)
    finally:
        ledger.close()


@pytest.fixture
def healthy(home: Path, tmp_path: Path) -> Path:
    """A home as one should be: strict enrolment, a policy that loads, a ledger with its key,
    and an anchor of its chain kept outside the home (returned)."""
    (home / "settings.toml").write_text('[agents]\nenrolment = "strict"\n')
    (home / "settings.toml").chmod(0o600)
    (home / "SKILLS.md").write_text(GOOD_POLICY)
    (home / "SKILLS.md").chmod(0o600)
    write_ledger(home / "ledger-sandbox.db")
    anchor = tmp_path / "kept-elsewhere.anchor"
    assert main(["audit", "anchor", "--to", str(anchor)]) == 0
    return anchor


def doctor(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["doctor", "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def by_check(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for finding in report["findings"]:
        found.setdefault(finding["check"], []).append(finding)
    return found


def test_a_healthy_set_up_prints_nothing_serious(healthy: Path, capsys):
    code, report = doctor(capsys, "--anchor", str(healthy))
    assert code == 0 and report["serious"] == 0
    found = by_check(report)
    for check in ("home", "sockets", "same-user", "policy", "ledger", "audit-key", "anchor"):
        assert [f["level"] for f in found[check]] == ["ok"], found[check]
    assert found["service"][0]["said"].startswith("no service configured")
    assert main(["doctor", "--anchor", str(healthy)]) == 0
    text = capsys.readouterr().out
    assert "SERIOUS" not in text and text.rstrip().endswith("0 serious, 1 warning.")


def _open_home(home: Path, _: Path) -> None:
    home.chmod(0o755)


def _key_readable(home: Path, _: Path) -> None:
    key_file(home / "ledger-sandbox.db").chmod(0o644)


def _open_enrolment(home: Path, _: Path) -> None:
    (home / "settings.toml").write_text('[agents]\nenrolment = "open"\n')


def _key_lost(home: Path, _: Path) -> None:
    key_file(home / "ledger-sandbox.db").unlink()


def _policy_broken(home: Path, _: Path) -> None:
    (home / "SKILLS.md").write_text(
        GOOD_POLICY.replace("per_call_max_usdc: 1", "per_call_max_usdc: lots")
    )


def _chain_rewritten(home: Path, _: Path) -> None:
    conn = sqlite3.connect(home / "ledger-sandbox.db")
    with conn:
        conn.execute("UPDATE events SET data = replace(data, 'req_1', 'req_9') WHERE seq = 1")
    conn.close()


def _newer_schema(home: Path, _: Path) -> None:
    conn = sqlite3.connect(home / "ledger-sandbox.db")
    conn.execute("PRAGMA user_version = 99")
    conn.close()


def _shared_socket_folder(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "agents"
    folder.mkdir()
    folder.chmod(0o777)  # no sticky bit: anyone may put a socket in the console's place
    os.environ["SVC_CONSOLE_SOCKET"] = str(folder / "agents.sock")


PROBLEMS: dict[str, tuple[Callable[[Path, Path], None], str, str]] = {
    "a home others can enter": (_open_home, "home", "chmod 700"),
    "an audit key others can read": (_key_readable, "files", "chmod 600"),
    "a socket folder others can write": (_shared_socket_folder, "sockets", "SVC_CONSOLE_SOCKET"),
    "same-user agents without a credential": (_open_enrolment, "same-user", "operators passwd"),
    "the audit key lost": (_key_lost, "audit-key", "restore it there from a backup"),
    "a policy that does not load": (_policy_broken, "policy", "svc-console policy check"),
    "a chain rewritten since its anchor": (_chain_rewritten, "anchor", "ledger restore"),
    "a ledger of a newer console": (_newer_schema, "ledger", "upgrade svc-console"),
}


@pytest.mark.parametrize("problem", list(PROBLEMS))
def test_each_problem_is_named_serious_with_its_fix(
    healthy: Path,
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    problem: str,
):
    make, check, fix = PROBLEMS[problem]
    monkeypatch.setenv("SVC_CONSOLE_SOCKET", str(home / "svc.sock"))  # restored after the test
    make(home, tmp_path)
    code, report = doctor(capsys, "--anchor", str(healthy))
    grave = [f for f in report["findings"] if f["level"] == "serious"]
    assert code == 1 and report["serious"] == len(grave) >= 1
    named = [f for f in grave if f["check"] == check]
    assert named and fix in named[0]["fix"], grave
    assert main(["doctor", "--anchor", str(healthy)]) == 1
    assert f"SERIOUS  {check}" in capsys.readouterr().out


def test_without_an_anchor_it_warns_and_says_how_to_keep_one(healthy: Path, capsys):
    code, report = doctor(capsys)
    assert code == 0
    (anchor,) = by_check(report)["anchor"]
    assert anchor["level"] == "warning" and "audit anchor --to FILE" in anchor["fix"]


def test_same_user_agents_with_a_passphrase_are_a_warning_naming_what_they_can_do(
    healthy: Path, home: Path, capsys
):
    from svc_console.config.operator_passphrase import OperatorPassphrase

    _open_enrolment(home, home)
    OperatorPassphrase(home / "operator.passphrase").set("correct horse battery")
    code, report = doctor(capsys, "--anchor", str(healthy))
    assert code == 0
    (same,) = by_check(report)["same-user"]
    assert same["level"] == "warning" and "can read the console's home" in same["said"]


# -- the service --------------------------------------------------------------------------


@pytest.fixture
def service_env(healthy: Path, home: Path, monkeypatch: pytest.MonkeyPatch):
    """Point the console at a service `url` (its wallet proxy too), with an API key and a
    wallet config, as `login` and `connect` leave them."""

    def point(url: str, api_key: str = "sk_live_doctor") -> None:
        config = home / "wallet-config.json"
        config.write_text(
            json.dumps({"username": "ops", "apiToken": "wallet-token", "apiBase": url})
        )
        config.chmod(0o600)
        monkeypatch.setenv("SVC_BASE_URL", url)
        monkeypatch.setenv("SVC_API_KEY", api_key)
        monkeypatch.setenv("SVC_WALLET_CONFIG", str(config))
        write_ledger(home / "ledger.db", approved_usdc=Decimal("5"))

    return point


def test_a_service_that_does_not_answer_is_serious(service_env, refused_url: str, capsys):
    service_env(refused_url)
    code, report = doctor(capsys)
    found = by_check(report)
    assert code == 1
    assert (
        found["service"][0]["level"] == "serious"
        and "does not answer" in (found["service"][0]["said"])
    )
    assert found["wallet-proxy"][0]["level"] == "serious"
    assert "wallet-token" not in json.dumps(report) and "sk_live_doctor" not in json.dumps(report)


def test_a_wallet_short_of_a_day_of_approvals_is_a_warning(service_env, sandbox: Any, capsys):
    sandbox.state.set_balance("0.5")
    service_env(sandbox.base_url, sandbox.state.api_key)
    code, report = doctor(capsys)
    assert code == 0, "a wallet running low is no reason to fail"
    found = by_check(report)
    assert [f["level"] for f in found["service"] + found["clock"]] == ["ok", "ok"]
    (balance,) = found["balance"]
    assert balance["level"] == "warning", balance
    assert "holds 0.50 USDC; the last day approved 5.00" in balance["said"]
    assert "wallet fund" in balance["fix"]


@pytest.fixture
def skewed_service() -> Iterator[str]:
    """A service whose clock is ten minutes behind this one."""

    class Behind(BaseHTTPRequestHandler):
        def date_time_string(self, timestamp: float | None = None) -> str:
            return email.utils.formatdate(time.time() - 600, usegmt=True)

        def do_GET(self) -> None:
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Behind)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_clock_off_the_services_is_serious(service_env, skewed_service: str, capsys):
    service_env(skewed_service)
    code, report = doctor(capsys)
    (clock, *_) = by_check(report)["clock"]
    assert code == 1 and clock["level"] == "serious"
    assert "s ahead of the service's" in clock["said"] and "chrony" in clock["fix"]


def test_a_postgresql_ledger_that_cannot_be_reached_is_serious(
    healthy: Path, monkeypatch: pytest.MonkeyPatch, refused_url: str, capsys
):
    port = refused_url.rsplit(":", 1)[1]
    monkeypatch.setenv("SVC_BASE_URL", "https://marketplace.example")
    monkeypatch.setenv("SVC_LEDGER_URL", f"postgresql://svc:hunter2@127.0.0.1:{port}/ledger")
    code, report = doctor(capsys)
    (ledger,) = by_check(report)["ledger"]
    assert code == 1 and ledger["level"] == "serious" and "cannot be opened" in ledger["said"]
    assert "hunter2" not in json.dumps(report)


# -- the mode -----------------------------------------------------------------------------


def test_run_as_your_own_user_it_says_what_an_agent_of_that_user_can_do(healthy: Path, capsys):
    _, report = doctor(capsys)
    (mode,) = by_check(report)["mode"]
    assert "can read the console's home" in mode["said"]
    assert "cannot decide over the operator socket" in mode["said"]
    assert "system user of its own" in mode["fix"]


def test_run_as_a_system_user_of_its_own_it_says_so():
    try:
        entry = pwd.getpwuid(NOBODY)
    except KeyError:
        pytest.skip(f"no user {NOBODY} here")
    found = mode(entry.pw_uid)
    assert found.level == "note" and "a system user of its own" in found.said
    assert "cannot read its home" in found.said and found.fix is None
