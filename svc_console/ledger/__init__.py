"""The SQLite ledger: every request, decision and execution, and a hash-chained event log."""

from svc_console.ledger.engine import LedgerLocked
from svc_console.ledger.store import Ledger, PastLifetime

__all__ = ["Ledger", "LedgerLocked", "PastLifetime"]
