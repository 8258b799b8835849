"""Hostile input on the approval socket: over 100,000 malformed, oversized, deeply nested, wrongly
typed and non-UTF-8 lines, written in bulk on a few real connections to a running broker.

Two sources: hypothesis strategies for JSON-RPC-shaped garbage (every message is invalid by
construction: a wrong envelope, params that are not an object, or params with a field no method
takes, a required one missing or a wrong operator token), drawn reproducibly; and raw byte lines
from seeded mutations of request templates (flipped bytes, invalid UTF-8, lone surrogate escapes,
truncations, NaN and huge numbers, deep nesting, oversized lines).

What must hold: every line gets exactly one reply, a JSON-RPC error with a stable code and
`data.reason`, echoing the line's id when it had a valid one, except a well-formed notification,
which gets none; nothing is recorded; the broker still answers `console.hello` on every connection,
an agent connected throughout included; connections and their tasks are released on close.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections import Counter
from functools import cache
from typing import Any

from helpers import eventually
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from svc_console.agent import AsyncAgent
from svc_console.broker.jsonrpc import ENVELOPE
from svc_console.broker.methods import TABLE

SEED = 20260522
RAW_LINES = 99_000
HYPOTHESIS_BATCHES = 250  # of 5-20 messages each
CONNECTIONS = 4
CHUNK = 400  # lines written at once on a connection before its replies are read

# The socket's stable error codes and their reasons (DESIGN.md, The approval socket).
STABLE = {
    -32700: "parse_error",
    -32600: "invalid_request",
    -32601: "unknown_method",
    -32602: "invalid_params",
    -32001: "unknown_request",
    -32002: "not_authorised",
    -32005: "too_large",
    -32006: "busy",
}


# -- what a line must get back ------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _too_deep_or_not_unicode(value: Any, max_depth: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > max_depth:
                return True
            children = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in children:
                if isinstance(key, str) and not _is_unicode(key):
                    return True
                stack.append((child, depth + 1))
        elif isinstance(item, str) and not _is_unicode(item):
            return True
    return False


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, from a \ud800-style escape
        return False
    return True


def expected_reply(line: bytes, limits: dict[str, Any]) -> tuple[bool, Any]:
    """(whether the line gets a reply, the id the reply must carry): the JSON-RPC contract.

    A line gets no reply only when it is blank or a well-formed notification (a UTF-8 JSON object
    with "jsonrpc": "2.0", a string method, no id and no other member but params). A reply
    echoes the line's id when the line is a JSON object whose id is a string, an integer or
    null; otherwise its id is null."""
    body = line[:-1]
    if not body.strip():
        return False, None
    if len(line) > limits["max_line_bytes"]:
        return True, None
    try:
        message = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return True, None
    if _too_deep_or_not_unicode(message, limits["max_depth"]) or not isinstance(message, dict):
        return True, None
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int | None):
        return True, None
    well_formed = (
        message.get("jsonrpc") == "2.0"
        and isinstance(message.get("method"), str)
        and set(message) <= {"jsonrpc", "id", "method", "params"}
    )
    if well_formed and "id" not in message:
        return False, None
    return True, request_id


def _key(request_id: Any) -> str:
    return json.dumps(request_id)


def check_reply(reply: Any) -> None:
    assert isinstance(reply, dict) and reply.get("jsonrpc") == "2.0", reply
    assert "result" not in reply, reply
    error = reply["error"]
    assert error["code"] in STABLE, reply
    assert error["data"]["reason"] == STABLE[error["code"]], reply
    assert isinstance(error["message"], str) and error["message"], reply


# -- sending in bulk ----------------------------------------------------------------------------


class Connection:
    """One raw connection: writes a chunk of lines while reading the replies it expects."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, path: Any) -> Connection:
        reader, writer = await asyncio.open_unix_connection(str(path), limit=64 * 1024 * 1024)
        return cls(reader, writer)

    async def exchange(self, lines: list[bytes], limits: dict[str, Any]) -> int:
        expected = Counter()
        for line in lines:
            replied, request_id = expected_reply(line, limits)
            if replied:
                expected[_key(request_id)] += 1
        count = sum(expected.values())

        async def read() -> list[Any]:
            return [json.loads(await self.reader.readline()) for _ in range(count)]

        reading = asyncio.create_task(read())
        self.writer.write(b"".join(lines))
        await self.writer.drain()
        replies = await asyncio.wait_for(reading, 60)
        for reply in replies:
            check_reply(reply)
        got = Counter(_key(reply["id"]) for reply in replies)
        assert got == expected, _explain_mismatch(lines, got, expected, limits)
        await self.hello()  # the next line is answered next: no stray reply was left behind
        return len(lines)

    async def hello(self) -> None:
        self.writer.write(b'{"jsonrpc":"2.0","id":"hello","method":"console.hello"}\n')
        await self.writer.drain()
        reply = json.loads(await asyncio.wait_for(self.reader.readline(), 30))
        assert reply["id"] == "hello" and reply["result"]["server"] == "svc-console", reply

    def close(self) -> None:
        self.writer.close()


