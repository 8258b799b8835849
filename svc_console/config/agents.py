"""The `[agents]` table of settings.toml: who may speak the agents' socket, and how agents prove
who they are.

    [agents]
    group = "svc-agents"      # the socket is 0660 with this group: its members may connect
    uids = [1001, 1002]       # or these uids may (the console hangs up on any other)
    enrolment = "strict"      # "strict": registered agents only; "open": any name, flagged
    allow_same_user = false   # accept agents running as the console's own user, at that risk

Enrolment defaults to `strict` against a real service and `open` in the sandbox and the demo, so a
newcomer sees the loop without registering anything first.
"""

from __future__ import annotations

import grp
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from svc_console.config.errors import SettingsError
from svc_console.config.settings_file import read_settings

Enrolment = Literal["strict", "open"]
_KEYS = {"group", "uids", "enrolment", "allow_same_user"}


@dataclass(frozen=True)
class AgentSettings:
    group: str | None = None
    gid: int | None = None
    uids: frozenset[int] = frozenset()
    enrolment: Enrolment | None = None  # None: strict, or open in the sandbox
    allow_same_user: bool = False

    def enrolment_for(self, *, sandbox: bool) -> Enrolment:
        if self.enrolment is not None:
            return self.enrolment
        return "open" if sandbox else "strict"

    @property
    def opened(self) -> bool:
        """Whether users other than the console's own may reach the agents' socket."""
        return self.gid is not None or bool(self.uids)


def agent_settings(path: Path) -> AgentSettings:
    """The `[agents]` table, checked: an unknown key, a group that does not exist or a uid that is
    not a number is an error, never a socket opened wider than meant."""
    table = read_settings(path).get("agents", {})
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: [agents] must be a table")
    unknown = set(table) - _KEYS
    if unknown:
        raise SettingsError(
            f"{path}: [agents] takes only {', '.join(sorted(_KEYS))}; unknown: "
            + ", ".join(sorted(unknown))
        )
    group, gid = table.get("group"), None
    if group is not None:
        if not isinstance(group, str) or not group:
            raise SettingsError(f"{path}: [agents] group must be a group's name")
        try:
            gid = grp.getgrnam(group).gr_gid
        except KeyError:
            raise SettingsError(f"{path}: [agents] group {group!r} does not exist") from None
    uids = table.get("uids", [])
    if not isinstance(uids, list) or not all(
        isinstance(uid, int) and not isinstance(uid, bool) and uid >= 0 for uid in uids
    ):
        raise SettingsError(f"{path}: [agents] uids must be a list of user ids, [1001, 1002]")
    enrolment = table.get("enrolment")
    if enrolment not in (None, "strict", "open"):
        raise SettingsError(f'{path}: [agents] enrolment must be "strict" or "open"')
    allow_same_user = table.get("allow_same_user", False)
    if not isinstance(allow_same_user, bool):
        raise SettingsError(f"{path}: [agents] allow_same_user must be true or false")
    return AgentSettings(group, gid, frozenset(uids), enrolment, allow_same_user)
