"""The sign-in of a console that runs the broker itself, once operator accounts exist.

Without accounts this console decides as `[operator] name` of settings.toml, asking nothing (or
only the passphrase): it is the owner's own terminal. With accounts, every decision must name an
operator who proved it with their token, here as over the operator socket. So the console asks,
once at start, for the operator's name (`[operator] name` filled in) and token, checks them
against the accounts the broker pinned at its start (the same check the operator socket makes),
and from then on its decisions name that operator. The sign-in replaces the passphrase, as it
does for an attached console (`tui/attached/sign_in.py`, whose dialog this uses).
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

# What a wrong try leaves in the audit chain. Never the name typed: a token pasted into the
# name's field by mistake would be kept in the ledger.
REFUSED = "sign-in at the console: unknown operator or wrong token"


class EmbeddedSignIn:
    """What `SignInScreen` asks of a sign-in, for the embedded broker's accounts."""

    explain = (
        "This console has operator accounts: its decisions name who made them. Type your"
        " operator name and token (svc-console operators add printed it); escape quits."
    )

    def __init__(self, runtime: Any):
        self.runtime = runtime  # started: its `operators` are the pinned accounts

    def needed(self) -> bool:
        """Whether to ask. When so, the console decides as no one until someone signs in: the
        setting's name, which the broker took at its start, proves nothing by itself."""
        operators = self.runtime.operators
        if operators is None or not operators.any():
            return False
        self.runtime.broker.decisions.console_operator = None
        return True

    @property
    def default_name(self) -> str:
        """`[operator] name` of settings.toml: who the console's owner decides as."""
        return self.runtime.console_operator or ""

    def verify(self, name: str, token: str) -> bool:
        """Whether `token` is the active account `name`'s, and if so, decide as it. A slow hash:
        called off the event loop."""
        try:
            account = self.runtime.operators.authenticate(name, token)
        except Exception:  # an accounts file that cannot be read: nobody signs in
            log.exception("the operator accounts could not be read")
            return False
        if account is None:
            return False
        # The screens open only after this, so no decision is made before it.
        self.runtime.console_operator = account.name  # kept if the runtime starts again
        self.runtime.broker.decisions.console_operator = account.name
        return True

    def refused(self) -> None:
        """A wrong try, kept in the audit chain with this process's evidence (on the loop)."""
        from svc_console.broker.deciders import Decider

        try:
            self.runtime.broker.refuse(None, REFUSED, Decider.this_process())
        except Exception:  # the count on the screen still says it; the log says why not here
            log.exception("a refused sign-in could not be recorded")
