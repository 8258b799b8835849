"""A stand-in for Slack, on loopback, as the sandbox stands in for the marketplace: the Web API
methods the console's app calls (auth.test, apps.connections.open, chat.postMessage, chat.update,
chat.postEphemeral, views.open) and the Socket Mode websocket those connections open, speaking
Slack's own wire formats to the real slack-bolt and slack-sdk code.

It lives under tests/ rather than beside the sandbox: the sandbox is part of the product (the
demo and the embedded console run against it), while nothing of the product needs a Slack that is
not Slack; only the tests do.

The people in the channel are the test: `press` clicks a button of a message as Slack shows it (the
payload is built from the blocks the console posted, the button's value included), `submit` sends
a modal back with what was typed, and `drop` takes the websocket away, politely (Slack's own
`disconnect` envelope, then a close) or not (the TCP connection cut). Tokens are checked as Slack
checks them, and the blocks against a few of Slack's documented limits, so a layout Slack would
refuse is refused here too. Every call wakes `wait_for`, which tests await instead of sleeping.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

BOT_TOKEN = "xoxb-standin-0000-bot"
APP_TOKEN = "xapp-1-standin-0000-app"
CHANNEL = "C0APPROVALS"
TEAM = "T0STANDIN"
APP = "A0STANDIN"
BOT_USER = "U0BOT"
HEADER_CHARS, TEXT_CHARS, TITLE_CHARS, VALUE_CHARS, METADATA_CHARS = 150, 3000, 24, 2000, 3000


@dataclass
class Message:
    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]]
    versions: list[list[dict[str, Any]]] = field(default_factory=list)  # blocks, oldest first

    def shown(self) -> str:
        """Every text of the message, in order, as a reader sees it."""
        return "\n".join(_texts(self.blocks))

    def button(self, action_id: str) -> tuple[str, dict[str, Any]] | None:
        for block in self.blocks:
            for element in block.get("elements", []) if block.get("type") == "actions" else []:
                if element.get("action_id") == action_id:
                    return block.get("block_id", ""), element
        return None


@dataclass
class Ephemeral:
    channel: str
    user: str
    text: str


class SlackStandIn:
    def __init__(self) -> None:
        self.messages: dict[str, Message] = {}  # by ts
        self.views: dict[str, dict[str, Any]] = {}  # opened modals, by id
        self.ephemerals: list[Ephemeral] = []
        self.calls: list[str] = []  # Web API methods, in order
        self.connections = 0  # websockets opened so far
        self.fail_next: dict[str, str] = {}  # method → the error its next call gets
        self._sockets: list[web.WebSocketResponse] = []
        self._requests: dict[web.WebSocketResponse, web.Request] = {}
        self._acks: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._triggers: set[str] = set()
        self._ts = itertools.count(1)
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> SlackStandIn:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/link/", self._link)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def stop(self) -> None:
        for socket in list(self._sockets):
            await socket.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    # -- what the tests wait for ---------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 15.0) -> Any:
        """Until `predicate()` holds, checked after every call and connection."""
        async with self._changed:
            return await asyncio.wait_for(self._changed.wait_for(predicate), timeout)

    async def _note(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def message_of(self, request_id: str) -> Message | None:
        """The message that shows `request_id` (its header names it)."""
        found = [m for m in self.messages.values() if request_id in _texts(m.blocks[:1])[0]]
        return found[0] if found else None

    def told(self, user: str) -> list[str]:
        return [e.text for e in self.ephemerals if e.user == user]

    # -- people in the channel -----------------------------------------------------------------

    async def press(
        self, user: str, message: Message, action_id: str, *, blocks: list | None = None
    ) -> dict[str, Any]:
        """`user` clicks the button `action_id` of `message` (as it was when it showed
        `blocks`, to click a message a client had not redrawn yet); Slack's acknowledgement."""
        shown = Message(message.channel, message.ts, message.text, blocks or message.blocks)
        found = shown.button(action_id)
        assert found is not None, f"no {action_id} button on the message"
        block_id, button = found
        trigger = self._trigger()
        payload = {
            "type": "block_actions",
            "user": _user(user),
            "api_app_id": APP,
            "token": "verification-token-unused",
            "container": {
                "type": "message",
                "message_ts": message.ts,
                "channel_id": message.channel,
                "is_ephemeral": False,
            },
            "trigger_id": trigger,
            "team": {"id": TEAM, "domain": "standin"},
            "enterprise": None,
            "is_enterprise_install": False,
            "channel": {"id": message.channel, "name": "approvals"},
            "message": {"type": "message", "ts": message.ts, "text": message.text,
                        "blocks": shown.blocks, "bot_id": "B0BOT"},
            "state": {"values": {}},
            "response_url": f"{self.url}/respond/{trigger}",
            "actions": [{
                "action_id": action_id, "block_id": block_id, "text": button["text"],
                "value": button.get("value"), "style": button.get("style"), "type": "button",
                "action_ts": f"{next(self._ts)}.000000",
            }],
        }  # fmt: skip
        return await self._deliver(payload)

    async def submit(self, user: str, view_id: str, typed: dict[str, str]) -> dict[str, Any]:
        """`user` submits the modal `view_id` with `typed` (by input block); Slack's ack payload
        (`{"response_action": "errors", ...}` keeps the modal open)."""
        view = self.views[view_id]
        values = {
            block["block_id"]: {
                block["element"]["action_id"]: {
                    "type": "plain_text_input",
                    "value": typed.get(block["block_id"]),
                }
            }
            for block in view["blocks"]
            if block.get("type") == "input"
        }
        payload = {
            "type": "view_submission",
            "team": {"id": TEAM, "domain": "standin"},
            "user": _user(user),
            "api_app_id": APP,
            "token": "verification-token-unused",
            "trigger_id": self._trigger(),
            "view": {**view, "id": view_id, "team_id": TEAM, "app_id": APP,
                     "state": {"values": values}, "hash": uuid.uuid4().hex},
            "response_urls": [],
            "is_enterprise_install": False,
            "enterprise": None,
        }  # fmt: skip
        return await self._deliver(payload)

    async def drop(self, *, abrupt: bool = False) -> None:
        """Take every websocket away: Slack's `disconnect` envelope then a close, or with
        `abrupt` the connection cut with neither."""
        for socket in list(self._sockets):
            if abrupt:
                transport = self._requests[socket].transport
                if transport is not None:
                    transport.abort()
            else:
                await socket.send_json({"type": "disconnect", "reason": "refresh_requested"})
                await socket.close()
            if socket in self._sockets:  # else its handler, woken by the close, took it out
                self._sockets.remove(socket)

    async def _deliver(self, payload: dict[str, Any]) -> dict[str, Any]:
        assert self._sockets, "the console is not connected"
        envelope_id = str(uuid.uuid4())
        acked = asyncio.get_running_loop().create_future()
        self._acks[envelope_id] = acked
        envelope = {"envelope_id": envelope_id, "type": "interactive",
                    "accepts_response_payload": True, "payload": payload}  # fmt: skip
        await self._sockets[-1].send_json(envelope)
        try:
            return (await asyncio.wait_for(acked, 10)).get("payload") or {}
        finally:
            self._acks.pop(envelope_id, None)

    def _trigger(self) -> str:
        trigger = f"{next(self._ts)}.{uuid.uuid4().hex[:12]}"
        self._triggers.add(trigger)
        return trigger

    # -- the Socket Mode websocket -------------------------------------------------------------

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse(autoping=True)
        await socket.prepare(request)
        self._sockets.append(socket)
        self._requests[socket] = request
        self.connections += 1
        await socket.send_json({"type": "hello", "num_connections": len(self._sockets),
                                "connection_info": {"app_id": APP}})  # fmt: skip
        await self._note()
        async for frame in socket:
            if frame.type == WSMsgType.TEXT:
                ack = json.loads(frame.data)
                waiting = self._acks.get(ack.get("envelope_id", ""))
                if waiting is not None and not waiting.done():
                    waiting.set_result(ack)
        if socket in self._sockets:
            self._sockets.remove(socket)
        self._requests.pop(socket, None)
        await self._note()
        return socket

    # -- the Web API ---------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if request.content_type == "application/json":
            args = await request.json()
        else:
            args = dict(await request.post())
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        answer = self._answer(method, token, args)
        self.calls.append(method)
        await self._note()
        return web.json_response(answer)

    def _answer(self, method: str, token: str, args: dict[str, Any]) -> dict[str, Any]:
        wanted = APP_TOKEN if method == "apps.connections.open" else BOT_TOKEN
        if token != wanted:
            return {"ok": False, "error": "invalid_auth"}
        if method in self.fail_next:
            return {"ok": False, "error": self.fail_next.pop(method)}
        handler = {
            "auth.test": self._auth_test,
            "apps.connections.open": self._connections_open,
            "chat.postMessage": self._post,
            "chat.update": self._update,
            "chat.postEphemeral": self._ephemeral,
            "views.open": self._views_open,
        }.get(method)
        if handler is None:
            return {"ok": False, "error": "unknown_method"}
        return handler(args)

    def _auth_test(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": "https://standin.slack.example/", "team": "Stand-in",
                "user": "svc-console", "team_id": TEAM, "user_id": BOT_USER}  # fmt: skip

    def _connections_open(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": f"ws://{self.url.removeprefix('http://')}/link/?ticket={uuid.uuid4()}",
        }

    def _post(self, args: dict[str, Any]) -> dict[str, Any]:
        if args.get("channel") != CHANNEL:
            return {"ok": False, "error": "channel_not_found"}
        problem = _invalid_blocks(args.get("blocks", []))
        if problem:
            return {"ok": False, "error": "invalid_blocks", "errors": [problem]}
        ts = f"{1_700_000_000 + next(self._ts)}.000100"
        blocks = args.get("blocks", [])
        self.messages[ts] = Message(CHANNEL, ts, args.get("text", ""), blocks, [blocks])
        return {"ok": True, "channel": CHANNEL, "ts": ts, "message": {"text": args.get("text")}}

    def _update(self, args: dict[str, Any]) -> dict[str, Any]:
        message = self.messages.get(str(args.get("ts")))
        if message is None or args.get("channel") != message.channel:
            return {"ok": False, "error": "message_not_found"}
        problem = _invalid_blocks(args.get("blocks", []))
        if problem:
            return {"ok": False, "error": "invalid_blocks", "errors": [problem]}
        message.text, message.blocks = args.get("text", ""), args.get("blocks", [])
        message.versions.append(message.blocks)
        return {"ok": True, "channel": message.channel, "ts": message.ts, "text": message.text}

    def _ephemeral(self, args: dict[str, Any]) -> dict[str, Any]:
        self.ephemerals.append(Ephemeral(args["channel"], args["user"], args.get("text", "")))
        return {"ok": True, "message_ts": f"{1_700_000_000 + next(self._ts)}.000200"}

    def _views_open(self, args: dict[str, Any]) -> dict[str, Any]:
        trigger = args.get("trigger_id")
        if trigger not in self._triggers:
            return {"ok": False, "error": "invalid_trigger_id"}
        self._triggers.discard(trigger)  # a trigger opens one modal
        view = args["view"] if isinstance(args["view"], dict) else json.loads(args["view"])
        problem = _invalid_blocks(view.get("blocks", [])) or _invalid_view(view)
        if problem:
            return {"ok": False, "error": "invalid_arguments", "errors": [problem]}
        view_id = f"V{next(self._ts):08d}"
        self.views[view_id] = view
        return {"ok": True, "view": {**view, "id": view_id}}


