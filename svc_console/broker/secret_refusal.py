"""A submission holding a secret is refused at the socket, before anything is recorded.

The console pays providers on an agent's behalf; it never forwards an agent's credentials to
them. A private key, an sk_live_ key or a bearer token in a request's inputs or purpose would be
written to the ledger as soon as the request was received (invariant 5: secrets are never stored
there), then shown to the operator and perhaps sent upstream. So the whole submission is refused
with an invalid-params error that names the field and the kind of secret, never the value, and
nothing of it is written: no request, no event, no log line with the value.

E-mail addresses are personal data, not secrets: they pass, flagged by the risk assessment, and
the policy (`never_send: [emails]`) decides.
"""

from __future__ import annotations

import logging

from svc_console.broker import errors
from svc_console.broker.params import SubmitParams
from svc_console.core import secrets_scan

log = logging.getLogger(__name__)

# The free text of a submission that the ledger records with the request. Not the idempotency
# key: a hex digest is a common key and would pass for an EVM private key.
SCANNED = ("inputs", "purpose", "endpoint_id", "dataset_id")


def refuse_secrets(params: SubmitParams) -> None:
    """Raise `SecretInParams` if a scanned field holds a secret-looking string."""
    for name in SCANNED:
        found = secrets_scan.first_secret(getattr(params, name), name)
        if found is None:
            continue
        where, kind = found
        looks_like = secrets_scan.PATTERNS[kind][1]
        # The operator's only trace of the attempt (nothing is recorded): who, where, what kind.
        log.warning("refused a submission from %s: %s %s", params.agent, where, looks_like)
        raise errors.SecretInParams(
            f"{where} {looks_like}: the console does not send secrets to providers",
            field=where,
            kind=kind,
        )
