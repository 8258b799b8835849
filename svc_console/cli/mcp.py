"""`svc-console mcp`: serve MCP to an agent's host, over stdio (the host launches it) or over
Streamable HTTP on loopback, acting as one agent on the console's agents' socket.

It holds no credential of the marketplace: only the agent's own token (SVC_AGENT_TOKEN or an
owner-only `--token-file`), or none where the console knows the agent by the uid it runs as.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from svc_console.cli.arguments import loopback_address
from svc_console.cli.errors import EXIT_USAGE, CommandError
from svc_console.cli.socket_client import CLIENT


def add_commands(commands: Any) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="serve MCP to an agent's host: paid tools wait for the operator",
        description="An MCP server for one agent: the marketplace's free tools answered through"
        " the console, its paid tools (and call_market_api) as spend requests that wait for the"
        " operator. Over stdio by default; --http serves Streamable HTTP on loopback, where a"
        " client shows the agent's token as a bearer token.",
    )
    mcp.add_argument("--agent", help="the agent's name (default: the one its token names)")
    mcp.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help="an owner-only file holding the agent's token (default: SVC_AGENT_TOKEN)",
    )
    mcp.add_argument(
        "--http",
        type=loopback_address,
        metavar="HOST:PORT",
        help="serve Streamable HTTP at http://HOST:PORT/mcp (loopback only) instead of stdio",
    )
    mcp.set_defaults(run=run_mcp)


def run_mcp(args: argparse.Namespace) -> int:
    import anyio

    from svc_console.agent import AgentError, AsyncAgent, NotConnected
    from svc_console.config.paths import client_paths

    token = _token(args.token_file)
    where = args.http
    if where is not None and not token:
        raise CommandError(
            "--http needs the agent's token (SVC_AGENT_TOKEN or --token-file)", EXIT_USAGE
        )
    agent = AsyncAgent(args.agent, client_paths().socket, token=token or None, client=CLIENT)

    async def serve() -> None:
        from svc_console.mcp_bridge.server import Bridge

        try:
            await agent.connect()
        except NotConnected as exc:
            raise CommandError(f"{exc.message}; is svc-console running?", EXIT_USAGE) from None
        except AgentError as exc:
            raise CommandError(exc.message, EXIT_USAGE) from None
        try:
            bridge = Bridge(agent)
            if where is None:
                await _stdio(bridge)
            else:
                from svc_console.mcp_bridge.http import serve_http

                await serve_http(bridge, *where, token=token)
        finally:
            await agent.close()

    anyio.run(serve)
    return 0


async def _stdio(bridge: Any) -> None:
    from mcp.server.stdio import stdio_server

    server = bridge.server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def _token(path: Path | None) -> str:
    if path is None:
        return os.environ.get("SVC_AGENT_TOKEN", "")
    from svc_console.core.private_files import NotPrivate, read_private

    try:
        return read_private(path).strip()
    except NotPrivate as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}", EXIT_USAGE) from None
