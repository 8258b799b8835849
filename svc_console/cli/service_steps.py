"""The steps of `service install / uninstall` carried out on this machine: the thin part that
needs root and systemd. What each step is, and their order, is `services.service_plan`'s."""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path
from typing import Any

from svc_console.cli.errors import CommandError
from svc_console.core.private_files import write_private
from svc_console.services import service_moves
from svc_console.services.service_unit import systemd_problem, with_access, without_access


def carry_out(steps: list[Any], layout: Any, operator: Any, unit: str | None) -> None:
    moved: list[service_moves.Move] = []
    for step in steps:
        if step.kind == "user":
            _run(
                "useradd",
                "--system",
                "--user-group",
                "--no-create-home",
                "--home-dir",
                str(layout.home),
                "--shell",
                "/usr/sbin/nologin",
                layout.user,
            )
        elif step.kind == "folder":
            layout.home.mkdir(parents=True, exist_ok=True, mode=0o700)
            layout.home.chmod(0o700)
            os.chown(layout.home, *_ids(layout.user))
        elif step.kind == "move":
            owner = (
                _ids(layout.user)
                if step.move.target.is_relative_to(layout.home)
                else (operator.uid, operator.gid)
            )
            service_moves.move_all([step.move], owner)
            moved.append(step.move)
        elif step.kind == "verify":
            problem = service_moves.verify_ledgers(service_moves.ledgers(moved))
            if problem is not None:
                service_moves.undo(moved)
                raise CommandError(f"{problem}; everything moved was put back")
        elif step.kind in ("settings", "unsettings"):
            _settings(layout, operator, step.kind == "settings")
        elif step.kind == "unit":
            assert unit is not None
            layout.unit_path.write_text(unit)
            layout.unit_path.chmod(0o644)
        elif step.kind == "start":
            _run("systemctl", "daemon-reload")
            _run("systemctl", "enable", "--now", layout.unit_path.name)
        elif step.kind == "stop":
            _run("systemctl", "disable", "--now", layout.unit_path.name)
        elif step.kind == "remove":
            layout.unit_path.unlink(missing_ok=True)
            if systemd_problem() is None:
                _run("systemctl", "daemon-reload")


def _settings(layout: Any, operator: Any, opened: bool) -> None:
    path: Path = layout.home / "settings.toml"
    text = path.read_text() if path.exists() else ""
    try:
        text = (
            with_access(text, operator.uid, operator.agents_group)
            if opened
            else (without_access(text, operator.uid))
        )
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    write_private(path, text)
    os.chown(path, *_ids(layout.user))


def _ids(user: str) -> tuple[int, int]:
    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid


def _run(*command: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise CommandError(f"{' '.join(command)} failed: {said[-1] if said else done.returncode}")