def _explain_mismatch(lines: list[bytes], got: Counter, expected: Counter, limits: Any) -> str:
    missing = expected - got
    extra = got - expected
    suspects = [
        line[:300]
        for line in lines
        if _key(expected_reply(line, limits)[1]) in set(missing) | set(extra)
    ]
    return f"replies missing {dict(missing)}, unexpected {dict(extra)}; lines: {suspects[:5]}"


async def send_all(path: Any, lines: list[bytes], limits: dict[str, Any]) -> list[Connection]:
    """Spread `lines` over a few connections, chunk by chunk, all connections at once."""
    connections = [await Connection.open(path) for _ in range(CONNECTIONS)]

    async def feed(connection: Connection, share: list[bytes]) -> None:
        for start in range(0, len(share), CHUNK):
            await connection.exchange(share[start : start + CHUNK], limits)

    await asyncio.gather(*(feed(c, lines[n::CONNECTIONS]) for n, c in enumerate(connections)))
    return connections


def ledger_state(runtime: Any) -> dict[str, Any]:
    db = runtime.ledger.db
    tables = db.table_names()
    state: dict[str, Any] = {
        table: db.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0] for table in tables
    }
    state["last event"] = db.execute("SELECT max(seq), max(hash) FROM events").fetchone()
    return state


async def fuzz(runtime: Any, lines: list[bytes]) -> None:
    path = runtime.paths.socket
    before = ledger_state(runtime)
    async with AsyncAgent("steady", path) as steady:
        limits = steady.hello_info["limits"]
        connections = await send_all(path, lines, limits)
        # Every connection, the bystander's included, is still open and answering.
        for connection in connections:
            await connection.hello()
        assert (await steady.call("console.hello", {}))["server"] == "svc-console"
        for connection in connections:
            connection.close()
        socket = runtime.socket
        await eventually(lambda: len(socket._connections) == 1)  # the bystander alone
        assert all(not c.tasks for c in socket._connections)
    assert ledger_state(runtime) == before


# -- hypothesis: JSON-RPC-shaped garbage --------------------------------------------------------

METHODS = tuple(TABLE)
FIELDS = {
    "console.hello": ("agent", "token"),
    "spend.submit": (
        "agent",
        "kind",
        "endpoint_id",
        "dataset_id",
        "inputs",
        "purpose",
        "max_usdc",
        "idempotency_key",
    ),
    "spend.wait": ("request_id", "timeout_s"),
    "spend.get": ("request_id",),
    "spend.cancel": ("request_id",),
    "approvals.list": ("view", "limit"),
    "approvals.approve": ("request_id", "confirm_amount", "note"),
    "approvals.deny": ("request_id", "reason"),
}
REQUIRED = {
    "spend.submit": ("agent", "kind", "inputs", "purpose"),
    "spend.wait": ("request_id",),
    "spend.get": ("request_id",),
    "spend.cancel": ("request_id",),
    "approvals.approve": ("request_id",),
    "approvals.deny": ("request_id", "reason"),
}
PLAUSIBLE: dict[str, Any] = {
    "agent": "fuzz-bot",
    "kind": "market_call",
    "endpoint_id": "ep_websearch_basic",
    "inputs": {"query": "solar"},
    "purpose": "fuzz",
    "max_usdc": "0.05",
    "request_id": "req_000000000000",
    "timeout_s": 0,
    "view": "pending",
    "limit": 10,
}

