"""`serve` warns wherever agents of the operator's own user are accepted, and its advice reads
the credentials it starts with: it asks for an operator passphrase only where none is set, and
says what guards decisions where one (or an operator account) is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from svc_console.config.operator_accounts import OperatorAccounts
from svc_console.config.operator_passphrase import OperatorPassphrase
from svc_console.config.paths import resolve_paths

CLI = [sys.executable, "-m", "svc_console"]
SET_ONE = "Set an operator passphrase (svc-console operators passwd)"


def warning_of_serve() -> str:
    """The warning line `serve` prints on starting (then it is stopped)."""
    server = subprocess.Popen(
        [*CLI, "serve"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert "broker on" in server.stdout.readline(), server.stderr.read()
        assert "operator socket" in server.stdout.readline()
    finally:
        server.terminate()
        _out, err = server.communicate(timeout=30)
    [warning] = [line for line in err.splitlines() if line.startswith("svc-console: warning:")]
    assert "agents running as your own user" in warning and "can read every file" in warning
    return warning


@pytest.mark.parametrize(
    ("credential", "guard"),
    [
        (None, SET_ONE),
        ("passphrase", "The operator passphrase guards decisions outside the console"),
        ("account", "Operator accounts' tokens guard decisions outside the console"),
    ],
)
def test_the_advice_reads_the_credentials_serve_starts_with(home: Path, credential, guard):
    paths = resolve_paths()
    if credential == "passphrase":
        OperatorPassphrase(paths.operator_passphrase).set("a passphrase already set")
    elif credential == "account":
        OperatorAccounts(paths.operator_accounts).add("alice")
    warning = warning_of_serve()
    assert guard in warning
    assert (SET_ONE in warning) == (credential is None)
    assert "run agents as another user" in warning
