"""The slow hash of what only an operator knows: scrypt at 2**15 (a fifth of a second and 32 MiB
a check) in the console's own processes; any hash checks against its own cost, written in it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from svc_console.config import slow_hash


def test_the_console_hashes_at_its_full_cost():
    """In a process of its own: the suite's conftest lowers the cost of the tests' hashes."""
    code = "from svc_console.config import slow_hash; print(slow_hash.encode('pw'))"
    made = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    stored = made.stdout.strip()
    assert stored.startswith("scrypt$32768$8$1$")
    assert slow_hash.matches(stored, "pw") and not slow_hash.matches(stored, "pW")


def test_a_hash_is_checked_at_the_cost_written_in_it():
    cheap = slow_hash.encode("pw")
    assert cheap.split("$")[1] == str(slow_hash.N)
    assert slow_hash.matches(cheap, "pw") and not slow_hash.matches(cheap, "")


@pytest.mark.parametrize(
    "stored",
    ["", "bcrypt$1$2$3$c2FsdA==$ZGlnZXN0", "scrypt$x$8$1$c2FsdA==$ZGlnZXN0", "scrypt$16$8$1$!$!"],
)
def test_what_is_no_such_hash_is_refused(stored: str):
    with pytest.raises(ValueError):
        slow_hash.matches(stored, "pw")
