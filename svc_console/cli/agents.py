"""`svc-console agents add / list / rotate / revoke / release`: agents as identities, not names;
and `agents paused / resume`: the agents a policy's circuit breaker paused, asked of the running
console.

Names are kept in one form (`core/names.py`): `agents add Research-Bot` registers research-bot. A
revoked agent's name stays reserved (no unverified agent may take it) until `release` frees it.

The registry is a file the running console reads again when it changes; after a revocation the
command also asks a running console (over the operator socket) to cancel what the agent left
undecided, and a console started later does so at start.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from typing import Any

from svc_console.cli.arguments import uid
from svc_console.cli.errors import EXIT_USAGE, CommandError
from svc_console.cli.operators import identity_options


def add_commands(commands: Any) -> None:
    agents = commands.add_parser(
        "agents", help="agent identities: a token each, printed once"
    ).add_subparsers(title="agents commands", metavar="COMMAND", required=True)
    add = agents.add_parser("add", help="register an agent and print its token once")
    add.add_argument("name")
    add.add_argument(
        "--uid", type=uid, help="the user the agent runs as: recognised by that uid alone"
    )
    identity_options(add, "once operator accounts exist: who registers it")
    add.set_defaults(run=run_add)
    listing = agents.add_parser("list", help="the registered agents (never their tokens)")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(run=run_list)
    rotate = agents.add_parser("rotate", help="a new token for an agent; the old one stops")
    rotate.add_argument("name")
    rotate.set_defaults(run=run_rotate)
    revoke = agents.add_parser("revoke", help="end an agent's identity; its pending requests end")
    revoke.add_argument("name")
    revoke.set_defaults(run=run_revoke)
    release = agents.add_parser(
        "release", help="free a revoked agent's name: until then no one else may use it"
    )
    release.add_argument("name")
    release.set_defaults(run=run_release)
    paused = agents.add_parser("paused", help="the agents the circuit breaker paused, and why")
    paused.add_argument("--json", action="store_true")
    paused.set_defaults(run=run_paused)
    resume = agents.add_parser("resume", help="resume a paused agent: its rules apply again")
    resume.add_argument("name")
    identity_options(resume, "once operator accounts exist: who resumes it")
    resume.set_defaults(run=run_resume)


def _registry() -> Any:
    from svc_console.config.agent_registry import AgentRegistry
    from svc_console.config.paths import resolve_paths

    return AgentRegistry(resolve_paths().agent_registry)


def _changing(change: Any) -> Any:
    from svc_console.config.agent_registry import RegistryError

    try:
        return change(_registry())
    except RegistryError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None


def _name(text: str) -> str:
    """The name as the registry keeps it, or a usage error saying what a name may be."""
    from svc_console.config.agent_registry import canonical_name

    return str(_changing(lambda _registry: canonical_name(text)))


def _print_token(name: str, token: str) -> None:
    print(token)
    print(
        f"the token of agent {name}, shown this once: give it to the agent as SVC_AGENT_TOKEN",
        file=sys.stderr,
    )


def run_add(args: argparse.Namespace) -> int:
    if args.uid is not None and args.uid == os.getuid():
        raise CommandError(
            f"uid {args.uid} is your own: every program you run would be taken for this agent."
            " Run the agent as another user, or register it without --uid",
            EXIT_USAGE,
        )
    from svc_console.cli.operators import proven_operator

    name = _name(args.name)
    # Recorded: under a two-person rule, the one who registered an agent never approves for it.
    by = proven_operator(args, f"registering agent {name}")
    token = _changing(lambda registry: registry.add(name, args.uid, registered_by=by))
    _print_token(name, token)
    return 0


def run_rotate(args: argparse.Namespace) -> int:
    name = _name(args.name)
    token = _changing(lambda registry: registry.rotate(name))
    _print_token(name, token)
    return 0


def run_revoke(args: argparse.Namespace) -> int:
    name = _name(args.name)
    _changing(lambda registry: registry.revoke(name))
    print(
        f"agent {name} revoked: its token no longer works; its name stays reserved until"
        f" svc-console agents release {name}"
    )
    cancelled = _cancel_in_running_console()
    if cancelled is None:
        print("the console is not running: it cancels the agent's pending requests at start")
    else:
        print(f"{cancelled} pending request(s) cancelled")
    return 0


def run_release(args: argparse.Namespace) -> int:
    name = _name(args.name)
    _changing(lambda registry: registry.release(name))
    print(f"agent {name} released: the name is free (an agent may use it, or you may add it)")
    return 0


def _cancel_in_running_console() -> int | None:
    """Ask a running console to cancel what revoked agents left undecided; None if none runs."""
    from svc_console.agent import AgentError, NotConnected
    from svc_console.cli.socket_client import connect

    try:
        with connect(None, operator=True) as console:
            return int(console.call("agents.sync", {})["cancelled"])
    except (CommandError, NotConnected, AgentError):
        return None


def run_list(args: argparse.Namespace) -> int:
    agents = _changing(lambda registry: registry.agents())
    rows = [
        {
            "name": agent.name,
            "uid": agent.uid,
            "state": "active" if agent.active else "revoked",
            "created_at": agent.created_at,
            "rotated_at": agent.rotated_at,
            "revoked_at": agent.revoked_at,
            "registered_by": agent.registered_by,
        }
        for agent in agents
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no registered agents (svc-console agents add NAME)")
    for row in rows:
        uid = f"uid {row['uid']}" if row["uid"] is not None else "token"
        since = datetime.fromtimestamp(row["created_at"], UTC).strftime("%Y-%m-%d %H:%M UTC")
        by = f"  by {row['registered_by']}" if row["registered_by"] else ""
        print(f"{row['name']}  {row['state']}  {uid}  since {since}{by}")
    return 0


def run_paused(args: argparse.Namespace) -> int:
    from svc_console.cli.socket_client import call, connect
    from svc_console.core.sanitize import inert_line

    with connect(None, operator=True) as console:
        paused = call(lambda: console.call("agents.paused", {}))
    if args.json:
        print(json.dumps(paused, indent=2))
        return 0
    if not paused:
        print("no agent is paused")
    for pause in paused:
        since = datetime.fromtimestamp(pause["since"], UTC).strftime("%Y-%m-%d %H:%M UTC")
        print(
            f"{inert_line(pause['agent'], 60)}  paused since {since}  by {pause['by']}:"
            f" {inert_line(pause['reason'], 120)}"
        )
    return 0


def run_resume(args: argparse.Namespace) -> int:
    from svc_console.cli.approvals import as_operator
    from svc_console.cli.socket_client import call, connect

    with connect(None, operator=True) as console:
        params = as_operator(console, args, {"agent": args.name})
        call(lambda: console.call("agents.resume", params))
    print(f"agent {args.name} resumed: its policy's rules apply to its requests again")
    return 0