surrogates = st.integers(0xD800, 0xDFFF).map(chr)
texts = st.one_of(
    st.text(max_size=24),
    st.text(st.characters(codec="utf-8") | surrogates, max_size=12),
    st.sampled_from(["", " ", "\n", "\x00", "\u202e", "market_call", "req_", "a b", "x" * 300]),
    st.integers(1, 200_000).map(lambda n: "y" * n),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(0, 4000).map(lambda n: int("9" * (n + 1))),
    st.floats(),  # NaN and infinities included: json.dumps writes them, JSON forbids them
    texts,
)
values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(texts, children, max_size=3),
    max_leaves=6,
)
not_objects = scalars | st.lists(values, max_size=4)
non_strings = st.none() | st.booleans() | st.integers() | st.floats() | st.lists(values, max_size=3)


def nested(depth: int, leaf: Any) -> Any:
    for n in range(depth):
        leaf = [leaf] if n % 2 else {"a": leaf}
    return leaf


@st.composite
def params_with_a_breaker(draw: st.DrawFn, method: str) -> Any:
    """Params for `method` that it must refuse: some of its fields with plausible or garbage
    values, plus one thing no valid call has."""
    fields = FIELDS.get(method, ("agent", "request_id"))
    params = {}
    for name in draw(st.lists(st.sampled_from(fields), unique=True)):
        plausible = PLAUSIBLE.get(name, "x")
        params[name] = draw(st.just(plausible) | values)
    breakers = ["unknown field", "deep"]
    if method in REQUIRED:
        breakers.append("missing field")
    if method == "console.hello":
        breakers.append("wrong token")
    breaker = draw(st.sampled_from(breakers))
    if breaker == "unknown field":
        params["~" + draw(texts)] = draw(values)  # no method takes a field named "~..."
    elif breaker == "missing field":
        params.pop(draw(st.sampled_from(REQUIRED[method])), None)
    elif breaker == "wrong token":
        params["token"] = draw(non_strings.filter(lambda v: v is not None) | texts)
    else:
        depth = draw(st.integers(65, 3000))
        params[draw(st.sampled_from(fields))] = nested(depth, draw(scalars))
    return params


@st.composite
def messages(draw: st.DrawFn) -> tuple[Any, str]:
    """(a message, how its id is given). The id kinds: a unique int or string (filled in when
    sent), absent (a notification), null, or a type JSON-RPC does not allow."""
    shape = draw(
        st.sampled_from(
            ["params"] * 4 + ["params not an object"] * 2 + ["envelope", "not an object"]
        )
    )
    method = draw(st.sampled_from(METHODS) | st.sampled_from(METHODS) | texts)
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if shape == "params":
        message["params"] = draw(params_with_a_breaker(method))
    elif shape == "params not an object":
        message["params"] = draw(not_objects)
    elif shape == "envelope":
        message["params"] = draw(params_with_a_breaker(method))
        broken = draw(st.sampled_from(["jsonrpc", "method"]))
        if draw(st.booleans()):
            del message[broken]
        elif broken == "jsonrpc":
            message[broken] = draw(st.sampled_from(["1.0", "2", "2.0 ", "", 2.0, 2, None, ["2.0"]]))
        else:
            message[broken] = draw(non_strings)
    else:
        return draw(not_objects), "none"
    kinds = ["int", "int", "str", "notification", "null", "float", "bool", "list", "object"]
    return message, draw(st.sampled_from(kinds))


@cache
def hypothesis_lines() -> list[bytes]:
    """Lines from the strategies, drawn reproducibly (a fixed seed); each batch's messages are
    numbered so every reply can be matched to its line."""
    batches: list[list[tuple[Any, str]]] = []

    @seed(SEED)
    @settings(
        max_examples=HYPOTHESIS_BATCHES,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.lists(messages(), min_size=5, max_size=20))
    def collect(batch: list[tuple[Any, str]]) -> None:
        batches.append(batch)

    collect()
    lines = []
    for n, (message, id_kind) in enumerate(m for batch in batches for m in batch):
        if isinstance(message, dict):
            ids = {
                "int": n,
                "str": f"m{n}",
                "null": None,
                "float": n + 0.5,
                "bool": True,
                "list": [n],
                "object": {"n": n},
            }
            if id_kind in ids:
                message = {**message, "id": ids[id_kind]}
        lines.append(_encode(message, ascii_only=n % 3 != 0))
    return lines


