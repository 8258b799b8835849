"""`svc-console` attaches when a broker answers on its home's operator socket, and starts its own
when none does (no socket, or one a stopped console left behind)."""

from __future__ import annotations

import asyncio
import socket

from svc_console.cli.attach import attached_console
from svc_console.services.attached_console import AttachedConsole


async def test_a_running_broker_is_attached_to(runtime):
    console = await asyncio.to_thread(attached_console)
    assert isinstance(console, AttachedConsole)
    assert console.sandboxed and console.ledger_path == runtime.ledger_path
    assert console.serves("approvals") and not console.serves("wallet")


def test_no_broker_means_a_console_of_its_own(paths):
    assert attached_console() is None
    # A socket file nobody listens on (a console killed without cleaning up).
    paths.home.mkdir(parents=True, exist_ok=True)
    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(str(paths.operator_socket))
    left.close()
    assert paths.operator_socket.exists()
    assert attached_console() is None
