"""Where clients find the console: their own user's sockets when those are there or named, else a
console's running as a service, so an agent's configuration stays the same either way."""

from __future__ import annotations

import socket
from pathlib import Path

from svc_console.config.paths import client_paths, resolve_paths


def _bound(path: Path) -> socket.socket:
    path.parent.mkdir(parents=True, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    return listener


def _paths(tmp_path: Path, **env: str):
    service = tmp_path / "run"
    everything = {"SVC_CONSOLE_HOME": str(tmp_path / "home"), **env}
    return client_paths(
        everything,
        agents_socket=service / "agents.sock",
        operator_socket=service / "operator.sock",
    )


def test_without_a_console_of_ones_own_the_services_sockets_are_found(tmp_path):
    with _bound(tmp_path / "run" / "agents.sock"), _bound(tmp_path / "run" / "operator.sock"):
        paths = _paths(tmp_path)
    assert paths.socket == tmp_path / "run" / "agents.sock"
    assert paths.operator_socket == tmp_path / "run" / "operator.sock"
    assert paths.home == tmp_path / "home"  # the home stays the user's own


def test_a_console_of_ones_own_comes_first(tmp_path):
    with (
        _bound(tmp_path / "run" / "agents.sock"),
        _bound(tmp_path / "run" / "operator.sock"),
        _bound(tmp_path / "home" / "svc.sock"),
        _bound(tmp_path / "home" / "operator.sock"),
    ):
        paths = _paths(tmp_path)
    assert paths.socket == tmp_path / "home" / "svc.sock"
    assert paths.operator_socket == tmp_path / "home" / "operator.sock"


def test_the_environment_names_the_sockets_whatever_is_there(tmp_path):
    named = tmp_path / "elsewhere.sock"
    with _bound(tmp_path / "run" / "agents.sock"), _bound(tmp_path / "run" / "operator.sock"):
        paths = _paths(
            tmp_path, SVC_CONSOLE_SOCKET=str(named), SVC_CONSOLE_OPERATOR_SOCKET=str(named)
        )
    assert paths.socket == named and paths.operator_socket == named


def test_with_no_console_anywhere_the_users_own_paths_are_named_in_errors(tmp_path):
    paths = _paths(tmp_path)
    assert paths == resolve_paths({"SVC_CONSOLE_HOME": str(tmp_path / "home")})
    assert paths.socket == tmp_path / "home" / "svc.sock"
