"""What a notice says, and the bytes each kind of webhook receives.

A notice leaves the machine for a chat room or a phone, read by people and parsed by programs that
act on what they read: a Slack mention pages a whole channel, a link is one tap away. So a notice is
the console's own sentence, and what an agent (or a provider, or a policy file) wrote appears in it
only as a short quoted fragment, made inert for the format it goes to, with anything that looks
like a secret or an e-mail address hidden and no link left to tap, a bare domain included.
Inputs are never part of a notice.

The generic JSON body is signed: `X-Svc-Console-Signature: sha256=<hex>`, the HMAC-SHA256, keyed
with the webhook's secret, of the `X-Svc-Console-Timestamp` value, a full stop, and the raw body.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from svc_console.config.notify_settings import Webhook
from svc_console.core.sanitize import inert_line
from svc_console.core.secrets_scan import PATTERNS

QUOTED_CHARS = 80
SIGNATURE_HEADER = "X-Svc-Console-Signature"
TIMESTAMP_HEADER = "X-Svc-Console-Timestamp"
EVENT_HEADER = "X-Svc-Console-Event"
DELIVERY_HEADER = "X-Svc-Console-Delivery"

_TITLES = {
    "waiting": "svc-console: a request is waiting for you",
    "policy_error": "svc-console: the policy has errors",
    "awaiting_funds": "svc-console: a request is waiting for funds",
    "budget_warn": "svc-console: a budget passed its warn level",
}
# ntfy shows tags as emoji and sorts by priority (3 is its default).
_NTFY = {
    "waiting": ("3", "hourglass"),
    "policy_error": ("4", "warning"),
    "awaiting_funds": ("4", "moneybag"),
    "budget_warn": ("3", "chart_with_upwards_trend"),
}
# A link the receiver would make clickable: `https://` becomes `https[:]//`.
_SCHEME = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*):(/{1,2})")
# A bare domain or address a receiver would make a link of (`www.evil.example`, `10.0.0.1`): its
# dots become `[.]`. Labels may hold any letters; a dot may be an ideographic or full-width one.
_DOT = "[.\u3002\uff0e\uff61]"
_DOMAIN = re.compile(
    rf"(?<![\w.@-])(?:[^\W_](?:[\w-]{{0,61}}[^\W_])?{_DOT})+(?:[^\W\d_]{{2,63}}|xn--[\w-]+)"
    rf"(?![\w-])|(?<![\w.])\d{{1,3}}(?:{_DOT}\d{{1,3}}){{3}}(?![\w.])"
)
_ANY_DOT = re.compile(_DOT)
# Underscores stay: ids are full of them, and alone they make no link, image or heading.
_NTFY_MARKDOWN = re.compile(r"[*~`#<>|\[\]()!\\]")


@dataclass(frozen=True)
class Untrusted:
    """Text the console did not write: shown quoted, short and inert, never as instructions."""

    text: str


Part = str | Untrusted


@dataclass(frozen=True)
class Notice:
    event: str
    parts: tuple[Part, ...]  # the sentence: the console's words and quoted fragments
    at: float
    delivery: str  # the same on every attempt, so a receiver can drop a repeat
    request_id: str | None = None
    agent: str | None = None
    endpoint: str | None = None
    amount_usdc: str | None = None

    @property
    def title(self) -> str:
        return _TITLES[self.event]


def hidden(text: str) -> str:
    """`text` with every secret-looking value and e-mail address replaced by a marker."""
    for pattern, _ in PATTERNS.values():
        text = pattern.sub("[hidden]", text)
    return text


def fragment(text: str, *, limit: int = QUOTED_CHARS) -> str:
    """Untrusted text as one short inert line, secrets hidden and links broken (schemes and bare
    domains alike), unquoted."""
    line = _SCHEME.sub(r"\1[:]\2", hidden(inert_line(text, 10 * limit)))
    line = _DOMAIN.sub(lambda found: _ANY_DOT.sub("[.]", found.group()), line)
    line = line.replace('"', "'")  # a quote inside cannot close the quotation early
    return line if len(line) <= limit else line[: limit - 1] + "…"


def sentence(notice: Notice, *, clean=lambda text: text) -> str:  # type: ignore[no-untyped-def]
    """The notice's sentence, each untrusted fragment quoted after `clean` (format-specific)."""
    return "".join(
        f'"{clean(fragment(part.text))}"' if isinstance(part, Untrusted) else part
        for part in notice.parts
    )


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Delivery:
    """One POST: its body and headers (signed at the moment of each attempt)."""

    body: bytes
    headers: dict[str, str]


def render(notice: Notice, hook: Webhook, now: float | None = None) -> Delivery:
    """The bytes `hook` receives for `notice`; a JSON body is signed with `now` (the wall clock:
    a receiver compares it with its own)."""
    common = {EVENT_HEADER: notice.event, DELIVERY_HEADER: notice.delivery}
    if hook.format == "slack":
        text = f"{notice.title}\n{sentence(notice, clean=_slack_fragment)}"
        body = _json({"text": _slack_escape(text), "mrkdwn": False})
        return Delivery(body, {"Content-Type": "application/json", **common})
    if hook.format == "ntfy":
        priority, tags = _NTFY[notice.event]
        text = sentence(notice, clean=lambda part: _NTFY_MARKDOWN.sub(" ", part))
        headers = {"Title": notice.title, "Priority": priority, "Tags": tags}
        if hook.secret is not None:  # a protected topic's access token
            headers["Authorization"] = f"Bearer {hook.secret}"
        return Delivery(text.encode(), {"Content-Type": "text/plain; charset=utf-8", **headers})
    body = _json(
        {
            "event": notice.event,
            "request_id": _field(notice.request_id),
            "agent": _field(notice.agent),
            "endpoint": _field(notice.endpoint),
            "summary": sentence(notice),
            "amount_usdc": notice.amount_usdc,
            "at": iso(notice.at),
        }
    )
    if hook.secret is None:  # the settings refuse such a webhook; never sent unsigned
        raise ValueError("a json webhook signs its notices: it needs its secret")
    stamp = str(int(time.time() if now is None else now))
    headers = {
        "Content-Type": "application/json",
        **common,
        TIMESTAMP_HEADER: stamp,
        SIGNATURE_HEADER: "sha256=" + signature(hook.secret, stamp, body),
    }
    return Delivery(body, headers)


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The hex HMAC-SHA256 a receiver recomputes: over `timestamp`, ".", then the raw body."""
    signed = timestamp.encode("ascii") + b"." + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def _field(text: str | None) -> str | None:
    return None if text is None else fragment(text)


def _json(value: object) -> bytes:
    # ASCII only: every receiver parses it the same way, whatever it assumes of the encoding.
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def _slack_fragment(text: str) -> str:
    # A full-width at sign reads the same and mentions no one (`@channel`, `@here`, `@someone`).
    return text.replace("@", "\uff20")


def _slack_escape(text: str) -> str:
    """Slack's three escapes: with them no `<!channel>`, `<@U123>` or `<url|label>` is read."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