def _encode(message: Any, *, ascii_only: bool) -> bytes:
    try:
        text = json.dumps(message, ensure_ascii=ascii_only)
    except RecursionError:
        text = '{"deep": ' + "[" * 50_000 + "]" * 50_000 + "}"
    # A lone surrogate written raw is invalid UTF-8: exactly what a careless client sends.
    return text.encode("utf-8", "surrogatepass") + b"\n"


# -- seeded raw bytes ---------------------------------------------------------------------------

TEMPLATES = [
    b'{"jsonrpc":"2.0","id":1,"method":"spend.get","params":{"request_id":"req_x"}}',
    b'{"jsonrpc":"2.0","id":"w","method":"spend.wait","params":{"request_id":"r","timeout_s":0}}',
    b'{"jsonrpc":"2.0","id":2,"method":"spend.cancel","params":{"request_id":"req_nobody"}}',
    b'{"jsonrpc":"2.0","id":3,"method":"spend.submit","params":{"agent":"a b","kind":"steal",'
    b'"inputs":[],"purpose":"","endpoint_id":"","surprise":1}}',
    b'{"jsonrpc":"2.0","id":4,"method":"approvals.approve","params":{"request_id":"req_x"}}',
    b'{"jsonrpc":"2.0","id":5,"method":"approvals.list","params":{"view":"all","limit":0}}',
    b'{"jsonrpc":"2.0","id":6,"method":"console.hello","params":{"token":"guess","x":1}}',
    b'{"jsonrpc":"2.0","method":"spend.get","params":{"request_id":"req_x"}}',
    b'[{"jsonrpc":"2.0","id":7,"method":"console.hello"}]',
]
WRONG_TYPES: list[Any] = [
    None,
    True,
    0,
    -1,
    2**64,
    1.5,
    1e308,
    "",
    "\x00",
    "\u202e\u200b",
    "x" * 5000,
    [],
    [None],
    {},
    {"$gt": ""},
    [[[[[[]]]]]],
    "NaN",
    "-0.000001",
    "1e999",
]
INVALID_UTF8 = [
    b"\xff",
    b"\xfe\xff",
    b"\xc0\xaf",
    b"\xe0\x80\xaf",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xe2\x82",
    b"\x80",
    b"\xef\xbb\xbf",
]
JSON_TRAPS = [
    b"\\ud800",
    b"\\udfff",
    b"\\u0000",
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"1e999",
    b"-0",
    b"9" * 5000,
    b"\x00",
    b"\r",
    b'"',
    b"\\",
    b"{",
    b"]",
    b",",
    b"null",
]


@cache
def raw_lines(count: int, max_line_bytes: int, seed: int = SEED) -> list[bytes]:
    rng = random.Random(seed)

    def mutate(line: bytearray) -> bytearray:
        kind = rng.randrange(10)
        at = rng.randrange(len(line) + 1)
        if kind == 0:
            for _ in range(rng.randint(1, 4)):
                if line:
                    line[rng.randrange(len(line))] = rng.randrange(256)
        elif kind == 1:
            line[at:at] = rng.choice(INVALID_UTF8)
        elif kind == 2:
            line[at:at] = rng.choice(JSON_TRAPS)
        elif kind == 3:
            del line[at:]
        elif kind == 4:
            end = rng.randrange(at, len(line) + 1)
            line[at:at] = line[at:end]
        elif kind == 5:
            depth = rng.choice([10, 65, 65, 200, 900, 900, 1500])
            opener = rng.choice([b"[", b'{"a":'])
            closer = b"]" if opener == b"[" else b"}"
            line = bytearray(opener * depth + line + closer * depth)
        elif kind == 6:
            line = bytearray(line.decode("latin-1").encode(rng.choice(["utf-16", "utf-32"])))
        elif kind == 7:
            line = bytearray(rng.randbytes(rng.randint(0, 200)))
        elif kind == 8:
            line[at:at] = b'"' + bytes(rng.choice(b"\x1b\x07\x08\x7f") for _ in range(5)) + b'"'
        else:
            line[at:at] = rng.choice([b" ", b"\t", b"\x0b", b"\x0c", b"\r"]) * rng.randint(1, 9)
        return line

    def retype(template: bytes) -> bytearray:
        """The template with one param, or the params, of a type no method takes there."""
        message = json.loads(template)
        if not isinstance(message, dict) or not isinstance(message.get("params"), dict):
            return bytearray(template)
        value = rng.choice(WRONG_TYPES)
        if message["method"] == "console.hello":
            message["params"]["~"] = value  # empty params would make a valid hello
        elif rng.random() < 0.2:
            message["params"] = value
        else:
            message["params"][rng.choice([*message["params"], "~"])] = value
        return bytearray(json.dumps(message, ensure_ascii=rng.random() < 0.5).encode())

    lines = []
    for n in range(count):
        if n % 2000 == 1999:  # an oversized line now and then
            size = max_line_bytes + rng.choice([1, 100, 70_000])
            line = bytearray(b'{"jsonrpc":"2.0","id":1,"method":"x","p":"' + b"z" * size + b'"}')
        elif n % 4 == 0:
            line = retype(rng.choice(TEMPLATES))
            if rng.random() < 0.3:
                line = mutate(line)
        else:
            line = bytearray(rng.choice(TEMPLATES))
            for _ in range(rng.choice([1, 1, 1, 2, 3])):
                line = mutate(line)
        lines.append(bytes(line).replace(b"\n", b" ") + b"\n")
    return lines


