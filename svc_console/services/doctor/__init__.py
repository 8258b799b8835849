"""`svc-console doctor`: the set-up checked, each finding with its fix.

The checks read (never write) the home, settings, policies, ledger and the configured service;
`examine` runs them all and a check that cannot run is itself a finding, never a traceback.
"""

from __future__ import annotations

from pathlib import Path

from svc_console.config.paths import Paths
from svc_console.services.doctor.findings import Finding


def examine(paths: Paths, *, anchor: Path | None = None, timeout_s: float = 5.0) -> list[Finding]:
    from svc_console.services.doctor import ledger_checks, local_checks, remote_checks

    found: list[Finding] = []
    found += local_checks.examine(paths)
    found += ledger_checks.examine(paths, anchor)
    found += remote_checks.examine(paths, timeout_s)
    return found
