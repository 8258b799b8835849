"""Operator accounts: each operator of a team console a name and a token of their own, so that
every decision names who made it and a two-person rule can tell two operators apart.

`svc-console operators` writes this file (`operators.json`, owner-only). Unlike an agent's token,
an operator's is kept only as a slow hash (`slow_hash`): it is what an agent running as the
operator's user, which can read every file, must not be able to learn or guess.

A running console pins the accounts it started with (`pin`), as it pins the passphrase: an
account written into the file later (by hand, or by a same-user agent) counts only from the
console's next start. A removal counts at once: the pinned account must still be in the file,
with the same hash.

Once any account exists, decisions over the operator socket need an account's token and the
operator passphrase no longer applies there.

Names are kept and looked up in their canonical form (`core/names.py`), so `Alice` and `alice` are
one operator; a name that looks like another account's (`a1ice`) is refused.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from svc_console.config import named_records, slow_hash
from svc_console.core import names
from svc_console.core.private_files import read_private

TOKEN_PREFIX = "svcop_"
# Slack's user ids: U (or W, in an Enterprise Grid) and capitals or digits.
SLACK_USER = re.compile(r"\A[UW][A-Z0-9]{2,20}\Z")
SLACK_USER_RULE = "must be a Slack user id such as U012AB3CD (the profile's ⋮ menu: Copy member ID)"


class AccountsError(Exception):
    """A change refused (a taken name, an unknown operator) or a file that cannot be read."""


@dataclass(frozen=True)
class Account:
    name: str
    token_hash: str = field(repr=False)
    created_at: float
    added_by: str | None = None  # the operator who added it; None: the first, by the owner
    # Under a two-person rule, the second operator who approved adding it.
    seconded_by: str | None = None
    removed_at: float | None = None
    slack_user: str | None = None  # the Slack user who decides as this operator ([slack])

    @property
    def active(self) -> bool:
        return self.removed_at is None

    @property
    def creators(self) -> frozenset[str]:
        """Who created this account: who added it, and who seconded that."""
        # Folded: a file written before names had one form.
        return frozenset(
            names.fold(name) for name in (self.added_by, self.seconded_by) if name is not None
        )


class OperatorAccounts:
    def __init__(self, path: Path):
        self.path = path

    # -- reading --------------------------------------------------------------------------------

    def accounts(self) -> list[Account]:
        """Every account ever added, removed ones included, by name."""
        return sorted(self._read().values(), key=lambda account: account.name)

    def any(self) -> bool:
        return any(account.active for account in self._read().values())

    def removed(self, name: str) -> bool:
        """Whether `name` had an account that was removed since (an unreadable file: as if so,
        failing closed)."""
        try:
            account = self._read().get(names.fold(name))
        except AccountsError:
            return True
        return account is not None and not account.active

    def authenticate(self, name: str, token: str) -> Account | None:
        """The active account `name` whose token `token` is; None for an unknown name or a
        wrong token alike. Slow by design (a scrypt): call it off the event loop."""
        account = self._read().get(names.fold(name))
        if account is None or not account.active:
            # The same work as a real check, so that the time taken says nothing of the name.
            slow_hash.matches(_decoy(), token)
            return None
        return account if _matches(account, token, self.path) else None

    def pin(self) -> PinnedAccounts:
        """The accounts as they are now, for a console's whole run."""
        return PinnedAccounts(self, {a.name: a for a in self.accounts() if a.active})

    def slack_operator(self, user: str) -> Account | None:
        """The active account the Slack user `user` is linked to, if any."""
        return _linked(self._read().values(), user)

    def _read(self) -> dict[str, Account]:
        try:
            data = json.loads(read_private(self.path))
        except FileNotFoundError:
            return {}
        except (ValueError, UnicodeDecodeError) as exc:
            raise AccountsError(
                f"{self.path} is not a valid operator accounts file: {exc}"
            ) from None
        accounts: dict[str, Account] = {}
        for written, fields in data.get("operators", {}).items():
            # A file written before names had one form: each name read in it.
            name = names.fold(written)
            if name in accounts:
                raise AccountsError(f"{self.path} holds operator {name} twice: keep one")
            accounts[name] = Account(name=name, **fields)
        return accounts

    # -- changing -------------------------------------------------------------------------------

    def add(self, name: str, added_by: str | None = None, seconded_by: str | None = None) -> str:
        """Add `name` (again, if it was removed) and return its token, the only time it is
        ever shown. `added_by` and `seconded_by` are kept: who created it (`creators`)."""
        name = canonical_name(name)
        added_by, seconded_by = (
            names.fold(who) if who is not None else None for who in (added_by, seconded_by)
        )
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        hashed = slow_hash.encode(token)
        with self._changing() as accounts:
            existing = accounts.get(name)
            if existing is not None and existing.active:
                raise AccountsError(f"operator {name} already has an account")
            alike = next((held for held in accounts if names.look_alike(held, name)), None)
            if alike is not None:
                raise AccountsError(
                    f"operator name {name} looks like operator {alike} (Unicode confusables):"
                    " choose another name"
                )
            accounts[name] = Account(
                name, hashed, time.time(), added_by=added_by, seconded_by=seconded_by
            )
        return token

    def remove(self, name: str) -> Account:
        """End `name`'s account: its token stops working at once, in a running console too.
        The record stays, so the decisions it made still name someone this file knows."""
        name = names.fold(name)
        with self._changing() as accounts:
            account = accounts.get(name)
            if account is None or not account.active:
                raise AccountsError(f"no operator account {name[:64]!r}")
            accounts[name] = replace(account, removed_at=time.time())
        return accounts[name]

    def link_slack(self, name: str, user: str) -> Account:
        """Let the Slack user `user` (an id such as U012AB3CD) decide as operator `name`; one
        Slack user decides as one operator only."""
        if not SLACK_USER.match(user):
            raise AccountsError(f"Slack user id {user[:64]!r} {SLACK_USER_RULE}")
        name = names.fold(name)
        with self._changing() as accounts:
            account = accounts.get(name)
            if account is None or not account.active:
                raise AccountsError(f"no operator account {name[:64]!r}")
            other = _linked((a for a in accounts.values() if a.name != name), user)
            if other is not None:
                raise AccountsError(f"Slack user {user} is already linked to operator {other.name}")
            accounts[name] = replace(account, slack_user=user)
        return accounts[name]

    def _changing(self) -> contextlib.AbstractContextManager[dict[str, Account]]:
        return named_records.changing(self.path, "operators", self._read)


