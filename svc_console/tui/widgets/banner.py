"""The banners an operator must not miss: SANDBOX (the embedded sandbox is not the real market),
agents of the operator's own user accepted (they can read every file the operator can), and
POLICY ERROR (the policy files have errors: the last valid version stays in force and
auto-approval is suspended until they are fixed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.message import Message
from textual.widgets import Static

from svc_console.core.sanitize import inert_line

SAME_USER = "⚠ agents running as your own user are accepted: they can read all your files"
# The banner's parts, long and short: the short ones keep the address on an 80-column terminal.
SANDBOX_WORDS = ("SANDBOX · no real money moves", "SANDBOX · no real money")
SAME_USER_WORDS = ("⚠ agents of your own user accepted", "⚠ own-user agents accepted")


class SandboxBanner(Static):
    """A docked, high-contrast line saying that no real money moves and where the sandbox is,
    and, when agents of the operator's own user are accepted (always, in open enrolment), that
    too: one line, the address last, in shorter words where the long ones would cut it."""

    def __init__(self, base_url: str, *, same_user: bool = False, id: str | None = None) -> None:
        # The address is ours (a loopback port), but it is shown as plain text all the same.
        self.labels = [
            Text(" · ".join(parts), no_wrap=True, overflow="ellipsis")
            for parts in (
                [sandbox, *([warning] if same_user else []), inert_line(base_url, 60)]
                for sandbox, warning in zip(SANDBOX_WORDS, SAME_USER_WORDS, strict=True)
            )
        ]
        super().__init__(self.labels[0], id=id, markup=False)

    def on_resize(self) -> None:
        room = self.content_region.width
        self.update(next((t for t in self.labels if t.cell_len <= room), self.labels[-1]))


class SameUserBanner(Static):
    """The same-user warning on its own, where no sandbox banner carries it (a real service
    with `allow_same_user`)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Text(SAME_USER), id=id, markup=False)


def service_banner(market: Any, agent_warning: str | None) -> Static | None:
    """The banner a screen docks at its top for the service it speaks to, if any."""
    if market is not None and market.sandbox:
        return SandboxBanner(
            market.base_url, same_user=agent_warning is not None, id="sandbox-banner"
        )
    if agent_warning is not None:
        return SameUserBanner(id="same-user-banner")
    return None


class PolicyBanner(Static):
    """The POLICY ERROR line: shown while the policy files as saved have errors, with the first
    error (file:line:col) and what stays in force; hidden otherwise. Follows the policy's status
    (`svc_console.policy.live.LivePolicy`) as it changes."""

    DEFAULT_CSS = """
    PolicyBanner {
        width: 100%;
        height: auto;
        padding: 0 1;
        background: $error;
        color: auto 95%;
        text-style: bold;
        display: none;
    }
    PolicyBanner.-shown {
        display: block;
    }
    """

    class Changed(Message):
        def __init__(self, status: Any) -> None:
            super().__init__()
            self.status = status

    def __init__(self, policy: Any, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.policy = policy
        self._unsubscribe: Callable[[], None] | None = None

    def on_mount(self) -> None:
        self._show(self.policy.status)
        # The policy calls back from the broker's tasks: hand the status to the message loop.
        self._unsubscribe = self.policy.subscribe(
            lambda status: self.post_message(self.Changed(status))
        )

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def on_policy_banner_changed(self, message: Changed) -> None:
        self._show(message.status)

    def _show(self, status: Any) -> None:
        text = status.message
        self.set_class(text is not None, "-shown")
        # The error quotes the policy file: shown inert, like any text from outside.
        self.update(Text(inert_line(text or "", 400)))
