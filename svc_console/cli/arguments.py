"""The command line's argument types, in one place, and its parser: an argument out of range is
refused in one line with exit 2, whatever the command.

Numbers are written in ASCII digits only: Python's own `int` and `float` also take "1_000",
" 80" and full-width digits, which no one means on a command line.
"""

from __future__ import annotations

import argparse
import re
import sys
from decimal import Decimal
from typing import NoReturn

from svc_console.cli.errors import EXIT_USAGE

MOST_PORT = 65_535
MOST_UID = 2**32 - 2  # uid_t; 2**32 - 1 is (uid_t) -1, "no uid"
MOST_TIMEOUT_S = 86_400.0  # a day
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")

_WHOLE = re.compile(r"[0-9]{1,20}\Z")
_SECONDS = re.compile(r"[0-9]{1,9}(\.[0-9]{1,9})?\Z")


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors are one line (argparse prints the usage first)."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def _whole(text: str, what: str) -> int:
    if not _WHOLE.match(text):
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not {what}")
    return int(text)


def port(text: str) -> int:
    """A TCP port, 0 for any free one."""
    number = _whole(text, "a port (0 to 65535)")
    if number > MOST_PORT:
        raise argparse.ArgumentTypeError(f"{number} is not a port (0 to 65535)")
    return number


def uid(text: str) -> int:
    """A user id."""
    number = _whole(text, f"a user id (0 to {MOST_UID})")
    if number > MOST_UID:
        raise argparse.ArgumentTypeError(f"{number} is not a user id (0 to {MOST_UID})")
    return number


def timeout(text: str) -> float:
    """Seconds to wait: above 0, at most a day."""
    rule = f"must be above 0 and at most {MOST_TIMEOUT_S:g} seconds"
    if not _SECONDS.match(text):
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: a timeout {rule}")
    seconds = float(text)
    if not 0 < seconds <= MOST_TIMEOUT_S:
        raise argparse.ArgumentTypeError(f"{text}: a timeout {rule}")
    return seconds


def usdc(text: str) -> Decimal:
    """An amount of USDC as the socket takes it: a plain decimal, at most 6 decimals."""
    from svc_console.core.money import parse_plain_usdc

    try:
        return parse_plain_usdc(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} {exc}") from None


def loopback_address(text: str) -> tuple[str, int]:
    """A loopback HOST:PORT."""
    host, _, number = text.rpartition(":")
    if host not in LOOPBACK_HOSTS:
        raise argparse.ArgumentTypeError(
            f"{text[:60]!r} is not a loopback HOST:PORT, such as 127.0.0.1:8765"
        )
    return host.strip("[]"), port(number)