def _user(user: str) -> dict[str, str]:
    return {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM}


def _texts(blocks: list[dict[str, Any]]) -> list[str]:
    found = []
    for block in blocks:
        for part in [block.get("text"), *block.get("elements", []), *block.get("fields", [])]:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                found.append(part["text"])
            elif isinstance(part, dict) and isinstance(part.get("text"), dict):
                found.append(part["text"]["text"])
    return found


def _invalid_blocks(blocks: list[dict[str, Any]]) -> str | None:
    """The first of Slack's documented limits the blocks break, in Slack's words, or None."""
    ids = [block["block_id"] for block in blocks if "block_id" in block]
    if len(ids) != len(set(ids)):
        return "block_id must be unique"
    for block in blocks:
        text = block.get("text")
        if isinstance(text, dict):
            limit = HEADER_CHARS if block["type"] == "header" else TEXT_CHARS
            if not 0 < len(text["text"]) <= limit:
                return f"must be between 1 and {limit} characters [json-pointer:/text]"
            if block["type"] == "header" and text["type"] != "plain_text":
                return "must be plain_text [json-pointer:/header/text]"
        for element in block.get("elements", []):
            if len(element.get("value", "")) > VALUE_CHARS:
                return f"must be at most {VALUE_CHARS} characters [json-pointer:/value]"
    return None


def _invalid_view(view: dict[str, Any]) -> str | None:
    if len(view["title"]["text"]) > TITLE_CHARS:
        return f"must be at most {TITLE_CHARS} characters [json-pointer:/view/title/text]"
    if len(view.get("private_metadata", "")) > METADATA_CHARS:
        return f"must be at most {METADATA_CHARS} characters [json-pointer:/view/private_metadata]"
    return None
