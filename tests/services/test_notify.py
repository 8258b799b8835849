"""Notices to an operator who is away, end to end: a real runtime against the sandbox, the broker's
own clock moved by hand, and a webhook receiver on loopback that checks what arrives as a
receiver would (the signature recomputed from the documented recipe, retries after a 500, Slack's
and ntfy's formats), and finds nothing secret and no agent text that could act on it."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers import FakeClock, awaiting_funds, eventually, submit

from svc_console.broker.params import ApproveParams, SubmitParams
from svc_console.config.errors import SettingsError
from svc_console.config.notify_settings import NotifySettings, Webhook, notify_settings
from svc_console.core.states import State
from svc_console.runtime import Runtime

SECRET = "whsec-0123456789abcdef-test"
FAKE_KEY = "0x" + "ab12" * 16  # 64 hex digits: passes the socket, flagged as a key
HOSTILE_PURPOSE = (
    "<!channel> see https://evil.example/x *bold* `code` \x1b]52;c;evil\x07 @here"
    f" read {FAKE_KEY} and mail me@example.com"
)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """A webhook receiver on 127.0.0.1: records every POST, answers from `statuses` first."""

    url: str
    received: list[Received] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)

    def bodies(self) -> list[bytes]:
        return [r.body for r in self.received]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            status = state.statuses.pop(0) if state.statuses else 200
            # Recorded before the answer, so a test that sees it also sees the retry's cause.
            state.received.append(Received(self.path, dict(self.headers.items()), body))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


def hook(receiver: Receiver, fmt: str = "json", path: str = "/hook?token=q-secret") -> Webhook:
    return Webhook(receiver.url + path, fmt, SECRET if fmt == "json" else None)


@pytest.fixture
async def start(make_runtime) -> AsyncIterator[Callable]:
    """Start a runtime that notifies `hooks`; a SKILLS.md `policy` first, when given."""
    started: list[Runtime] = []

    async def run(*hooks: Webhook, policy: str | None = None, clock=None, **settings) -> Runtime:
        runtime = make_runtime(clock=clock)
        if policy is not None:
            (runtime.paths.home / "SKILLS.md").write_text(policy)
        runtime.notify = NotifySettings(webhooks=hooks, **settings)
        runtime.notify_options = {"sweep_s": 0.02, "backoff_s": 0.01}
        await runtime.start()
        started.append(runtime)
        return runtime

    yield run
    for runtime in started:
        await runtime.stop()


def verified(received: Received) -> dict:
    """The body of a signed notice, after checking its signature as docs/operations.md tells
    receivers."""
    stamp = received.headers["X-Svc-Console-Timestamp"]
    expected = hmac.new(
        SECRET.encode(), stamp.encode() + b"." + received.body, hashlib.sha256
    ).hexdigest()
    assert hmac.compare_digest(received.headers["X-Svc-Console-Signature"], f"sha256={expected}")
    return json.loads(received.body)


async def pending(runtime: Runtime, **overrides) -> str:
    ticket = await submit(runtime, "research-bot", **overrides)
    rid = ticket["request_id"]
    await eventually(lambda: runtime.broker.get(rid).state == State.pending)
    return rid


async def test_a_request_waiting_too_long_is_a_signed_json_notice(start, receiver):
    clock = FakeClock()
    runtime = await start(hook(receiver), clock=clock, waiting_after_s=120)
    rid = await pending(runtime)
    clock.advance(119)
    await runtime.broker.wait(rid, 0.1)  # sweeps pass; not yet due
    assert receiver.received == []

    clock.advance(2)
    await eventually(lambda: receiver.received)
    got = receiver.received[0]
    assert got.path == "/hook?token=q-secret"
    body = verified(got)
    assert set(body) == {
        "event", "request_id", "agent", "endpoint", "summary", "amount_usdc", "at"
    }  # fmt: skip
    assert body["event"] == "waiting" and body["request_id"] == rid
    assert body["agent"] == "research-bot" and body["endpoint"] == "ep_websearch_basic"
    assert body["amount_usdc"] == "0.01"
    assert body["summary"] == (
        f'request {rid} of agent "research-bot" has waited 2 min for your decision:'
        ' "ep_websearch_basic", 0.01 USDC; purpose "background research"'
    )
    assert got.headers["X-Svc-Console-Event"] == "waiting"
    # Once per stay in the queue, however many sweeps pass.
    clock.advance(600)
    await runtime.broker.wait(rid, 0.1)
    assert len(receiver.received) == 1
    assert runtime.notifier.sent == 1


async def test_a_signature_made_with_another_key_or_body_does_not_verify(start, receiver):
    clock = FakeClock()
    runtime = await start(hook(receiver), clock=clock, waiting_after_s=1)
    await pending(runtime)
    clock.advance(5)
    got = (await eventually(lambda: receiver.received))[0]
    tampered = Received(got.path, got.headers, got.body.replace(b"waiting", b"waiting "))
    with pytest.raises(AssertionError):
        verified(tampered)


async def test_a_failed_delivery_is_retried_and_logged_by_host_only(start, receiver, caplog):
    receiver.statuses = [500]
    clock = FakeClock()
    runtime = await start(hook(receiver), clock=clock, waiting_after_s=10)
    await pending(runtime)
    clock.advance(11)
    await eventually(lambda: len(receiver.received) == 2)
    first, second = receiver.received
    assert first.headers["X-Svc-Console-Delivery"] == second.headers["X-Svc-Console-Delivery"]
    assert verified(second)["event"] == "waiting"
    await eventually(lambda: runtime.notifier.sent == 1)
    assert runtime.notifier.failed == 0

    # A receiver that keeps failing: three attempts, then one line naming its host alone.
    receiver.statuses = [503, 503, 503]
    runtime.notifier.send(runtime.notifier.watch.policy_changed(_invalid("x"))[0])
    await eventually(lambda: runtime.notifier.failed == 1)
    assert len(receiver.received) == 5
    lines = [r.getMessage() for r in caplog.records if "not delivered" in r.getMessage()]
    assert lines == [lines[0]] and "127.0.0.1" in lines[0] and "HTTP 503" in lines[0]
    assert "q-secret" not in caplog.text and "/hook" not in caplog.text


async def test_a_refused_notice_is_not_retried(start, receiver):
    receiver.statuses = [400]
    runtime = await start(hook(receiver))
    runtime.notifier.send(runtime.notifier.watch.policy_changed(_invalid("x"))[0])
    await eventually(lambda: runtime.notifier.failed == 1)
    assert len(receiver.received) == 1


async def test_an_unreachable_receiver_is_retried_then_given_up(start, receiver, refused_url):
    dead = Webhook(f"{refused_url}/hook", "json", SECRET)
    runtime = await start(dead, hook(receiver))
    runtime.notifier.send(runtime.notifier.watch.policy_changed(_invalid("x"))[0])
    await eventually(lambda: runtime.notifier.failed == 1 and runtime.notifier.sent == 1)
    assert len(receiver.received) == 1  # the other webhook got it regardless


async def test_slack_and_ntfy_formats(start, receiver):
    clock = FakeClock()
    slack, ntfy = hook(receiver, "slack", "/slack"), hook(receiver, "ntfy", "/topic")
    protected = Webhook(receiver.url + "/protected", "ntfy", "tk_" + "a" * 29)
    runtime = await start(slack, ntfy, protected, clock=clock, waiting_after_s=60)
    rid = await pending(runtime)
    clock.advance(61)
    await eventually(lambda: len(receiver.received) == 3)
    by_path = {r.path: r for r in receiver.received}

    message = json.loads(by_path["/slack"].body)
    assert set(message) == {"text", "mrkdwn"} and message["mrkdwn"] is False
    assert message["text"].startswith("svc-console: a request is waiting for you\n")
    assert f"request {rid} of agent" in message["text"]
    assert "X-Svc-Console-Signature" not in by_path["/slack"].headers

    topic = by_path["/topic"]
    assert topic.headers["Title"] == "svc-console: a request is waiting for you"
    assert topic.headers["Priority"] == "3" and topic.headers["Tags"] == "hourglass"
    text = topic.body.decode()
    assert text.startswith(f'request {rid} of agent "research-bot" has waited 61 s')
    assert "Authorization" not in topic.headers
    # A protected topic gets its access token as a bearer, and the same text.
    assert by_path["/protected"].headers["Authorization"] == "Bearer tk_" + "a" * 29
    assert by_path["/protected"].body == topic.body


async def test_nothing_secret_nor_active_in_any_body(start, receiver, sandbox):
    clock = FakeClock()
    hooks = (hook(receiver), hook(receiver, "slack", "/slack"), hook(receiver, "ntfy", "/ntfy"))
    runtime = await start(*hooks, clock=clock, waiting_after_s=1)
    inputs = {"query": f"INPUT-MARKER {FAKE_KEY}"}
    over_socket = await pending(runtime, purpose=HOSTILE_PURPOSE, inputs=inputs)
    # In process, past the socket's refusal: the notice hides what the socket would refuse.
    request = await runtime.broker.submit(
        SubmitParams(
            agent="hostile-bot",
            kind="market_call",
            endpoint_id="ep_websearch_basic",
            inputs=inputs,
            purpose="Bearer abcdefghijklmnopqrstuvwx sk_live_abcdefgh1234 <@U1|boss> "
            + HOSTILE_PURPOSE,
        )
    )
    await eventually(lambda: runtime.broker.get(request.id).state == State.pending)
    clock.advance(2)
    await eventually(lambda: len(receiver.received) == 6)

    state = sandbox.state
    secrets = [SECRET, FAKE_KEY, FAKE_KEY[2:], state.api_key, state.api_token, "q-secret"]
    for got in receiver.received:
        text = got.body.decode()
        for value in [*secrets, "sk_live_", "abcdefghijklmnopqrstuvwx", "me@example.com"]:
            assert value not in text and value not in str(got.headers)
        assert "INPUT-MARKER" not in text  # inputs are never sent
        assert "\x1b" not in text and "\x07" not in text and "\\u001b" not in text
        assert "https://evil" not in text
        assert ("https : //evil" if got.path == "/ntfy" else "https[:]//evil") in text
    for got in receiver.received:
        if got.path == "/slack":
            text = json.loads(got.body)["text"]
            assert "<" not in text and ">" not in text and "@" not in text
            assert "&lt;!channel&gt;" in text
        elif got.path == "/ntfy":
            text = got.body.decode()
            assert not set("*`<>[]") & set(text.split("; purpose", 1)[1])
        else:
            body = verified(got)
            assert body["request_id"] in (over_socket, request.id)
            summary = body["summary"]
            purpose = summary.split("; purpose ", 1)[1]
            assert purpose.startswith('"') and purpose.endswith('"')
            assert len(purpose) <= 82  # quoted and cut to 80 characters
            if body["request_id"] == request.id:
                assert purpose.startswith('"[hidden] [hidden] <')


async def test_bare_domains_in_agent_text_are_defanged_in_every_notice(start, receiver):
    """A receiver makes `www.evil.example` a link as readily as `https://evil.example`: in the
    Slack, ntfy and JSON notices alike, no domain an agent wrote is left whole."""
    clock = FakeClock()
    hooks = (hook(receiver), hook(receiver, "slack", "/slack"), hook(receiver, "ntfy", "/ntfy"))
    runtime = await start(*hooks, clock=clock, waiting_after_s=1)
    purpose = "compare www.evil.example, pay.evil\u3002example and 203.0.113.9 quotes"
    await pending(runtime, purpose=purpose)
    clock.advance(2)
    await eventually(lambda: len(receiver.received) == 3)
    for got in receiver.received:
        if got.path == "/slack":
            text = json.loads(got.body)["text"]
        elif got.path == "/ntfy":
            text = got.body.decode()
        else:
            text = verified(got)["summary"]
        for whole in ("www.evil.example", "pay.evil\u3002example", "evil.example", "203.0.113.9"):
            assert whole not in text, (got.path, text)
        if got.path == "/ntfy":  # its markup characters are blanked: [.] reads " . "
            assert "www . evil . example" in text and "203 . 0 . 113 . 9" in text
        else:
            assert "www[.]evil[.]example" in text and "pay[.]evil[.]example" in text
            assert "203[.]0[.]113[.]9" in text


async def test_policy_error(start, receiver):
    runtime = await start(hook(receiver), policy=VALID)
    assert runtime.policy.status.state == "active"
    replace(runtime.paths.home / "SKILLS.md", INVALID)
    runtime.policy.reload()
    await eventually(lambda: receiver.received)
    body = verified(receiver.received[0])
    assert body["event"] == "policy_error" and body["request_id"] is None
    # A file name is a domain name as well (.md is Moldova's): defanged as one.
    assert body["summary"].startswith('the policy has errors: "SKILLS[.]md:')
    assert "auto-approval is suspended" in body["summary"]
    runtime.policy.reload()  # the same errors again: no second notice
    assert runtime.notifier.admitted == 1 and len(receiver.received) == 1


async def test_a_policy_invalid_at_start_is_told_at_once(start, receiver):
    await start(hook(receiver), policy=INVALID)
    await eventually(lambda: receiver.received)
    assert verified(receiver.received[0])["event"] == "policy_error"


async def test_awaiting_funds(start, receiver, sandbox):
    runtime = await start(hook(receiver))
    rid = await awaiting_funds(runtime, sandbox)
    await eventually(lambda: receiver.received)
    body = verified(receiver.received[0])
    assert body["event"] == "awaiting_funds" and body["request_id"] == rid
    assert body["amount_usdc"] == "0.01"
    assert f"svc-console wallet fund {rid}" in body["summary"]


async def test_budget_passing_its_warn_level(start, receiver):
    runtime = await start(hook(receiver), policy=WARN_AT_HALF_A_CENT)
    ticket = await submit(runtime, "research-bot")
    await eventually(lambda: receiver.received)
    body = verified(receiver.received[0])
    assert body["event"] == "budget_warn" and body["request_id"] == ticket["request_id"]
    assert '"daily" past its warn level: 0.00 -> 0.01 USDC' in body["summary"]
    # The next request is already past the level: no second notice for the same crossing.
    second = await submit(runtime, "research-bot", idempotency_key="2")
    await eventually(lambda: runtime.broker.get(second["request_id"]).state == State.succeeded)
    assert len(receiver.received) == 1


async def test_events_not_chosen_are_not_sent(start, receiver, sandbox):
    runtime = await start(hook(receiver), events=frozenset({"waiting"}))
    await awaiting_funds(runtime, sandbox)
    replace(runtime.paths.home / "SKILLS.md", INVALID)
    runtime.policy.reload()
    assert receiver.received == [] and runtime.notifier.admitted == 0


async def test_beyond_the_rate_bound_notices_are_dropped_and_counted(start, receiver, caplog):
    runtime = await start(hook(receiver), max_per_minute=2)
    notifier = runtime.notifier
    for n in range(5):
        notifier.send(notifier.watch.policy_changed(_invalid(str(n)))[0])
    await eventually(lambda: notifier.sent == 2)
    assert notifier.dropped == 3 and len(receiver.received) == 2
    assert sum("dropping" in r.getMessage() for r in caplog.records) == 1


async def test_an_approved_request_waits_no_more(start, receiver):
    clock = FakeClock()
    runtime = await start(hook(receiver), clock=clock, waiting_after_s=30)
    rid = await pending(runtime)
    await runtime.broker.approve(ApproveParams(request_id=rid))
    clock.advance(60)
    await eventually(lambda: runtime.broker.get(rid).state == State.succeeded)
    await runtime.broker.wait(rid, 0.1)
    assert receiver.received == []


# -- settings ---------------------------------------------------------------------------------


def write(home: Path, text: str) -> Path:
    path = home / "settings.toml"
    path.write_text(text)
    return path


GOOD = """
[notify]
waiting_after_s = 60
events = ["waiting", "budget_warn"]
max_per_minute = 10
[[notify.webhook]]
url = "https://hooks.example.com/x?token=abc"
format = "json"
secret_env = "SVC_NOTIFY_SECRET"
[[notify.webhook]]
url_env = "SLACK_URL"
format = "slack"
[[notify.webhook]]
url = "https://ntfy.sh/console-topic"
format = "ntfy"
"""


def test_settings_read_with_their_secrets(home):
    env = {"SVC_NOTIFY_SECRET": SECRET, "SLACK_URL": "https://hooks.slack.com/services/T/B/C"}
    settings = notify_settings(write(home, GOOD), env)
    token = "tk_" + "b" * 29
    with_token = GOOD + '[[notify.webhook]]\nurl = "https://ntfy.example/t"\nformat = "ntfy"\n'
    protected = notify_settings(
        write(home, with_token + 'secret_env = "NTFY_TOKEN"\n'), {**env, "NTFY_TOKEN": token}
    )
    assert protected.webhooks[3].secret == token and token not in repr(protected)
    assert settings.waiting_after_s == 60 and settings.max_per_minute == 10
    assert settings.events == {"waiting", "budget_warn"}
    json_hook, slack, ntfy = settings.webhooks
    assert json_hook.secret == SECRET and json_hook.host == "hooks.example.com"
    assert slack.format == "slack" and slack.host == "hooks.slack.com"
    assert ntfy.format == "ntfy" and ntfy.secret is None
    assert "abc" not in repr(settings) and SECRET not in repr(settings)
    assert notify_settings(home / "absent.toml", {}) == NotifySettings()


def test_a_secret_file_must_be_owner_only(home):
    key = home / "notify.key"
    key.write_text(SECRET + "\n")
    key.chmod(0o644)
    text = '[notify]\n[[notify.webhook]]\nurl = "https://h.example"\nsecret_file = "notify.key"\n'
    path = write(home, text)
    with pytest.raises(SettingsError, match=r"#1 secret_file: .* readable by others"):
        notify_settings(path, {})
    key.chmod(0o600)
    assert notify_settings(path, {}).webhooks[0].secret == SECRET


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[notify]\nwait = 3\n", "[notify] takes only desktop, events, max_per_minute"),
        ("[notify]\nwaiting_after_s = -1\n", "[notify] waiting_after_s must be a number"),
        ("[notify]\nwaiting_after_s = true\n", "[notify] waiting_after_s must be a number"),
        ('[notify]\nevents = ["waiting", "lunch"]\n', "[notify] events: unknown lunch"),
        ("[notify]\nmax_per_minute = 0\n", "[notify] max_per_minute must be a whole number"),
        ('[notify]\ndesktop = "yes"\n', "[notify] desktop must be true, false"),
        ("[notify]\nwebhook = 3\n", "[notify] webhook must be tables"),
        ("[[notify.webhook]]\nformat = 'json'\n", "#1 needs url or url_env"),
        ("[[notify.webhook]]\nurl = 'ftp://h/x?token=t0k'\n", "#1 url must be an http"),
        ("[[notify.webhook]]\nurl = 'https://h'\nformat = 'xml'\n", "#1 format must be one of"),
        ("[[notify.webhook]]\nurl = 'https://h'\n", "#1 format json takes secret_env or"),
        (
            "[[notify.webhook]]\nurl = 'https://h'\nsecret_env = 'NOPE_UNSET'\n",
            "#1 secret_env: the environment variable NOPE_UNSET is not set",
        ),
        (
            "[[notify.webhook]]\nurl = 'https://h'\nsecret_env = 'SHORT'\n",
            "#1 secret_env: the secret must be at least 16 characters",
        ),
        (
            "[[notify.webhook]]\nurl = 'https://h'\nformat = 'slack'\nsecret_env = 'SHORT'\n",
            "#1 secret_env: format slack takes no secret",
        ),
        ("[[notify.webhook]]\nurl = 'https://h'\nformat = 'ntfy'\nuser = 'x'\n", "unknown: user"),
    ],
)
def test_bad_settings_are_named(home, text, words):
    with pytest.raises(SettingsError) as error:
        notify_settings(write(home, text), {"SHORT": "abc"})
    assert words in str(error.value)
    assert "t0k" not in str(error.value)  # an address is never repeated: it may be a credential


async def test_a_runtime_started_alone_sends_nothing_on_bad_settings(make_runtime, home, caplog):
    # The commands refuse such a file before starting (below); a runtime started by other code
    # (the TUI's tests, an embedding) keeps going, as with [agents], and sends nothing.
    write(home, "[notify]\nmax_per_minute = 'lots'\n")
    runtime = make_runtime()
    await runtime.start()
    try:
        assert runtime.notifier is None and runtime.notify == NotifySettings()
        assert "notices not sent" in caplog.text and "[notify] max_per_minute" in caplog.text
    finally:
        await runtime.stop()


def test_serve_refuses_bad_settings_in_one_line(home):
    import subprocess
    import sys

    write(home, "[notify]\nevents = ['lunch']\n")
    done = subprocess.run(
        [sys.executable, "-m", "svc_console", "serve"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert done.stderr.strip().count("\n") == 0 and "[notify] events: unknown lunch" in done.stderr
    assert not (home / "svc.sock").exists()


def replace(path: Path, text: str) -> None:
    """Write a policy file whole at once: the console's watcher never reads it half-written."""
    partial = path.with_suffix(".tmp")
    partial.write_text(text)
    partial.replace(path)


def _invalid(error: str):
    from svc_console.policy.live import PolicyStatus

    return PolicyStatus("invalid", ("SKILLS.md",), None, (f"SKILLS.md:1:1: {error}",))


VALID = """# SKILLS.md

```policy
per_call_max_usdc: 1
```
"""
INVALID = """# SKILLS.md

```policy
per_call_max_usdc: lots
```
"""
WARN_AT_HALF_A_CENT = """# SKILLS.md

```policy
auto_approve:
  - name: small searches
    when:
      domain_types: [A7]
      max_usdc: 0.05
budgets:
  - name: daily
    window: day
    warn_usdc: 0.005
    max_usdc: 1
```
"""


def test_a_fragment_of_agent_text_is_short_inert_and_hides_secrets():
    from svc_console.services.notify_messages import fragment

    text = fragment('sk_live_abcdefgh1234 say "done" \x1b[31m see http://x.example ' + "y" * 200)
    assert text.startswith("[hidden] say 'done' <ESC>[31m see http[:]//x[.]example y")
    assert len(text) == 80 and text.endswith("…")
