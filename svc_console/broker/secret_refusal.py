"""A submission holding a secret is refused at the socket, before anything is recorded.

The console pays providers on an agent's behalf; it never forwards credentials to them. An
sk_live_ key, a bearer token or one of this console's own secrets in a request's inputs or purpose
would be written to the ledger as soon as the request was received (invariant 5: secrets are never
stored there), then shown to the operator and perhaps sent upstream. So the whole submission is
refused with an invalid-params error that names the field and the kind of secret, never the value,
and nothing of it is written: no request, no event, no log line with the value.

The console's own secrets are every one it holds: the API key, the wallet token, the account
wallet's EVM and Solana keys, the web console's token, and (known by their marks, since only their
hashes are kept) agents' and operators' tokens. Each is looked for plain, in hex, base64, base64url
and URL-encoded, whole or in pieces: half of one in a field, or one split across fields in the
order they were sent (`core.secrets_scan.own_secret_forms`, computed once per set of secrets). One
RE2 search over the submission's strings finds any of them in time linear in its length.

Only what cannot be anything else is refused by its shape. Any 64 hex digits may be an EVM private
key, but are as often a transaction hash or a digest that a crypto-data provider needs; 88 base58
letters are as often a Solana transaction signature. Those pass, flagged high by the risk
assessment for the operator (and a policy's `never_send`) to decide, unless they are this
console's own key. E-mail addresses are personal data, not secrets: they pass, flagged, and the
policy decides.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Collection, Mapping
from typing import Any
from urllib.parse import unquote

import re2

from svc_console.broker import errors
from svc_console.broker.params import SubmitParams
from svc_console.core import secrets_scan
from svc_console.core.secrets_scan import SecretForms

log = logging.getLogger(__name__)

# Every field of a submission the ledger records. The idempotency key too: a hex digest is a
# common key and passes for what it is, but not one of the console's own secrets.
SCANNED = ("inputs", "purpose", "endpoint_id", "dataset_id", "idempotency_key", "agent")

# Kinds no ordinary value takes: refused wherever they appear.
REFUSED_KINDS = ("api_key", "bearer_token")
# URL encoding is undone this many times over (an encoded base64 text, encoded again).
UNQUOTE_ROUNDS = 3


class OwnSecrets:
    """The console's own secrets as one search, built once per set of secrets: `secrets` in
    plain, and the wallet key by the forms its signer made of it (`key_forms`)."""

    def __init__(self, secrets: tuple[str, ...], key_forms: SecretForms | None = None):
        forms = secrets_scan.own_secret_forms(secrets)
        if key_forms is not None:
            forms = forms | key_forms
        folded = "|".join(re.escape(form) for form in sorted(forms.folded))
        exact = [re.escape(form) for form in sorted(forms.exact)]
        options = re2.Options()
        options.log_errors = False
        self._search = re2.compile("|".join([f"(?i:{folded})", *exact]), options).search

    def found(self, text: str) -> bool:
        return self._search(text) is not None

    def where(self, fields: Mapping[str, Any]) -> str | None:
        """Where in `fields` one of the secrets is, or None: a field path, or the two ends of
        a secret split across fields (`inputs.a (with inputs.b)`). The strings are searched as
        one text in the order sent, without the keys and with them (a secret split between two
        values, or between a key and its value); then again with URL encoding undone."""
        parts = [
            (where, text)
            for name, value in fields.items()
            for where, text in secrets_scan.every_string(value, name)
        ]
        for rounds in range(UNQUOTE_ROUNDS + 1):
            values = [part for part in parts if not part[0].startswith(secrets_scan.A_KEY_IN)]
            for chosen in (values, parts):
                found = self._in(chosen)
                if found is not None:
                    return found
            if rounds == UNQUOTE_ROUNDS or not any("%" in text for _where, text in parts):
                return None
            parts = [(where, unquote(text)) for where, text in parts]
        return None

    def _in(self, parts: list[tuple[str, str]]) -> str | None:
        starts, position = [], 0
        for _where, text in parts:
            starts.append(position)
            position += len(text)
        found = self._search("".join(text for _where, text in parts))
        if found is None:
            return None
        return self._named(parts, starts, found.start(), found.end())

    def _named(self, parts: list[tuple[str, str]], starts: list[int], start: int, end: int) -> str:
        held = [
            where
            for (where, text), at in zip(parts, starts, strict=True)
            if at < end and at + len(text) > start
        ] or [parts[-1][0]]
        where = held[0] if len(held) == 1 else f"{held[0]} (with {held[-1]})"
        # A path names keys: one may be a piece of the secret. Then only the field is named.
        return where.partition(".")[0].partition("[")[0] if self.found(where) else where


@functools.lru_cache(maxsize=8)
def own_secrets(secrets: tuple[str, ...], key_forms: SecretForms | None = None) -> OwnSecrets:
    """The search for this set of secrets, made at its first use and kept."""
    return OwnSecrets(secrets, key_forms)


def refuse_secrets(
    params: SubmitParams, own: Collection[str] = (), key_forms: SecretForms | None = None
) -> None:
    """Raise `SecretInParams` if a field holds an sk_live_ key, a bearer token or one of the
    console's own secrets (`own`: the API key, wallet token, Solana key and web token;
    `key_forms`: the wallet key as its signer spelt it), in any spelling."""
    fields = {name: getattr(params, name) for name in SCANNED}
    refuse_secrets_in(fields, own, params.agent, key_forms)


def refuse_secrets_in(
    fields: Mapping[str, Any],
    own: Collection[str],
    who: str | None,
    key_forms: SecretForms | None = None,
) -> None:
    """`refuse_secrets` for any fields an agent sends on (a read's arguments, say)."""
    search = own_secrets(tuple(own), key_forms)
    for name, value in fields.items():
        found = secrets_scan.first_secret(value, name, kinds=REFUSED_KINDS)
        if found is not None:
            _refuse(search, who, *found)
    where = search.where(fields)
    if where is not None:
        _refuse(search, who, where, secrets_scan.OWN_KEY)


def _refuse(search: OwnSecrets, who: str | None, where: str, kind: str) -> None:
    looks_like = secrets_scan.describe(kind)
    if who is not None and (search.found(who) or secrets_scan.secret_kind(who) is not None):
        who = "an agent whose name holds a secret"  # the name is the secret: not logged
    # The operator's only trace of the attempt (nothing is recorded): who, where, what kind.
    log.warning("refused a submission from %s: %s %s", who, where, looks_like)
    raise errors.SecretInParams(
        f"{where} {looks_like}: the console does not send secrets to providers",
        field=where,
        kind=kind,
    )
