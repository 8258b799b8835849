"""Secrets typed on the controlling terminal, never read from stdin, an argument or the
environment: a script (or an agent) piping text in is not someone at a terminal."""

from __future__ import annotations

import getpass

from svc_console.cli.errors import EXIT_USAGE, CommandError


def read_secret(prompt: str) -> str:
    try:
        terminal = open("/dev/tty", "r+")  # noqa: SIM115 - closed below, after getpass
    except OSError:
        raise CommandError(
            "the operator passphrase must be typed on a terminal, and none is attached",
            EXIT_USAGE,
        ) from None
    with terminal:
        # getpass reads /dev/tty itself; the stream is where the prompt goes.
        return getpass.getpass(prompt, stream=terminal)
