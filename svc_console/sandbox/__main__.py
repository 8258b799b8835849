"""`python -m svc_console.sandbox --fd N --outbox DIR`: the embedded sandbox in a process of its
own, started by `sandbox.child.SandboxChild` (see there for why).

It reads one JSON line on stdin, the credentials the console chose (never on the command line,
which other users can read), serves on the listening socket inherited as file descriptor N,
prints `ready` once serving, and exits as soon as stdin reaches its end: the console closed it,
or died, and a sandbox nobody speaks to must not outlive it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
from pathlib import Path


def _exit_at_end_of_input() -> None:
    for _ in sys.stdin.buffer:
        pass
    # At once, without uvicorn's graceful shutdown: the only client was the parent.
    os._exit(0)


def _announce() -> None:
    print("ready", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m svc_console.sandbox")
    parser.add_argument("--fd", type=int, required=True, help="the inherited listening socket")
    parser.add_argument("--outbox", type=Path, required=True, help="where its e-mail goes")
    args = parser.parse_args(argv)
    line = sys.stdin.buffer.readline()
    if not line:  # the parent is already gone
        return 0
    credentials = json.loads(line)
    threading.Thread(target=_exit_at_end_of_input, name="parent-watch", daemon=True).start()

    from svc_console.sandbox.server import serve_socket
    from svc_console.sandbox.state import SandboxState

    sock = socket.socket(fileno=args.fd)
    state = SandboxState(outbox=args.outbox)
    state.api_key = credentials["api_key"]
    state.username = credentials["username"]
    state.api_token = credentials["api_token"]
    state.base_url = credentials["base_url"]
    serve_socket(state, sock, _announce)
    return 0


if __name__ == "__main__":
    sys.exit(main())
