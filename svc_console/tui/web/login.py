"""The web console's door: one login token, made once and kept in an owner-only file, that every
request must show (a cookie, set after the token was typed or opened once as `?token=`).

The cookie holds a value derived from the token, not the token itself, and is HttpOnly and
SameSite=Strict: another site the operator's browser visits can neither read it nor send it. The
websocket that drives the console is also refused when its Origin is another site's. Tokens are
compared in constant time. Nothing here ever logs or prints the token: the command line shows it
once, when it is made.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import web

from svc_console.config.held_secrets import WEB_TOKEN_FILE
from svc_console.core.private_files import read_private, write_private

TOKEN_FILE = WEB_TOKEN_FILE
COOKIE = "svc_console_web"
TOKEN_PREFIX = "svcweb_"

LOGIN_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>svc-console</title></head>
<body style="font-family: sans-serif; max-width: 30em; margin: 3em auto;">
<h1>svc-console</h1>
<p>This console needs its login token: the one <code>svc-console web</code> showed when it
made it, kept in <code>$SVC_CONSOLE_HOME/web.token</code> on the machine that runs it.</p>
{note}<form method="post" action="/login">
<input name="token" type="password" autocomplete="current-password" style="width: 100%">
<button type="submit">Open the console</button>
</form></body></html>
"""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def login_token(home: Path) -> tuple[str, bool]:
    """The web console's token and whether it was made now (then, and only then, shown)."""
    path = home / TOKEN_FILE
    if path.exists():
        return read_private(path).strip(), False
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    write_private(path, token + "\n")
    return token, True


def _cookie_value(token: str) -> str:
    return hmac.new(token.encode(), b"svc-console web cookie", hashlib.sha256).hexdigest()


def _same(offered: str | None, expected: str) -> bool:
    return offered is not None and hmac.compare_digest(offered.encode(), expected.encode())


def _let_in(response: web.StreamResponse, token: str) -> web.StreamResponse:
    response.set_cookie(
        COOKIE, _cookie_value(token), httponly=True, samesite="Strict", path="/", max_age=None
    )
    return response


def _see_other(path: str) -> web.Response:
    return web.Response(status=303, headers={"Location": path})


# Said when a token was typed and is not this console's: the form alone would look unanswered.
WRONG_TOKEN = (
    '<p role="alert" style="color: #b00020;"><strong>That token is not this console\'s.'
    "</strong> Check it against <code>web.token</code> and type it again.</p>\n"
)


def _refused(note: str = "") -> web.Response:
    # The note is one of ours, never the typed text: nothing offered is echoed back.
    page = LOGIN_PAGE.replace("{note}", note)
    return web.Response(status=401, text=page, content_type="text/html")


def guard(token: str) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    """An aiohttp middleware that lets through only requests that show the token."""
    cookie = _cookie_value(token)

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path == "/login" and request.method == "POST":
            form = await request.post()
            offered = form.get("token")
            if isinstance(offered, str) and _same(offered.strip(), token):
                return _let_in(_see_other("/"), token)
            return _refused(WRONG_TOKEN)
        if _same(request.cookies.get(COOKIE), cookie):
            origin = request.headers.get("Origin")
            if origin and urlsplit(origin).netloc != request.host:
                return web.Response(status=403, text="another site may not drive this console")
            return await handler(request)
        if _same(request.query.get("token"), token):
            # Once: the address without the token, so it leaves the address bar and history.
            return _let_in(_see_other(request.path), token)
        return _refused(WRONG_TOKEN if "token" in request.query else "")

    return middleware
