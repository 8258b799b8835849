"""One signer: market/signer.py is the only module of the console that makes the wallet proxy pay
(`approved: true`), and once the console has started it alone holds the wallet key. (That it alone
imports the signing libraries and reads the key's file is import-linter's, in `make lint`.)"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from helpers import parse_sources

import svc_console
from svc_console.broker.secret_refusal import OwnSecrets
from svc_console.runtime import Runtime

PACKAGE = Path(svc_console.__file__).parent
WALLET_KEY = "0x" + "8f2a5594" * 8


def approving_bodies(tree: ast.AST) -> Iterator[int]:
    """Lines that build a body with `approved` set to true: a dict display or dict(...)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                named = isinstance(key, ast.Constant) and key.value == "approved"
                if named and isinstance(value, ast.Constant) and value.value is True:
                    yield node.lineno
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "dict":
            for keyword in node.keywords:
                if keyword.arg == "approved" and getattr(keyword.value, "value", None) is True:
                    yield node.lineno


def test_only_the_signer_tells_the_wallet_proxy_to_pay():
    found = {}
    # The marketplace's stand-in (sandbox) reads such bodies; it sends none.
    paths = [p for p in PACKAGE.rglob("*.py") if "sandbox" not in p.relative_to(PACKAGE).parts]
    for path, tree in parse_sources(paths):
        lines = list(approving_bodies(tree))
        if lines:
            found[str(path.relative_to(PACKAGE))] = lines
    assert list(found) == ["market/signer.py"], found


def _reachable(root: Any, skip: Any) -> Iterator[Any]:
    """Every value reachable from `root` through attributes and containers, but `skip`."""
    seen, stack = {id(skip)}, [root]
    while stack:
        value = stack.pop()
        if id(value) in seen or isinstance(value, type):
            continue
        seen.add(id(value))
        yield value
        if isinstance(value, dict):
            stack.extend([*value.keys(), *value.values()])
        elif isinstance(value, list | tuple | set | frozenset):
            stack.extend(value)
        elif hasattr(value, "__dict__") and type(value).__module__.startswith("svc_console"):
            stack.extend(vars(value).values())


async def test_after_start_the_wallet_key_is_held_by_the_signer_alone(
    make_runtime: Any, keep_started: Any
):
    runtime: Runtime = make_runtime()
    runtime.payer_key = WALLET_KEY
    await keep_started(runtime)
    assert runtime.payer_key is None  # handed over
    assert runtime.market is not None
    signer = runtime.market.signer
    core = WALLET_KEY.removeprefix("0x")
    holding = [
        value
        for value in _reachable(runtime, skip=signer._account)
        if isinstance(value, str) and core in value.lower()
    ]
    assert holding == []
    # What the broker knows of it, to refuse it in a submission, is the signer's pieces of its
    # spellings, none of which holds it whole.
    assert OwnSecrets((), signer.key_forms).found(WALLET_KEY.upper())
    assert signer.address is not None