class PinnedAccounts:
    """The accounts a console started with, less any removed since."""

    def __init__(self, live: OperatorAccounts, pinned: dict[str, Account]):
        self._live, self._pinned = live, pinned

    def any(self) -> bool:
        return bool(self._pinned)

    def names(self) -> list[str]:
        return sorted(self._pinned)

    @property
    def live(self) -> OperatorAccounts:
        """The file itself, for adding an account (it counts from the next start)."""
        return self._live

    def creators(self, name: str) -> frozenset[str]:
        """Who created the account `name` as the console pinned it; nobody for a name that is
        no pinned account (the TUI's own operator without accounts)."""
        pinned = self._pinned.get(names.fold(name))
        return pinned.creators if pinned is not None else frozenset()

    def authenticate(self, name: str, token: str) -> Account | None:
        name = names.fold(name)
        pinned = self._pinned.get(name)
        if pinned is None:
            slow_hash.matches(_decoy(), token)
            return None
        try:
            now = self._live._read().get(name)
        except AccountsError:
            now = None  # a file made unreadable since: fail closed
        if now is None or not now.active or now.token_hash != pinned.token_hash:
            slow_hash.matches(_decoy(), token)
            return None
        return pinned if _matches(pinned, token, self._live.path) else None

    def slack_operator(self, user: str) -> Account | None:
        """The account the Slack user `user` decides as: linked when the console started, and
        still active and linked alike in the file now (a removal or an unlinking counts at
        once, a link made since from the next start)."""
        pinned = _linked(self._pinned.values(), user)
        if pinned is None:
            return None
        try:
            now = self._live._read().get(pinned.name)
        except AccountsError:
            return None  # a file made unreadable since: fail closed
        if now is None or not now.active or now.token_hash != pinned.token_hash:
            return None
        return pinned if now.slack_user == pinned.slack_user else None


def _linked(accounts: Iterable[Account], user: str) -> Account | None:
    return next((a for a in accounts if a.active and a.slack_user == user), None)


def canonical_name(name: str) -> str:
    """`name` as accounts keep it; AccountsError when it is no name."""
    try:
        return names.canonical(name)
    except ValueError:
        raise AccountsError(f"operator name {name[:64]!r} {names.AGENT_NAME_RULE}") from None


def _matches(account: Account, token: str, path: Path) -> bool:
    try:
        return slow_hash.matches(account.token_hash, token)
    except ValueError:
        raise AccountsError(
            f"{path}: operator {account.name}'s entry holds no token hash; remove the account"
            " and add it again"
        ) from None


@functools.cache
def _decoy() -> str:
    """A hash no token matches, checked when there is no account to check, to take as long."""
    return slow_hash.encode(secrets.token_urlsafe(32))
