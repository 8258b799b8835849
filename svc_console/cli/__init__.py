"""The command line: one entry point, `svc-console`, a module per command group.

Imports are lazy (inside each command) so `--help` and `agent submit` start fast.
"""

from svc_console.cli.entry import main

__all__ = ["main"]
