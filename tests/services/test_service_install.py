"""`service install`'s unit, settings and steps, as `--dry-run` prints them and install carries them
out: the unit is one systemd accepts (`systemd-analyze verify`), the settings open the sockets to
the operator and no further, and the dry run prints what would be done and does none of it."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from svc_console.services.service_moves import Move, Where, moves_in
from svc_console.services.service_plan import Operator, install_plan, uninstall_plan
from svc_console.services.service_unit import (
    ServiceLayout,
    installed_service,
    plist_text,
    program_problem,
    systemd_problem,
    unit_text,
    with_access,
    without_access,
)

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"
LAYOUT = ServiceLayout(program=(PYTHON, "-m", "svc_console"))
HARDENING = (
    "NoNewPrivileges=yes",
    "ProtectHome=yes",
    "ProtectSystem=strict",
    "PrivateTmp=yes",
    "RuntimeDirectory=svc-console",
    "RuntimeDirectoryMode=0711",
    "User=svc-console",
)


def test_the_unit_runs_serve_as_the_service_user_with_its_hardening_and_sockets():
    unit = unit_text(LAYOUT)
    assert f"ExecStart={PYTHON} -m svc_console serve\n" in unit
    for line in HARDENING:
        assert f"\n{line}\n" in unit
    assert 'Environment="SVC_CONSOLE_SOCKET=/run/svc-console/agents.sock"' in unit
    assert 'Environment="SVC_CONSOLE_OPERATOR_SOCKET=/run/svc-console/operator.sock"' in unit
    assert 'Environment="SVC_CONSOLE_HOME=/var/lib/svc-console"' in unit


def test_the_unit_is_one_systemd_accepts(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed here")
    if not Path(PYTHON).exists():
        pytest.skip(f"the unit's program {PYTHON} is not here")
    unit = tmp_path / "svc-console.service"
    unit.write_text(unit_text(LAYOUT))
    checked = subprocess.run(
        [analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60, check=False
    )
    # Unknown keys are only warned about: any word from it is a failure.
    assert checked.returncode == 0 and not checked.stdout + checked.stderr, checked.stderr


def test_doctor_finds_the_install_from_its_unit(tmp_path):
    unit = tmp_path / "svc-console.service"
    assert installed_service(unit) is None
    unit.write_text("[Service]\nExecStart=/bin/true\n")
    assert installed_service(unit) is None  # not one of ours
    unit.write_text(unit_text(LAYOUT))
    found = installed_service(unit)
    assert found is not None and found.user == "svc-console"
    assert found.home == Path("/var/lib/svc-console")
    assert found.agents_socket == Path("/run/svc-console/agents.sock")
    assert found.operator_socket == Path("/run/svc-console/operator.sock")


def test_launchds_daemon_runs_the_same_command_with_the_same_places():
    plist = plist_text(LAYOUT)
    assert "<string>serve</string>" in plist and "<string>-m</string>" in plist
    assert "<key>SVC_CONSOLE_SOCKET</key><string>/run/svc-console/agents.sock</string>" in plist


@pytest.mark.parametrize("program", ["/home/alice/.venv/bin/python", "python3", "/root/x"])
def test_a_program_the_service_cannot_reach_is_refused(program):
    problem = program_problem((program, "-m", "svc_console"))
    assert problem is not None


def test_a_program_installed_system_wide_is_accepted():
    assert program_problem(("/usr/bin/env", "svc-console")) is None


def test_the_settings_open_the_agents_socket_and_the_operator_socket_to_the_operator():
    text = '# mine\n[agents]\nenrolment = "strict"  # kept\n\n[ledger]\nurl = "x"\n'
    opened = with_access(text, 1000)
    read = tomllib.loads(opened)
    assert read["agents"] == {"enrolment": "strict", "uids": [1000]}
    assert read["operator"] == {"uids": [1000]} and read["ledger"] == {"url": "x"}
    assert "# mine" in opened and "# kept" in opened
    assert tomllib.loads(with_access("", 1000, "svc-agents"))["agents"] == {"group": "svc-agents"}
    assert with_access(opened, 1000) == opened  # already so: unchanged
    # Closed again (uninstall): the operator socket back to its owner, the rest as it was.
    assert without_access(opened, 1000) == text


def test_settings_that_say_otherwise_are_refused_not_overwritten():
    with pytest.raises(ValueError, match=r"\[agents\] uids = \[1001\]"):
        with_access("[agents]\nuids = [1001]\n", 1000)


def test_the_steps_move_then_verify_before_anything_starts(tmp_path):
    where = Where(tmp_path / "home", tmp_path / "home")
    moves = moves_in(where, Path("/var/lib/svc-console"), ["ledger.db", "ledger.db.key"], set())
    operator = Operator("alice", 1000, 1000)
    kinds = [step.kind for step in install_plan(LAYOUT, operator, moves, user_exists=False)]
    assert kinds == ["user", "folder", "move", "move", "verify", "settings", "unit", "start"]
    back = [Move(m.target, m.source) for m in moves]
    kinds = [step.kind for step in uninstall_plan(LAYOUT, operator, back)]
    assert kinds == ["stop", "remove", "unsettings", "move", "move", "verify"]
    # Where systemd no longer runs, nothing runs under the unit: the files come back all the same.
    kinds = [step.kind for step in uninstall_plan(LAYOUT, operator, back, systemd=False)]
    assert kinds == ["remove", "unsettings", "move", "move", "verify"]


def _cli(*args: str, home: Path, python: str = sys.executable) -> subprocess.CompletedProcess:
    env = {"SVC_CONSOLE_HOME": str(home), "PATH": os.environ.get("PATH", "")}
    env["PYTHONPATH"] = f"{REPO}:{sysconfig.get_paths()['purelib']}"
    return subprocess.run(
        [python, "-m", "svc_console", "service", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_dry_run_prints_the_steps_and_the_unit_and_does_nothing(tmp_path):
    if not Path(PYTHON).exists() or program_problem((PYTHON,)) is not None:
        pytest.skip(f"no system-wide {PYTHON} for the unit to run")
    home = tmp_path / "home"
    home.mkdir()
    for name in ("ledger.db", "ledger.db.key", "credentials.json", "SKILLS.md"):
        (home / name).write_text("{}")
    (home / "logs").mkdir()
    me = pwd.getpwuid(os.getuid()).pw_name
    shown = _cli("install", "--dry-run", "--user", me, home=home, python=PYTHON)
    assert shown.returncode == 0, shown.stderr
    for name in ("ledger.db", "ledger.db.key", "credentials.json", "SKILLS.md"):
        assert f"move {home / name} to /var/lib/svc-console/{name}\n" in shown.stdout
    assert "logs" not in shown.stdout  # the operator's own
    assert f"[operator] uids = [{os.getuid()}]" in shown.stdout
    assert shown.stdout.endswith(unit_text(LAYOUT))
    assert sorted(p.name for p in home.iterdir()) == sorted(
        ["ledger.db", "ledger.db.key", "credentials.json", "SKILLS.md", "logs"]
    )
    assert not Path("/var/lib/svc-console").exists() or "ledger.db" not in os.listdir(
        "/var/lib/svc-console"
    )


def test_a_dry_run_that_install_would_refuse_says_why_in_one_line(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "ledger.db").write_text("")  # its audit key in a keyring: no key file beside it
    me = pwd.getpwuid(os.getuid()).pw_name
    refused = _cli("install", "--dry-run", "--user", me, home=home)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.count("\n") == 1 and "audit key" in refused.stderr
    assert [p.name for p in home.iterdir()] == ["ledger.db"]


def test_install_without_an_operator_is_a_usage_error(tmp_path):
    refused = _cli("install", "--dry-run", home=tmp_path)
    assert refused.returncode == 2 and "--user NAME" in refused.stderr


def test_systemd_is_found_running_by_the_folder_it_makes_at_boot(tmp_path):
    assert systemd_problem(tmp_path) is None
    said = systemd_problem(tmp_path / "absent")
    assert said is not None and "systemd is not running" in said and "nothing was done" in said


@pytest.mark.skipif(systemd_problem() is None, reason="systemd runs here: install would install")
def test_install_where_systemd_does_not_run_refuses_before_any_step(tmp_path):
    """Found by running it on a machine whose init is not systemd: the user was made, the files
    moved and the unit written before `systemctl` failed. Now nothing is done."""
    if os.geteuid() != 0 or not Path(PYTHON).exists() or program_problem((PYTHON,)) is not None:
        pytest.skip(f"needs root and a system-wide {PYTHON}, as install does")
    home = tmp_path / "home"
    home.mkdir()
    (home / "credentials.json").write_text("{}")
    me = pwd.getpwuid(os.getuid()).pw_name
    refused = _cli("install", "--yes", "--user", me, home=home, python=PYTHON)
    assert refused.returncode == 2 and "systemd is not running" in refused.stderr
    assert [p.name for p in home.iterdir()] == ["credentials.json"]
    with pytest.raises(KeyError):
        pwd.getpwnam("svc-console")
    assert not Path("/etc/systemd/system/svc-console.service").exists()


@pytest.mark.parametrize(
    "before",
    ["", '[agents]\nenrolment = "strict"\n', '[ui]\ntheme = "x"\n\n[operator]\nname = "al"\n'],
)
def test_uninstall_leaves_the_settings_as_install_found_them(before):
    """Found when uninstalling for real: tables the install made into a file that had none
    came back empty."""
    assert without_access(with_access(before, 1000), 1000) == before
