"""The sandbox's listening socket: bound and listening before anything serves it, so a client
told the address may connect at once and is queued rather than refused. The embedded sandbox's
socket is bound by the console and handed to the child process that serves it (sandbox.child).
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host).version == 6:
            family = socket.AF_INET6
    # IPPROTO_TCP, not the default 0: asyncio only sets TCP_NODELAY on accepted sockets whose
    # proto says TCP, and without it every response waits out the peer's delayed ACK (~40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def base_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"
