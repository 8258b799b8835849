"""The sandbox's e-mail: every message it would send (one-time codes) is written as one RFC 822
file (`.eml`) into a local folder, `$SVC_CONSOLE_HOME/sandbox/outbox/`, and goes nowhere else.

Each file is owner-only (0600, folder 0700) and written atomically, so a reader never sees half a
message. The folder holds codes that sign in: it must never be shared, logged or printed.
"""

from __future__ import annotations

import itertools
import re
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import format_datetime, make_msgid
from pathlib import Path

from svc_console.core.private_files import ensure_private_dir, write_private

SENDER = '"svc-console sandbox" <no-reply@sandbox.invalid>'
# The domain is reserved (RFC 2606): a message that escaped would still go nowhere.
MESSAGE_DOMAIN = "sandbox.invalid"
_CODE = re.compile(r"\b(\d{6})\b")


@dataclass(frozen=True)
class Delivered:
    """Where one message went: the file, and the headers a test or the console looks up."""

    path: Path
    to: str
    subject: str
    purpose: str


class Outbox:
    """A folder of `.eml` files standing in for an SMTP server."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._lock = threading.Lock()
        self._sequence = itertools.count(1)

    def deliver(
        self, *, to: str, subject: str, body: str, purpose: str, sent_at: float
    ) -> Delivered:
        """Writes one message; `purpose` goes into an `X-Sandbox-Purpose` header."""
        message = EmailMessage()
        message["From"] = SENDER
        message["To"] = to
        message["Subject"] = subject
        message["Date"] = format_datetime(datetime.fromtimestamp(sent_at, UTC))
        message["Message-ID"] = make_msgid(domain=MESSAGE_DOMAIN)
        message["X-Sandbox"] = "true: no e-mail was sent, this file is the delivery"
        message["X-Sandbox-Purpose"] = purpose
        message.set_content(body)
        with self._lock:
            ensure_private_dir(self.folder.parent)
            ensure_private_dir(self.folder)
            # Names sort in delivery order: milliseconds, then a per-process sequence number.
            name = f"{int(sent_at * 1000):013d}-{next(self._sequence):06d}-{purpose}.eml"
            path = self.folder / name
            write_private(path, message.as_string(policy=policy.SMTP.clone(linesep="\n")))
        return Delivered(path=path, to=to, subject=subject, purpose=purpose)

    def messages(self) -> list[Path]:
        """The delivered files, oldest first."""
        if not self.folder.is_dir():
            return []
        return sorted(self.folder.glob("*.eml"))

    @staticmethod
    def read(path: Path) -> EmailMessage:
        with open(path, "rb") as handle:
            message = BytesParser(policy=policy.default).parse(handle)
        assert isinstance(message, EmailMessage)
        return message

    def latest(self, to: str, purpose: str | None = None) -> EmailMessage | None:
        """The newest message to that address (and for that purpose, when given)."""
        wanted = to.strip().lower()
        for path in reversed(self.messages()):
            message = self.read(path)
            if str(message["To"]).strip().lower() != wanted:
                continue
            if purpose is not None and message["X-Sandbox-Purpose"] != purpose:
                continue
            return message
        return None

    def latest_code(self, to: str, purpose: str | None = None) -> str | None:
        """The one-time code of the newest message to that address: what an operator would read
        in their mail and type back."""
        message = self.latest(to, purpose)
        if message is None:
            return None
        part = message.get_body(preferencelist=("plain",))
        text = part.get_content() if part is not None else ""
        found = _CODE.search(text)
        return found.group(1) if found else None
