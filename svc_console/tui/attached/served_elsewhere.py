"""What a console attached to a running broker shows in place of a screen that needs the broker's
own process (the catalogue sync, the wallet's funding, the policy editor, the account forms,
grants): which console serves it, and what to do instead. Said plainly, rather than a screen that
looks alive and cannot act. The usage screen is served (read from the ledger); only its sync is
the broker's console's, and its `s` says so. Attached to the service (the broker as a user of its
own), the usage history is not: only the service's user reads its ledger.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from svc_console.services.service_unit import SERVICE_HOME, SERVICE_USER
from svc_console.tui.widgets.chrome import ConsoleFooter, heading

# The command line's way to each, where it has one.
INSTEAD = {
    "grants": "svc-console grants list / revoke ID",
    "wallet": "svc-console wallet fund ID",
    "policies": "svc-console policy check FILE / simulate FILE",
    "account": "svc-console login / connect",
}
# The service's files are its user's: what reads them runs as that user, in its home.
AS_SERVICE = f"sudo -u {SERVICE_USER} env SVC_CONSOLE_HOME={SERVICE_HOME} "
# Over the operator socket, as from any console; the rest as the service's user.
INSTEAD_APART = {
    "usage": AS_SERVICE + "svc-console usage",
    "grants": INSTEAD["grants"],
    "wallet": INSTEAD["wallet"],
    "policies": AS_SERVICE + "svc-console policy simulate FILE",
    "account": AS_SERVICE + "svc-console login",
}


class ServedElsewhere(Screen[None]):
    """The screen `name` (titled `title`) of an attached console: served by the broker's."""

    DEFAULT_CSS = """
    ServedElsewhere #served-elsewhere {
        padding: 2 4;
        width: 100%;
        height: 1fr;
    }
    """

    def __init__(
        self, name: str, title: str, banner: Static | None = None, *, apart: bool = False
    ) -> None:
        """`apart`: attached to the service, the broker running as a user of its own."""
        super().__init__(id=f"{name}-elsewhere")
        self.screen_name, self.title_text, self.apart = name, title, apart
        self.sub_title = title.lower()
        # The SANDBOX banner of every other screen: the attached console speaks to it too.
        self.banner = banner

    def compose(self) -> ComposeResult:
        if self.banner is not None:
            yield self.banner
        yield from heading()
        text = Text()
        if self.apart:
            text.append(f"{self.title_text} is read where the service's files are.\n\n", "bold")
            text.append(
                "This console is attached to svc-console's service, which runs as a user of its"
                " own and keeps its ledger, keys and settings where only that user reads. It shows"
                " the approval queue and decides over the operator socket; this screen needs the"
                " service's files"
            )
            instead = INSTEAD_APART.get(self.screen_name)
            text.append(". Instead, run:\n\n  " if instead else ".")
            text.append(instead or "", "bold")
        else:
            text.append(
                f"{self.title_text} is served by the console running the broker.\n\n", "bold"
            )
            text.append(
                "This console is attached to a broker that runs in another process (svc-console"
                " serve, or another console on this home). It shows the approval queue and"
                " decides over the operator socket, and reads the usage history from the ledger;"
                " this screen needs the broker's own process. Open it in the console that started"
                " the broker"
            )
            instead = INSTEAD.get(self.screen_name)
            text.append(f", or use: {instead}" if instead else ".")
        text.append("\n\nPress 1 for the approvals.")
        yield Static(text, id="served-elsewhere", markup=False)
        yield ConsoleFooter()
