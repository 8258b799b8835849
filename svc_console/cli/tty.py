"""Secrets typed on the controlling terminal, never read from stdin, an argument or the
environment: a script (or an agent) piping text in is not someone at a terminal."""

from __future__ import annotations

import getpass
import os

from svc_console.cli.errors import EXIT_USAGE, CommandError


def read_secret(prompt: str) -> str:
    try:
        fd = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY)
    except OSError:
        raise CommandError(
            "the operator passphrase must be typed on a terminal, and none is attached",
            EXIT_USAGE,
        ) from None
    with open(fd, "w", encoding="utf-8") as terminal:
        # getpass reads /dev/tty itself, echo off; the stream is where the prompt goes.
        return getpass.getpass(prompt, stream=terminal)
