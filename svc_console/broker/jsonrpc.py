"""JSON-RPC 2.0 as the approval socket speaks it: one object per line, strict framing, the
envelope, the error codes and the reply shapes.

A line is read as strict UTF-8 JSON (no NaN or Infinity, no lone surrogate escapes, nesting
bounded) before any method sees it. Every line gets one reply, except a well-formed notification,
which gets none. Knows nothing of sockets or of what the methods do.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from pydantic import ValidationError

from svc_console.broker import errors

log = logging.getLogger(__name__)
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INTERNAL_ERROR = -32700, -32600, -32601, -32603
LINE_TIMEOUT = -32008  # a half line that never ended; the connection is then closed
ENVELOPE = frozenset({"jsonrpc", "id", "method", "params"})

Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


def rpc_error(code: int, reason: str, message: str) -> errors.BrokerError:
    error = errors.BrokerError(message)
    error.code, error.reason = code, reason
    return error


def internal_error() -> errors.BrokerError:
    return rpc_error(INTERNAL_ERROR, "internal", "internal error; see the log")


def error_reply(request_id: Any, exc: errors.BrokerError) -> dict[str, Any]:
    data = {"reason": exc.reason, **exc.data}
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": exc.code, "message": exc.message, "data": data},
    }


def result_reply(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


async def answer(line: bytes, max_depth: int, call: Call) -> dict[str, Any] | None:
    """The reply to one line (None for a notification): `call(method, params)` does the work."""
    message = parse(line, max_depth)
    if isinstance(message, errors.BrokerError):
        return error_reply(None, message)
    envelope = _envelope(message)
    if isinstance(envelope, dict):
        return envelope
    request_id, method, params = envelope
    failure: errors.BrokerError | None = None
    if not isinstance(params, dict):
        failure = errors.InvalidParams("params must be an object")
    else:
        try:
            result = await call(method, params)
        except ValidationError as exc:
            failure = errors.InvalidParams(explain(exc))
        except errors.BrokerError as exc:
            failure = exc
        except Exception:
            log.exception("socket method %s failed", method[:60])
            failure = internal_error()
    if "id" not in message:  # a notification gets no answer, not even an error
        return None
    if failure is not None:
        return error_reply(request_id, failure)
    return result_reply(request_id, result)


def _envelope(message: Any) -> tuple[Any, str, Any] | dict[str, Any]:
    """(id, method, params) of a well-formed request, or the error reply to a malformed one."""
    if not isinstance(message, dict):
        return _invalid(None, "send one JSON-RPC object per line")
    request_id = message.get("id")
    if not isinstance(request_id, str | int | None) or isinstance(request_id, bool):
        return _invalid(None, "id must be a string or number")
    method = message.get("method")
    if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
        return _invalid(request_id, 'needs "jsonrpc": "2.0" and a method')
    if not ENVELOPE.issuperset(message):
        # A misspelt "params" would otherwise be dropped and the call made without them.
        unknown = sorted(set(message) - ENVELOPE)[0]
        return _invalid(
            request_id,
            f"unknown member {unknown[:40]!r}: a request has jsonrpc, id, method, params",
        )
    return request_id, method, message.get("params", {})


def _invalid(request_id: Any, message: str) -> dict[str, Any]:
    return error_reply(request_id, rpc_error(INVALID_REQUEST, "invalid_request", message))


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# A \uD800-\uDFFF escape: the only way a surrogate gets into text decoded as strict UTF-8.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def parse(line: bytes, max_depth: int) -> Any:
    """The line's JSON value, or the error to answer: strict UTF-8, standard JSON, text that is
    valid Unicode (what the ledger and every reply must be able to encode), bounded nesting."""
    try:
        text = line.decode("utf-8")
        message = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        return errors.TooLarge(f"a message may nest at most {max_depth} levels")
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return rpc_error(PARSE_ERROR, "parse_error", "not valid UTF-8 JSON")
    # Cheap tests first: most lines hold no surrogate escape and few brackets.
    may_nest = text.count("[") + text.count("{") > max_depth
    if may_nest or _SURROGATE_ESCAPE.search(text):
        problem = _shape_problem(message, max_depth)
        if problem == "depth":
            return errors.TooLarge(f"a message may nest at most {max_depth} levels")
        if problem == "surrogate":
            return rpc_error(PARSE_ERROR, "parse_error", "not valid UTF-8 JSON: a lone surrogate")
    return message


def _shape_problem(value: Any, max_depth: int) -> str | None:
    """'depth' or 'surrogate' if the value nests too deep or holds a lone surrogate (walked
    without recursion, so no message can exhaust the stack)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not _is_unicode(item):
                return "surrogate"
        elif isinstance(item, dict | list):
            if depth > max_depth:
                return "depth"
            if isinstance(item, dict):
                stack.extend((key, depth) for key in item)
                stack.extend((child, depth + 1) for child in item.values())
            else:
                stack.extend((child, depth + 1) for child in item)
    return None


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# Dates and dataclasses go to `default` (str), as json sends them; orjson would write its own.
_AS_JSON = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str)
_ESCAPED = json.JSONEncoder(separators=(",", ":"), default=str)


def encode(reply: dict[str, Any]) -> bytes:
    """One reply line. orjson writes one in a ninth of json's time (every answer of the socket);
    what it refuses (an integer past 64 bits, a key that is not text, a lone surrogate) json
    writes, escaping the surrogate."""
    try:
        return orjson.dumps(reply, default=str, option=_AS_JSON) + b"\n"
    except TypeError:  # orjson's JSONEncodeError
        pass
    try:
        return _COMPACT.encode(reply).encode() + b"\n"
    except UnicodeEncodeError:  # text from elsewhere with a lone surrogate: escape it
        return _ESCAPED.encode(reply).encode() + b"\n"


def explain(exc: ValidationError) -> str:
    """A validation error in one line: where, and what is wrong (at most five problems)."""
    parts = []
    for problem in exc.errors()[:5]:
        where = ".".join(str(p) for p in problem["loc"]) or "params"
        message = problem["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return "; ".join(parts)
