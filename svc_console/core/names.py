"""The names agents and operators go by: what a name may be, checked the same way everywhere (and
importable without the models, by the commands that only read a settings or accounts file)."""

from __future__ import annotations

import re

# \Z, not $: "$" also matches before a final newline, which would let "bot\n" through.
AGENT_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._\-]{0,63}\Z")
AGENT_NAME_RULE = "must be 1-64 letters, digits, '.', '_' or '-', starting with one"
