"""What `service install` and `service uninstall` do, step by step, as data: `--dry-run` prints
the steps, the command carries them out in order (`cli/service.py`), so what is printed is what
is done. Nothing here touches the machine."""

from __future__ import annotations

from dataclasses import dataclass

from svc_console.services.service_moves import Move
from svc_console.services.service_unit import ServiceLayout

# What each kind of step does, carried out by the command:
# user: create the system user; folder: the service's home; move: one Move;
# settings: open the sockets to the operator; verify: the ledgers' chains; unit: write it;
# start / stop: systemctl; unsettings: close the sockets again; remove: the unit file.
KINDS = (
    "user",
    "folder",
    "stop",
    "remove",
    "move",
    "settings",
    "unsettings",
    "verify",
    "unit",
    "start",
)


@dataclass(frozen=True)
class Step:
    kind: str
    says: str
    move: Move | None = None


@dataclass(frozen=True)
class Operator:
    """Who the console is installed for: their uid and gid, and optionally the group whose
    members' agents may use the agents' socket."""

    name: str
    uid: int
    gid: int
    agents_group: str | None = None

    @property
    def agents_access(self) -> str:
        if self.agents_group is not None:
            return f'[agents] group = "{self.agents_group}"'
        return f"[agents] uids = [{self.uid}]"


def install_plan(
    layout: ServiceLayout, operator: Operator, moves: list[Move], *, user_exists: bool
) -> list[Step]:
    home = layout.home
    steps = []
    if not user_exists:
        steps.append(
            Step("user", f"create the system user {layout.user} (home {home}, no login shell)")
        )
    steps.append(Step("folder", f"create {home}, owned by {layout.user}, mode 0700"))
    steps += [Step("move", move.says(), move) for move in moves]
    if any(m.target.suffix == ".db" for m in moves):
        steps.append(Step("verify", f"verify the audit chain of each ledger moved into {home}"))
    steps.append(
        Step(
            "settings",
            f"set {operator.agents_access} and [operator] uids = [{operator.uid}] in"
            f" {home / 'settings.toml'}: {operator.name}'s agents may ask, {operator.name} may"
            " decide with an operator credential",
        )
    )
    steps.append(Step("unit", f"write {layout.unit_path}"))
    steps.append(
        Step("start", f"systemctl daemon-reload, then enable and start {layout.unit_path.name}")
    )
    return steps


def uninstall_plan(
    layout: ServiceLayout, operator: Operator, moves: list[Move], *, systemd: bool = True
) -> list[Step]:
    """`systemd=False`: systemd no longer runs here (the machine's init changed, or a container
    copied from one), so nothing runs under the unit to stop: it is removed, and the files come
    back all the same (`service uninstall` first checks that no broker serves them)."""
    home = layout.home
    unit = layout.unit_path
    steps = (
        [
            Step("stop", f"systemctl disable --now {unit.name}"),
            Step("remove", f"remove {unit}, then systemctl daemon-reload"),
        ]
        if systemd
        else [Step("remove", f"remove {unit} (systemd is not running: nothing to stop)")]
    )
    steps += [
        Step(
            "unsettings",
            f"remove [operator] uids and [agents] uids = [{operator.uid}] from"
            f" {home / 'settings.toml'}",
        ),
    ]
    steps += [Step("move", move.says(), move) for move in moves]
    if any(m.target.suffix == ".db" for m in moves):
        steps.append(Step("verify", "verify the audit chain of each ledger moved back"))
    return steps


def said(steps: list[Step], unit: str | None = None) -> str:
    """The steps as `--dry-run` prints them, numbered; the unit's text after them."""
    lines = [f"{number}. {step.says}" for number, step in enumerate(steps, 1)]
    if unit is not None:
        lines += ["", "the unit:", "", unit.rstrip()]
    return "\n".join(lines) + "\n"
