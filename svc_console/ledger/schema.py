"""Tables of the ledger and their migrations (PRAGMA user_version counts applied steps).

Amounts are integer atomic USDC units (6 decimals). JSON columns hold the pydantic models' dumps.
"""

import sqlite_utils

SCHEMA_VERSION = 1


def _v1(db: sqlite_utils.Database) -> None:
    db["requests"].create(
        {
            "id": str,
            "agent": str,
            "kind": str,
            "endpoint_id": str,
            "dataset_id": str,
            "provider": str,
            "inputs": str,
            "purpose": str,
            "max_usdc": int,
            "idempotency_key": str,
            "state": str,
            "reason": str,
            "created_at": float,
            "updated_at": float,
            "expires_at": float,
            "endpoint": str,
            "estimate": str,
            "risk": str,
            "verdict": str,
            "skill": str,
            "funding_url": str,
        },
        pk="id",
        not_null={"agent", "kind", "inputs", "purpose", "state", "created_at", "updated_at"},
    )
    db.execute(
        "CREATE UNIQUE INDEX requests_idempotency ON requests(agent, idempotency_key)"
        " WHERE idempotency_key IS NOT NULL"
    )
    db["requests"].create_index(["state", "expires_at"])
    db["requests"].create_index(["provider"])
    db["requests"].create_index(["created_at"])
    db["decisions"].create(
        {
            "id": int,
            "request_id": str,
            "approved": int,
            "by": str,
            "at": float,
            "ceiling_usdc": int,
            "note": str,
        },
        pk="id",
        foreign_keys=[("request_id", "requests", "id")],
        not_null={"request_id", "approved", "by", "at"},
    )
    db["decisions"].create_index(["request_id"])
    db["executions"].create(
        {
            "id": int,
            "request_id": str,
            "decision_id": int,
            "attempt": int,
            "idempotency_key": str,
            "started_at": float,
            "finished_at": float,
            "status": str,
            "charged_usdc": int,
            "chain": str,
            "outcome": str,
            "error": str,
        },
        pk="id",
        foreign_keys=[("request_id", "requests", "id"), ("decision_id", "decisions", "id")],
        not_null={"request_id", "decision_id", "attempt", "idempotency_key", "started_at"},
    )
    db["executions"].create_index(["idempotency_key"], unique=True)
    db["executions"].create_index(["request_id"])
    db["events"].create(
        {
            "seq": int,
            "at": float,
            "request_id": str,
            "type": str,
            "data": str,
            "prev_hash": str,
            "hash": str,
        },
        pk="seq",
        not_null={"at", "type", "data", "prev_hash", "hash"},
    )


MIGRATIONS = [_v1]


def migrate(db: sqlite_utils.Database) -> None:
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > len(MIGRATIONS):
        raise RuntimeError(
            f"the ledger was written by a newer svc-console (schema {version}); upgrade to open it"
        )
    for step in range(version, len(MIGRATIONS)):
        with db.atomic():
            MIGRATIONS[step](db)
            db.execute(f"PRAGMA user_version = {step + 1}")
