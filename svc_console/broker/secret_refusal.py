"""A submission holding a secret is refused at the socket, before anything is recorded.

The console pays providers on an agent's behalf; it never forwards credentials to them. An
sk_live_ key, a bearer token or this console's own wallet key in a request's inputs or purpose
would be written to the ledger as soon as the request was received (invariant 5: secrets are never
stored there), then shown to the operator and perhaps sent upstream. So the whole submission is
refused with an invalid-params error that names the field and the kind of secret, never the value,
and nothing of it is written: no request, no event, no log line with the value.

Only what cannot be anything else is refused. Any 64 hex digits may be an EVM private key, but
are as often a transaction hash or a digest that a crypto-data provider needs; 88 base58 letters
are as often a Solana transaction signature. Those pass, flagged high by the risk assessment for
the operator (and a policy's `never_send`) to decide, unless they are this console's own key.
E-mail addresses are personal data, not secrets: they pass, flagged, and the policy decides.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import Any

from svc_console.broker import errors
from svc_console.broker.params import SubmitParams
from svc_console.core import secrets_scan

log = logging.getLogger(__name__)

# Every field of a submission the ledger records. The idempotency key too: a hex digest is a
# common key and passes for what it is, but not one of the console's own secrets.
SCANNED = ("inputs", "purpose", "endpoint_id", "dataset_id", "idempotency_key", "agent")


# Kinds no ordinary value takes: refused wherever they appear.
REFUSED_KINDS = ("api_key", "bearer_token")
# Every agent token starts so (config/agent_registry.py): no agent sends one upstream.
AGENT_TOKEN_MARK = "svcagent_"
# A secret shorter than this is not looked for inside text: it would match by chance.
MIN_KNOWN = 16


def refuse_secrets(params: SubmitParams, own_secrets: Collection[str] = ()) -> None:
    """Raise `SecretInParams` if a field holds an sk_live_ key, a bearer token, an agent token or
    one of `own_secrets` (the console's API key and wallet token; the wallet key by its digest,
    `secrets_scan.key_digest`: keys with or without 0x, in any case)."""
    refuse_secrets_in({name: getattr(params, name) for name in SCANNED}, own_secrets, params.agent)


def refuse_secrets_in(
    fields: Mapping[str, Any], own_secrets: Collection[str], who: str | None
) -> None:
    """`refuse_secrets` for any fields an agent sends on (a read's arguments, say)."""
    own = [
        key if key.startswith(secrets_scan.KEY_DIGEST) else key.lower().removeprefix("0x")
        for key in own_secrets
        if len(key or "") >= MIN_KNOWN
    ]
    own.append(AGENT_TOKEN_MARK)
    for name, value in fields.items():
        found = secrets_scan.first_secret(value, name, kinds=REFUSED_KINDS, known=own)
        if found is None:
            continue
        where, kind = found
        looks_like = secrets_scan.describe(kind)
        # The operator's only trace of the attempt (nothing is recorded): who, where, what kind.
        log.warning("refused a submission from %s: %s %s", who, where, looks_like)
        raise errors.SecretInParams(
            f"{where} {looks_like}: the console does not send secrets to providers",
            field=where,
            kind=kind,
        )
