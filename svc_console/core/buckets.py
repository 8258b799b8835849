"""Which running budget totals one approved spend counts in.

The ledger reserves and settles spend in these buckets; policy budgets read them. Both sides build
the keys here, so they cannot disagree. Totals are kept per bucket whatever the policy says, so a
policy that is changed or loaded later finds the spend already counted.
"""

from __future__ import annotations

import math

Bucket = tuple[str, str]
# A change of the running totals: (buckets, slot, delta in atomic USDC).
Change = tuple[tuple[Bucket, ...], int, int]
# Totals are kept per bucket and minute; a slot is stamped with the end of its minute, so a spend
# leaves a rolling window late, never early (a rounding may make a budget stricter, never wider).
SLOT_S = 60

SCOPES = ("agent", "provider", "domain_type", "overall")
OVERALL: Bucket = ("overall", "")


def rule_scope(rule: str, scope: str) -> str:
    """The scope of what one auto-approve rule approved (its own budgets count only that)."""
    return f"auto:{rule}/{scope}"


def buckets_for(
    agent: str, provider: str | None, domain_type: str | None, rule: str | None = None
) -> tuple[Bucket, ...]:
    """The buckets of a spend by `agent` with `provider` in `domain_type`; with `rule`, also the
    buckets of what that auto-approve rule approved."""
    keys: list[Bucket] = [("agent", agent)]
    if provider:
        keys.append(("provider", provider))
    if domain_type:
        keys.append(("domain_type", domain_type))
    keys.append(OVERALL)
    if rule is not None:
        keys += [(rule_scope(rule, scope), key) for scope, key in list(keys)]
    return tuple(keys)


def slot_of(at: float) -> int:
    """The slot a spend at `at` is counted in: the end of its minute."""
    return int(math.ceil(at / SLOT_S) * SLOT_S)