# -- the tests ----------------------------------------------------------------------------------


async def test_structured_garbage_from_hypothesis(runtime):
    lines = hypothesis_lines()
    await timed("hypothesis", fuzz(runtime, lines), len(lines))


async def test_raw_bytes_from_a_fixed_seed(runtime):
    lines = raw_lines(RAW_LINES, runtime.socket.limits.max_line_bytes)
    await timed("raw", fuzz(runtime, lines), len(lines))


async def timed(name: str, work: Any, count: int) -> None:
    """Run `work`, then print the figures (seen with -s): wall and CPU time, the test's process
    being both the broker and its clients."""
    wall, cpu = time.perf_counter(), time.process_time()
    await work
    print(
        f"\n{count:,} {name} lines: {time.perf_counter() - wall:.1f} s wall,"
        f" {time.process_time() - cpu:.1f} s CPU"
    )


def test_the_fuzz_covers_what_it_claims():
    """At least 100,000 lines in all, and plenty of each kind of trouble among them."""
    everything = hypothesis_lines() + raw_lines(RAW_LINES, 256 * 1024)
    assert len(everything) >= 100_000
    kinds = Counter(kind for line in everything for kind in troubles(line))
    assert kinds["oversized"] >= 40
    assert kinds["not UTF-8"] >= 5000
    assert kinds["not JSON"] >= 20_000
    assert kinds["nested too deep"] >= 1000
    assert kinds["lone surrogate"] >= 200
    assert kinds["NaN or Infinity"] >= 500
    assert kinds["not an object"] >= 1000
    assert kinds["bad envelope"] >= 1000
    assert kinds["params not an object"] >= 1000
    assert kinds["unknown method"] >= 1000
    assert kinds["wrongly typed params"] >= 5000
    assert kinds["notification"] >= 500


def troubles(line: bytes) -> list[str]:
    """What is wrong with a line, as the socket would find it."""
    found = []
    if len(line) > 256 * 1024:
        return ["oversized"]
    if re.search(rb"NaN|Infinity", line):
        found.append("NaN or Infinity")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return [*found, "not UTF-8"]
    try:
        message = json.loads(text)
    except RecursionError:
        return [*found, "nested too deep"]
    except ValueError:
        return [*found, "not JSON"]
    if _too_deep_or_not_unicode(message, max_depth=10**9):
        return [*found, "lone surrogate"]
    if _too_deep_or_not_unicode(message, max_depth=64):
        return [*found, "nested too deep"]
    if not isinstance(message, dict):
        return [*found, "not an object"]
    method, params = message.get("method"), message.get("params", {})
    if message.get("jsonrpc") != "2.0" or not isinstance(method, str) or set(message) - ENVELOPE:
        found.append("bad envelope")
    elif "id" not in message:
        found.append("notification")
    elif method not in FIELDS:
        found.append("unknown method")
    elif not isinstance(params, dict):
        found.append("params not an object")
    elif any(not isinstance(v, type(PLAUSIBLE.get(k, v))) for k, v in params.items()):
        found.append("wrongly typed params")
    return found
