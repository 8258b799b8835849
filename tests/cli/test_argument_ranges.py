"""Every command refuses a port, a uid, a timeout or an amount out of range in one line with
exit 2, before doing anything: the real command, in a process of its own, with nothing left
behind in the home."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "svc_console"]
FULL_WIDTH_80 = "\uff18\uff10"
SUBMIT = ["agent", "submit", "--endpoint", "ep_websearch_basic", "--inputs", "{}", "--purpose", "p"]

REFUSED = [
    (["web", "--port", "70000"], "argument --port: 70000 is not a port (0 to 65535)"),
    (
        ["web", "--port", FULL_WIDTH_80],
        f"argument --port: {FULL_WIDTH_80!r} is not a port (0 to 65535)",
    ),
    (["sandbox", "--port", "-1"], "argument --port: '-1' is not a port (0 to 65535)"),
    (["sandbox", "--port", "8_0"], "argument --port: '8_0' is not a port (0 to 65535)"),
    (["mcp", "--http", "127.0.0.1:99999"], "argument --http: 99999 is not a port (0 to 65535)"),
    (
        ["mcp", "--http", "127.0.0.1:²"],
        "argument --http: '²' is not a port (0 to 65535)",
    ),
    (
        ["agents", "add", "bot", "--uid", "99999999999999999999"],
        "argument --uid: 99999999999999999999 is not a user id (0 to 4294967294)",
    ),
    (
        ["agents", "add", "bot", "--uid", "-5"],
        "argument --uid: '-5' is not a user id (0 to 4294967294)",
    ),
    (
        [*SUBMIT, "--wait", "--timeout", "-3"],
        "argument --timeout: '-3': a timeout must be above 0 and at most 86400 seconds",
    ),
    (
        [*SUBMIT, "--wait", "--timeout", "nan"],
        "argument --timeout: 'nan': a timeout must be above 0 and at most 86400 seconds",
    ),
    (
        ["wallet", "fund", "req_x", "--timeout", "0"],
        "argument --timeout: 0: a timeout must be above 0 and at most 86400 seconds",
    ),
    (
        ["wallet", "fund", "req_x", "--timeout", "86401"],
        "argument --timeout: 86401: a timeout must be above 0 and at most 86400 seconds",
    ),
    *[
        (
            [*SUBMIT, "--max-usdc", amount],
            f"argument --max-usdc: {amount!r} must be a plain decimal string of USDC with at"
            ' most 6 decimals, e.g. "0.50"',
        )
        for amount in ("1_000", " 1", "\uff11", "1e3", "0.0000001", "-1")
    ],
]


@pytest.mark.parametrize(
    ("argv", "said"), REFUSED, ids=lambda v: " ".join(v) if isinstance(v, list) else ""
)
def test_out_of_range_is_one_line_and_exit_2(home: Path, argv: list[str], said: str):
    done = subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=60)
    command = " ".join(argv[:2] if argv[0] in ("agents", "agent", "wallet") else argv[:1])
    assert done.returncode == 2, done
    assert done.stdout == ""
    assert done.stderr == f"svc-console {command}: {said} (see svc-console {command} --help)\n"
    assert list(home.iterdir()) == []  # nothing made, nothing registered


def test_in_range_values_are_taken():
    from svc_console.cli.entry import parser

    args = parser().parse_args(["agents", "add", "bot", "--uid", "4294967294"])
    assert args.uid == 4294967294
    args = parser().parse_args([*SUBMIT, "--timeout", "0.5", "--max-usdc", "1000.000001"])
    assert args.timeout == 0.5 and str(args.max_usdc) == "1000.000001"
    assert parser().parse_args(["web", "--port", "0"]).port == 0
    assert parser().parse_args(["mcp", "--http", "[::1]:8765"]).http == ("::1", 8765)
